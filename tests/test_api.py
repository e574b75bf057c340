"""The vectorised Python API: input conversion, results and errors."""

from __future__ import annotations

import numpy as np
import pytest
import qoslab

MS = 1_000_000
P = {"cir": "8mbit", "cbs": 2000, "ebs": 1000}  # 1000 B/ms


def test_kinds_are_listed_with_descriptions() -> None:
    kinds = qoslab.meter_kinds()
    assert "srtcm" in kinds and "2697" in kinds["srtcm"]
    assert isinstance(qoslab.shaper_kinds(), dict)


@pytest.mark.parametrize(
    "times",
    [
        [0, 0, 0, 0, MS],
        np.array([0, 0, 0, 0, MS], dtype=np.int32),
        np.array([0, 0, 0, 0, MS], dtype=np.uint64),
        np.array([0.0, 0, 0, 0, MS]),
        np.array([0, 0, 0, 0, MS, 7], dtype=np.int64)[:5],
        np.array([[0, 0, 0, 0, MS]] * 2)[:, 0:5][0],
    ],
)
def test_any_integer_input_gives_the_same_colours(times) -> None:
    sizes = [1500, 1000, 500, 1, 1001]
    assert qoslab.color("srtcm", times, sizes, **P).tolist() == [0, 1, 0, 2, 2]


def test_non_contiguous_input_is_accepted() -> None:
    times = np.arange(20, dtype=np.int64)[::2] * MS
    sizes = np.full(20, 100, dtype=np.uint16)[::2]
    assert qoslab.color("srtcm", times, sizes, **P).tolist() == [0] * 10


def test_police_applies_actions_and_counts() -> None:
    r = qoslab.police(
        "srtcm", [0, 0, 0, 0], [1500, 1000, 500, 1], exceed="set-dscp:10", violate="drop", **P
    )
    assert r.colors.dtype == np.uint8 and r.actions.dtype == np.uint8
    assert r.colors.tolist() == [0, 1, 0, 2]
    assert [qoslab.ACTION_NAMES[a] for a in r.actions] == ["transmit", "remark", "transmit", "drop"]
    assert r.summary == {
        "packets": {"green": 2, "yellow": 1, "red": 1},
        "bytes": {"green": 2000, "yellow": 1000, "red": 1},
        "dropped": {"packets": 1, "bytes": 1},
        "remarked": {"packets": 1},
    }


def test_colour_aware_takes_codes_or_names() -> None:
    codes = qoslab.color("srtcm", [0, 0, 0], [10, 10, 10], [1, 2, 0], mode="aware", **P)
    names = qoslab.color(
        "srtcm", [0, 0, 0], [10, 10, 10], ["yellow", "Red", "g"], mode="aware", **P
    )
    assert codes.tolist() == names.tolist() == [1, 2, 0]


def test_numeric_params_are_base_units() -> None:
    as_text = qoslab.describe("srtcm", cir="1mbit", cbs="3000B")
    as_numbers = qoslab.describe("srtcm", cir=1_000_000, cbs=3000.0)
    assert as_text == as_numbers
    assert as_text["ebs"] == "0B", "describe shows derived defaults"
    assert as_text["conform"] == "transmit"


@pytest.mark.parametrize(
    ("times", "sizes", "index", "fragment"),
    [
        ([0, -1], [1, 1], 1, "must not be negative"),
        ([0, 1.5], [1, 1], 1, "whole numbers"),
        ([0, float("nan")], [1, 1], 1, "whole numbers"),
        ([0, 1], [1, 2**32], 1, "at most"),
        ([5, 3], [1, 1], 1, "sorted by time"),
        ([0, 1, 2], [1, 1, 0], 2, "greater than zero"),
    ],
)
def test_bad_traces_raise_trace_error_with_the_index(times, sizes, index, fragment) -> None:
    with pytest.raises(qoslab.TraceError) as e:
        qoslab.color("srtcm", times, sizes, **P)
    assert isinstance(e.value, ValueError)
    assert e.value.index == index
    assert fragment in str(e.value) and fragment in e.value.message


def test_bad_shapes_and_types_are_refused() -> None:
    with pytest.raises(ValueError, match="entries"):
        qoslab.color("srtcm", [0, 1], [1], **P)
    with pytest.raises(qoslab.TraceError, match="dtype"):
        qoslab.color("srtcm", ["a"], [1], **P)
    with pytest.raises(ValueError, match="one-dimensional"):
        qoslab.color("srtcm", [[0]], [[1]], **P)
    with pytest.raises(qoslab.TraceError) as e:
        qoslab.color("srtcm", [0, 0], [1, 1], [0, 3], **P)
    assert e.value.index == 1


@pytest.mark.parametrize(
    ("kind", "params", "param", "fragment"),
    [
        ("srtcn", P, "kind", "did you mean 'srtcm'"),
        ("srtcm", {**P, "cbz": 1}, "cbz", "did you mean 'cbs'"),
        ("srtcm", {**P, "cir": 0}, "cir", ""),
        ("srtcm", {**P, "cir": "1mbitz"}, "cir", "expected a rate"),
        ("srtcm", {"cbs": 1}, "cir", "missing"),
        ("srtcm", {**P, "cir": float("inf")}, "cir", "finite"),
    ],
)
def test_config_errors_name_the_param(kind, params, param, fragment) -> None:
    with pytest.raises(qoslab.ConfigError) as e:
        qoslab.color(kind, [0], [1], **params)
    assert isinstance(e.value, ValueError)
    assert e.value.param == param
    assert fragment in e.value.message
    assert str(e.value).startswith(f"{param}: ")


def test_describe_rejects_unknown_kinds_with_a_hint() -> None:
    with pytest.raises(qoslab.ConfigError, match="did you mean 'srtcm'") as e:
        qoslab.describe("srtcmm")
    assert e.value.param == "kind"


def test_unit_parsers_follow_tc() -> None:
    assert qoslab.parse_rate("20mbit") == 20_000_000
    assert qoslab.parse_rate("1kbps") == 8_000  # tc: kbps = kilobytes/s
    assert qoslab.parse_size("32kb") == 32 * 1024
    assert qoslab.parse_time("50ms") == 50 * MS
    with pytest.raises(qoslab.ConfigError):
        qoslab.parse_rate("fast")


def test_empty_trace() -> None:
    r = qoslab.police("srtcm", [], [], **P)
    assert r.colors.size == 0 and r.summary["packets"]["green"] == 0


def test_shape_returns_int64_departures_and_a_drop_mask() -> None:
    times = np.zeros(40, dtype=np.int64)
    sizes = np.full(40, 1500)
    r = qoslab.shape("tbf", times, sizes, rate="1mbit", burst="3000B", limit="30000B")
    assert r.departure_ns.dtype == np.int64 and r.dropped.dtype == np.bool_
    assert (r.departure_ns[r.dropped] == -1).all()
    assert (r.departure_ns[~r.dropped] >= 0).all()
    assert r.dropped.any() and (~r.dropped).any()
    assert r.summary["sent"]["packets"] == int((~r.dropped).sum())
    assert r.summary["packets"] == 40


def test_shape_with_unknown_kind_is_a_config_error() -> None:
    with pytest.raises(qoslab.ConfigError) as e:
        qoslab.shape("no-such-shaper", [0], [1])
    assert e.value.param == "kind"


def test_the_extension_refuses_wrong_dtypes_without_panicking() -> None:
    from qoslab import _core

    p = {"cir": "1mbit", "cbs": "3000"}
    run = _core.MeterRun("srtcm", p)
    with pytest.raises(TypeError):
        run.push(np.zeros(2, dtype=np.int64), np.ones(2, dtype=np.uint32))
    with pytest.raises(TypeError):
        _core.describe_meter("srtcm", {"cir": 1_000_000, "cbs": "3000"})
    with pytest.raises(qoslab.TraceError) as e:
        run.push(np.zeros(2, dtype=np.uint64), np.ones(3, dtype=np.uint32))
    assert e.value.index == 0
    with pytest.raises(qoslab.TraceError) as e:
        _core.ShapeRun.kind("codel", {"rate": "1mbit"}).push(
            np.zeros(2, dtype=np.uint64), np.ones(3, dtype=np.uint32)
        )


# --- AQM kinds on a trace (behind a link of `rate`) ---------------------------


def test_aqm_kinds_are_listed_and_described() -> None:
    kinds = qoslab.shaper_kinds()
    for kind in ("red", "wred", "rio", "codel", "pie"):
        assert kind in kinds and "rate (required" in kinds[kind], kind
    d = qoslab.describe("codel", rate="10mbit", target="5ms")
    assert d["kind"] == "codel" and d["rate"] == "10mbit" and d["target"] == "5ms"


def test_codel_on_an_overloaded_link_drops_and_keeps_sojourn_near_target() -> None:
    # 10.5 Mbit/s of 1000-byte packets for 10 s into a 10 Mbit/s link.
    n = 13_125
    times = np.arange(n, dtype=np.int64) * 761_905
    r = qoslab.shape("codel", times, np.full(n, 1000), rate="10mbit", target="5ms")
    assert 400 <= r.summary["dropped"]["packets"] <= 900
    late = (~r.dropped) & (times >= 5_000 * MS)
    sojourn = r.departure_ns[late] - times[late]
    assert 5 * MS <= np.median(sojourn) <= 15 * MS
    assert sojourn.max() < 20 * MS
    # The same trace through a drop-tail FIFO of the same limit queues for ~0.5 s.
    fifo = qoslab.shape("pie", times, np.full(n, 1000), rate="10mbit", target="10s")
    assert fifo.summary["delay_ns"]["max"] > 400 * MS


def test_red_drops_nothing_below_min() -> None:
    # Bursts of 20 kB every 50 ms into a 10 Mbit/s link: the queue stays below min.
    times = np.repeat(np.arange(200, dtype=np.int64) * 50 * MS, 20)
    p = {"rate": "10mbit", "limit": "200kb", "min": "30kb", "max": "90kb", "avpkt": 1000}
    r = qoslab.shape("red", times, np.full(times.size, 1000), **p)
    assert not r.dropped.any() and r.summary["sent"]["packets"] == 4000
    # 100 kB bursts: the average (an EWMA of the backlog) passes min, and max.
    big = np.repeat(np.arange(200, dtype=np.int64) * 50 * MS, 100)
    r = qoslab.shape("red", big, np.full(big.size, 1000), **p)
    assert r.dropped.any()


@pytest.mark.parametrize(
    ("kind", "params", "param", "fragment"),
    [
        ("codel", {"target": "5ms"}, "rate", "missing"),
        ("codel", {"rate": 0}, "rate", "greater than zero"),
        ("codel", {"rate": "10mbit", "targett": "5ms"}, "targett", "did you mean 'target'"),
        ("pie", {"rate": "10mbit", "target": "fast"}, "target", ""),
        ("codl", {"rate": "10mbit"}, "kind", "did you mean 'codel'"),
    ],
)
def test_aqm_config_errors_name_the_param(kind, params, param, fragment) -> None:
    with pytest.raises(qoslab.ConfigError) as e:
        qoslab.shape(kind, [0], [1000], **params)
    assert e.value.param == param
    assert fragment in e.value.message
