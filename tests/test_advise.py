"""`qoslab advise` on a small fast case: the answer's invariants (sanity checks
of our own search), the rules of thumb as their sources define them, bad input."""

from __future__ import annotations

import json

import pytest
from qoslab.cli import main

ARGS = [
    "advise",
    "--rate",
    "10mbit",
    "--rtt",
    "20ms",
    "--flows",
    "2",
    "--seeds",
    "2",
    "--duration",
    "6s",
    "--warmup",
    "2s",
]


@pytest.fixture(scope="module")
def advice() -> dict:
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main([*ARGS, "--json"]) == 0
    return json.loads(buf.getvalue())


def test_the_answer_reaches_the_goal_and_nothing_smaller_probed_does_above_a_failure(
    advice,
) -> None:
    """Sanity check of the search: the answer passes on every seed, the largest
    failing probe is below it and within the search's 10 % resolution (or the
    answer is the floor), and every probe above the answer passes."""
    target = advice["target_goodput_bps"]
    assert target == pytest.approx(0.95 * 10e6)
    for kind, key in (("police", "bc_bytes"), ("shape", "limit_bytes")):
        ans = advice[kind]
        assert ans is not None, kind
        assert ans["goodput_bps_min"] >= target
        curve = advice["curves"][kind]
        fails = [p["bytes"] for p in curve if p["goodput_bps_min"] < target]
        assert fails and max(fails) < ans[key]
        assert ans[key] / max(fails) <= 1.1 + 1e-9
        assert all(p["goodput_bps_min"] >= target for p in curve if p["bytes"] > ans[key])
        # checked above the answer (the search's defence against non-monotonicity)
        assert any(p["bytes"] >= 1.2 * ans[key] for p in curve)


def test_rules_of_thumb_are_the_sources_values(advice) -> None:
    rules = {r["rule"]: r for r in advice["rules_of_thumb"]}
    assert rules["Cisco police default: Bc = CIR/32"]["bytes"] == 10_000_000 // 32
    assert rules["Juniper: burst = 5 ms x line rate"]["bytes"] == 1_000_000_000 * 5 // 8000
    assert rules["Juniper: burst = 10 x MTU"]["bytes"] == 15_000
    assert rules["burst = RTT x rate (BDP)"]["bytes"] == 25_000
    assert rules["shaper queue = BDP"]["bytes"] == 25_000
    for r in rules.values():
        assert r["meets_goal"] == (r["goodput_bps_min"] >= advice["target_goodput_bps"])
    assert advice["verdict"] in ("police", "shape")
    # Physical sanity: no configuration carries more than the link at the rate.
    ceiling = advice["reference_goodput_bps"]
    assert 0.9 * 10e6 < ceiling <= 10e6
    for r in rules.values():
        assert r["goodput_bps_max"] <= ceiling * 1.02


def test_text_output_and_figure(capsys, tmp_path) -> None:
    rc = main([*ARGS, "--seeds", "1", "--out", str(tmp_path / "adv")])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "Police: the smallest Bc reaching the goal is" in out
    assert "Verdict:" in out and "Cisco police default" in out
    assert (tmp_path / "adv" / "advise.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((tmp_path / "adv" / "advise.json").read_text())["flows"] == 2


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--goal", "1.5"], "--goal: a fraction"),
        (["--rtt", "1ms"], "--rtt: at least 2ms"),
        (["--rate", "fast"], "--rate: expected a rate"),
        (["--cc", "cubik"], "cc: unknown value 'cubik'"),
        (["--warmup", "9s"], "--warmup must be shorter"),
    ],
)
def test_bad_input_is_one_line(capsys, extra: list[str], message: str) -> None:
    rc = main([*ARGS, *extra])
    _, err = capsys.readouterr()
    assert rc == 2 and message in err and err.count("\n") == 1, err
