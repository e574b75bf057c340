"""qoslab.color against the naive exact reference markers in tests/reference.py."""

from __future__ import annotations

import numpy as np
import qoslab
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import srtcm as ref_srtcm
from reference import trtcm as ref_trtcm

gaps = st.one_of(
    st.just(0),
    st.integers(0, 2_000),
    st.integers(0, 5_000_000),
    st.integers(0, 200_000_000),
)
packets = st.lists(st.tuples(gaps, st.integers(1, 1600), st.integers(0, 2)), max_size=120)
rates = st.one_of(
    st.sampled_from([8_000, 64_000, 1_000_000, 8_000_000, 100_000_000]),
    st.integers(1, 200_000_000),
)
depths = st.integers(1, 6000)


def _trace(pkts: list[tuple[int, int, int]]) -> tuple[list[int], list[int], list[int]]:
    times, t = [], 0
    for gap, _, _ in pkts:
        t += gap
        times.append(t)
    return times, [s for _, s, _ in pkts], [c for _, _, c in pkts]


@settings(max_examples=300, deadline=None)
@given(pkts=packets, cir=rates, cbs=depths, ebs=st.integers(0, 6000), aware=st.booleans())
def test_srtcm_matches_the_rfc_2697_reference(pkts, cir, cbs, ebs, aware) -> None:
    times, sizes, colors = _trace(pkts)
    pre = colors if aware else None
    got = qoslab.color(
        "srtcm", times, sizes, pre, cir=cir, cbs=cbs, ebs=ebs, mode="aware" if aware else "blind"
    )
    assert got.tolist() == ref_srtcm(times, sizes, cir, cbs, ebs, pre)


def test_srtcm_reference_agrees_on_a_hand_computed_sequence() -> None:
    # CIR 8 Mbit/s = 1000 B/ms, CBS 2000, EBS 1000 (same as the core's golden test):
    # guards the reference itself, so a shared mistake cannot hide.
    ms = 1_000_000
    times = [0, 0, 0, 0, 1 * ms, 4 * ms]
    sizes = [1500, 1000, 500, 1, 1001, 1000]
    expected = [0, 1, 0, 2, 2, 0]
    assert ref_srtcm(times, sizes, 8_000_000, 2000, 1000) == expected
    assert qoslab.color("srtcm", times, sizes, cir="8mbit", cbs=2000, ebs=1000).tolist() == expected


@settings(max_examples=300, deadline=None)
@given(
    pkts=packets,
    cir=rates,
    extra=rates,
    cbs=depths,
    pbs=depths,
    aware=st.booleans(),
)
def test_trtcm_matches_the_rfc_2698_reference(pkts, cir, extra, cbs, pbs, aware) -> None:
    times, sizes, colors = _trace(pkts)
    pir = cir + extra  # RFC 2698 §1: PIR must be >= CIR
    pre = colors if aware else None
    got = qoslab.color(
        "trtcm",
        times,
        sizes,
        pre,
        cir=cir,
        cbs=cbs,
        pir=pir,
        pbs=pbs,
        mode="aware" if aware else "blind",
    )
    assert got.tolist() == ref_trtcm(times, sizes, cir, cbs, pir, pbs, pre)


def test_trtcm_reference_on_a_hand_computed_sequence() -> None:
    # CIR 8 Mbit/s (1000 B/ms), CBS 1000; PIR 16 Mbit/s (2000 B/ms), PBS 2000.
    ms = 1_000_000
    times = [0, 0, 0, 1 * ms]
    sizes = [1000, 1000, 1, 1500]
    # t=0: green (Tp 1000, Tc 0); yellow (Tp 0); red; +1 ms: Tp 2000, Tc 1000 -> yellow.
    assert ref_trtcm(times, sizes, 8_000_000, 1000, 16_000_000, 2000) == [0, 1, 2, 1]


@settings(max_examples=200, deadline=None)
@given(pkts=packets, cir=rates, cbs=depths, ebs=st.integers(0, 6000))
def test_green_bytes_never_exceed_cbs_plus_cir_t_on_any_window(pkts, cir, cbs, ebs) -> None:
    times, sizes, _ = _trace(pkts)
    colors = qoslab.color("srtcm", times, sizes, cir=cir, cbs=cbs, ebs=ebs)
    t = np.array(times, dtype=object)
    g = [s if c == 0 else 0 for s, c in zip(sizes, colors.tolist(), strict=True)]
    n = len(times)
    for i in range(n):
        green = 0
        for j in range(i, n):
            green += g[j]
            # exact: green ≤ CBS + CIR/8 · (t_j - t_i)/1e9, scaled by 8e9
            assert green * 8 * 10**9 <= cbs * 8 * 10**9 + cir * int(t[j] - t[i])
