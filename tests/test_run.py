"""``qoslab run`` and ``qoslab.simulate``: exit codes, the iperf3-style table,
the JSON summary, atomic ``--out`` directories, cancellation, and end-to-end
runs of scenarios/example.toml."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import qoslab
from qoslab import results as results_mod
from qoslab.cli import main
from qoslab.results import SimulationResult, write_results
from qoslab.run import fmt_bytes, fmt_rate, render_table
from vizdata import police

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "scenarios" / "example.toml"


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def u64(*v: int) -> np.ndarray:
    return np.array(v, dtype=np.uint64)


def fake_raw() -> dict[str, Any]:
    """A result shaped exactly like ``_core.simulate_toml``'s, for testing the
    Python side without the engine: two TCP flows and a ping, one policer,
    2 s at 500 ms intervals."""
    rtt = {
        "samples": 10,
        "min_ns": 5_000_000,
        "mean_ns": 6.5e6,
        "p50_ns": 6_000_000,
        "p95_ns": 9_000_000,
        "max_ns": 12_000_000,
    }

    def flow(i: int, proto: str, nbytes: int, retr: int) -> dict[str, Any]:
        return {
            "id": i,
            "protocol": proto,
            "label": "",
            "from": "s0",
            "to": "d0",
            "start_ns": 0,
            "end_ns": 2_000_000_000,
            "bytes_delivered": nbytes,
            "goodput_bps": nbytes * 8 / 2.0,
            "packets_sent": 100,
            "retransmits": retr,
            "packets_lost": 0,
            "timeouts": 1,
            "fast_recoveries": 2,
            "rtt": dict(rtt),
        }

    empty = u64()
    return {
        "name": "fake",
        "seed": 1,
        "duration_ns": 2_000_000_000,
        "description": "d",
        "source": "",
        "record_interval_ns": 500_000_000,
        "recorded": ["goodput", "ping"],
        "sum_goodput_bps": 5e6,
        "jain_fairness": 0.9,
        "events": 1234,
        "flows": [flow(0, "tcp", 750_000, 3), flow(1, "tcp", 500_000, 1), flow(2, "ping", 0, 0)],
        "policies": [
            {
                "name": "r1->r2 egress",
                "kind": "police",
                "packets_in": 1000,
                "bytes_in": 1_500_000,
                "packets_dropped": 100,
                "bytes_dropped": 150_000,
                "color_packets": [900, 0, 100],
                "color_bytes": [1_350_000, 0, 150_000],
                "max_queue_packets": 3,
                "max_queue_bytes": 4500,
                "describe": [("kind", "police"), ("cir", "10000000")],
            }
        ],
        "series": {
            "goodput": {
                "time_ns": u64(*[t * 500_000_000 for t in (1, 1, 2, 2, 3, 3, 4, 4)]),
                "flow": np.array([0, 1] * 4, dtype=np.uint32),
                "bytes": u64(
                    200_000, 100_000, 175_000, 150_000, 200_000, 125_000, 175_000, 125_000
                ),
                "retransmits": u64(1, 0, 0, 1, 2, 0, 0, 0),
            },
            "rtt": {"time_ns": empty, "flow": np.array([], dtype=np.uint32), "rtt_ns": empty},
            "cwnd": {
                "time_ns": empty,
                "flow": np.array([], dtype=np.uint32),
                "cwnd_bytes": empty,
                "ssthresh_bytes": empty,
                "state": np.array([], dtype=np.uint8),
            },
            "queue": {
                "time_ns": empty,
                "policy": np.array([], dtype=np.uint32),
                "packets": empty,
                "bytes": empty,
                "tokens_bytes": np.array([], dtype=np.int64),
            },
            "colors": {
                "time_ns": empty,
                "policy": np.array([], dtype=np.uint32),
                "green_bytes": empty,
                "yellow_bytes": empty,
                "red_bytes": empty,
                "dropped_bytes": empty,
            },
            "ping": {
                "time_ns": u64(100, 200),
                "flow": np.array([2, 2], dtype=np.uint32),
                "seq": np.array([0, 1], dtype=np.uint32),
                "rtt_ns": u64(5_000_000, 6_000_000),
            },
            "segments": {
                "time_ns": empty,
                "flow": np.array([], dtype=np.uint32),
                "seq": empty,
                "len": np.array([], dtype=np.uint32),
                "retransmit": np.array([], dtype=bool),
            },
        },
    }


# --- without the engine --------------------------------------------------------


def test_iperf_units_follow_iperf3() -> None:
    assert fmt_bytes(10.2 * 2**20) == "10.2 MBytes"
    assert fmt_bytes(520 * 2**10) == " 520 KBytes"
    assert fmt_rate(4.28e6) == "4.28 Mbits/sec"
    assert fmt_rate(17.1e6) == "17.1 Mbits/sec"
    assert fmt_rate(841e3) == " 841 Kbits/sec"


def test_result_tables_and_summary() -> None:
    r = SimulationResult(fake_raw())
    assert list(r.flows["id"]) == [0, 1, 2]
    # The DataFrames' columns are results.json's keys, nested ones joined with '.'.
    assert r.flows.loc[0, "rtt_ms.p95"] == 9.0
    assert r.policies.loc[0, "colors.red.packets"] == 100
    assert r.goodput["goodput_bps"].iloc[0] == 200_000 * 8 / 0.5
    assert r.ping["rtt_ms"].tolist() == [5.0, 6.0]
    assert set(r.series()) == {"goodput", "ping"}
    s = r.summary
    assert s["flows"][0]["rtt_ms"] == {
        "min": 5.0,
        "mean": 6.5,
        "p50": 6.0,
        "p95": 9.0,
        "max": 12.0,
        "samples": 10,
        "percentiles": "exact",
    }
    assert s["policies"][0]["drops"] == {"packets": 100, "bytes": 150_000}
    assert s["policies"][0]["colors"]["red"] == {"packets": 100, "bytes": 150_000}
    json.loads(r.to_json())


_TABLE_LINE = re.compile(r"\[\s*(\w+)\]\s+(\S+)\s+sec\s+\S+ \S+\s+\S+ \S+\s+(\d+)")


def _retr(line: str) -> tuple[str, str, int]:
    """(id, interval, Retr) of an iperf3-style table line, ("", "", 0) for others."""
    m = _TABLE_LINE.match(line)
    return (m[1], m[2], int(m[3])) if m else ("", "", 0)


def test_the_table_has_per_second_lines_a_sum_rtt_and_policies() -> None:
    text = render_table(SimulationResult(fake_raw()))
    lines = text.splitlines()
    assert "[ ID] Interval           Transfer     Bitrate         Retr" in lines
    # second 0: flow 0 got 200000 + 175000 bytes = 3.0 Mbit/s
    assert any(ln.startswith("[  0]   0.00-1.00") and "3.00 Mbits/sec" in ln for ln in lines)
    assert any(ln.startswith("[SUM]   1.00-2.00") for ln in lines)
    # Retr per second: flow 0 retransmitted 1 then 2 segments, flow 1 1 then 0.
    retr = {(i, t): n for i, t, n in map(_retr, lines) if t in ("0.00-1.00", "1.00-2.00")}
    assert retr == {
        ("0", "0.00-1.00"): 1,
        ("1", "0.00-1.00"): 1,
        ("SUM", "0.00-1.00"): 2,
        ("0", "1.00-2.00"): 2,
        ("1", "1.00-2.00"): 0,
        ("SUM", "1.00-2.00"): 2,
    }
    final_sum = [ln for ln in lines if ln.startswith("[SUM]   0.00-2.00")]
    assert len(final_sum) == 1 and "5.00 Mbits/sec" in final_sum[0] and final_sum[0].endswith("4")
    assert any(ln.startswith("RTT (ms)") for ln in lines)
    assert any(ln.startswith("r1->r2 egress") and " 10.0" in ln for ln in lines)


def test_interval_retr_of_a_policed_run_adds_up_to_each_flows_total() -> None:
    r = police()
    assert (r.goodput["retransmits"] >= 0).all()
    lines = render_table(r).splitlines()
    header = "[ ID] Interval           Transfer     Bitrate         Retr"
    cut = lines.index(header, lines.index(header) + 1)  # per-second part, then totals
    per_second: dict[str, list[int]] = {}
    for ident, _, n in map(_retr, lines[:cut]):
        if ident:
            per_second.setdefault(ident, []).append(n)
    totals = {i: n for i, _, n in map(_retr, lines[cut:]) if i}
    assert set(per_second) == set(totals) == {"0", "1", "SUM"}
    assert all(len(v) == 2 for v in per_second.values())
    for ident, retr in per_second.items():
        assert sum(retr) == totals[ident]
    assert totals["SUM"] > 0 and totals["SUM"] == totals["0"] + totals["1"]


def test_without_a_usable_goodput_series_only_totals_are_shown() -> None:
    raw = fake_raw()
    raw["record_interval_ns"] = 300_000_000  # does not divide one second
    lines = render_table(SimulationResult(raw)).splitlines()
    assert not any(ln.startswith("[  0]   0.00-1.00") for ln in lines)
    assert any(ln.startswith("[  0]   0.00-2.00") for ln in lines)
    assert lines.count("[ ID] Interval           Transfer     Bitrate         Retr") == 1


def test_out_dir_is_written_whole(tmp_path: Path) -> None:
    r = SimulationResult(fake_raw())
    out = write_results(tmp_path / "res", r, "[scenario]\n")
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        ".qoslab-outputs",
        "goodput.csv",
        "goodput.parquet",
        "ping.csv",
        "ping.parquet",
        "results.json",
        "scenario.toml",
    ]
    assert json.loads((out / "results.json").read_text())["scenario"] == "fake"
    pd.testing.assert_frame_equal(pd.read_parquet(out / "goodput.parquet"), r.goodput)
    assert len(pd.read_csv(out / "goodput.csv")) == 8
    # A second run replaces the first whole; nothing else is left beside it.
    write_results(tmp_path / "res", r, "[scenario]\n# 2\n")
    assert (out / "scenario.toml").read_text().endswith("# 2\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]


@pytest.mark.parametrize("exc", [OSError("disk full"), KeyboardInterrupt()])
def test_a_failure_while_writing_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exc: BaseException
) -> None:
    def boom(*_a: object, **_k: object) -> None:
        raise exc

    monkeypatch.setattr(pd.DataFrame, "to_parquet", boom)
    with pytest.raises(type(exc)):
        write_results(tmp_path / "res", SimulationResult(fake_raw()), "")
    assert list(tmp_path.iterdir()) == []


def test_a_failure_while_replacing_keeps_the_old_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = SimulationResult(fake_raw())
    write_results(tmp_path / "res", r, "old\n")
    monkeypatch.setattr(results_mod.SimulationResult, "to_json", lambda self: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        write_results(tmp_path / "res", r, "new\n")
    assert (tmp_path / "res" / "scenario.toml").read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]


def test_a_foreign_directory_is_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("x")
    with pytest.raises(FileExistsError, match="not a qoslab output"):
        write_results(tmp_path / "mine", SimulationResult(fake_raw()), "")
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["thesis.tex"]


def test_run_help_shows_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "run", "--help")
    assert rc == 0
    assert "qoslab run scenarios/example.toml" in out
    assert "--out DIR" in out


def test_run_bad_scenario_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(EXAMPLE.read_text().replace("flows = 2", "flow = 2"))
    rc, out, err = run(capsys, "run", bad, "--out", tmp_path / "out")
    assert rc == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"qoslab: error: {bad}:")
    assert "traffic[0].flow: unknown key 'flow'" in err and "did you mean 'flows'?" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["run"], "Missing argument 'SCENARIO'"),
        (["run", "x.toml", "--seed", "-1"], "--seed"),
        (["run", "x.toml", "--bogus"], "No such option '--bogus'"),
        (["run", "missing.toml"], "missing.toml"),
    ],
)
def test_run_usage_errors_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    rc, _, err = run(capsys, *argv)
    assert rc == 2
    assert err.startswith("qoslab: error:") and err.count("\n") == 1
    assert fragment in err


# --- with the engine -----------------------------------------------------------


@pytest.fixture(scope="module")
def example() -> SimulationResult:
    return qoslab.simulate(EXAMPLE)


def test_example_runs_with_goodput_below_the_police_rate(example: SimulationResult) -> None:
    s = example.summary
    tcp = [f for f in s["flows"] if f["protocol"] == "tcp"]
    assert len(tcp) == 2
    # At most CIR plus the full bucket (Bc = CIR/32 = 312500 B) over 2 s.
    assert 5e6 < s["sum_goodput_bps"] <= 10e6 + 312_500 * 8 / 2
    assert 0 < s["jain_fairness"] <= 1
    assert len(example.goodput) and len(example.ping)
    assert s["policies"] and s["policies"][0]["packets_in"] > 0


def test_same_seed_same_result_and_seed_override(example: SimulationResult) -> None:
    again = qoslab.simulate(EXAMPLE)
    assert again.summary == example.summary
    pd.testing.assert_frame_equal(again.goodput, example.goodput)
    other = qoslab.simulate(EXAMPLE, seed=2)
    assert other.summary["seed"] == 2


def test_cli_run_prints_the_table_and_writes_out(
    example: SimulationResult, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, out, _ = run(capsys, "run", EXAMPLE, "--out", tmp_path / "o", "--seed", "1")
    assert rc == 0
    assert "[SUM]" in out and "Bitrate" in out
    assert (tmp_path / "o" / "results.json").exists()
    assert (tmp_path / "o" / "goodput.parquet").exists()
    assert "seed = 1" in (tmp_path / "o" / "scenario.toml").read_text()
    rc, out, _ = run(capsys, "run", EXAMPLE, "--json", "--quiet")
    assert rc == 0
    s = json.loads(out)
    assert s == json.loads(example.to_json())
    assert {"goodput_bps", "bytes", "retransmits", "rtt_ms"} <= set(s["flows"][0])


#: The example with UDP in place of TCP: exercises the engine without TCP.
UDP = (
    EXAMPLE.read_text()
    .replace('kind = "tcp-bulk"', 'kind = "udp"\nrate = "8mbit"')
    .replace('profile = "linux"', "")
)


def test_udp_end_to_end_through_the_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    scen = tmp_path / "udp.toml"
    scen.write_text(UDP)
    rc, out, err = run(capsys, "run", scen, "--out", tmp_path / "o")
    assert rc == 0, err
    lines = out.splitlines()
    assert any(ln.startswith("[  0]   0.00-1.00") for ln in lines)
    assert any(ln.startswith("[SUM]   0.00-2.00") for ln in lines)
    assert any(ln.startswith("r1->r2 egress") for ln in lines)
    summary = json.loads((tmp_path / "o" / "results.json").read_text())
    # 2 x 8 Mbit/s offered to a 10 Mbit/s policer.
    assert 8e6 < summary["sum_goodput_bps"] < 12e6
    assert summary["policies"][0]["drops"]["packets"] > 0
    assert (tmp_path / "o" / "goodput.parquet").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o", "udp.toml"]
    again = qoslab.simulate(UDP)
    assert again.summary == summary


#: Long enough that the engine reports progress (every few 100k events).
LONG_UDP = UDP.replace('duration = "2s"', 'duration = "600s"').replace('"8mbit"', '"90mbit"')


def test_a_progress_callback_can_cancel() -> None:
    calls: list[tuple[int, int, int]] = []

    def stop(t: int, d: int, ev: int) -> bool:
        calls.append((t, d, ev))
        return False

    with pytest.raises(qoslab.Cancelled):
        qoslab.simulate(LONG_UDP, progress=stop)
    assert len(calls) == 1 and calls[0][1] == 600_000_000_000
    assert isinstance(qoslab.Cancelled(), KeyboardInterrupt)


def test_an_exception_in_the_callback_propagates() -> None:
    def bad(*_: int) -> None:
        raise RuntimeError("from the callback")

    with pytest.raises(RuntimeError, match="from the callback"):
        qoslab.simulate(LONG_UDP, progress=bad)


def test_cancel_during_a_cli_run_leaves_no_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scen = tmp_path / "long.toml"
    scen.write_text(LONG_UDP)

    class Interrupting:
        enabled = True

        def __init__(self, *_: object, **__: object) -> None:
            pass

        def __call__(self, *_: int) -> bool:
            raise KeyboardInterrupt

        def close(self) -> None:
            pass

    monkeypatch.setattr("qoslab.progress.TimeBar", Interrupting)
    rc, _, err = run(capsys, "run", scen, "--out", tmp_path / "o", "--progress")
    assert rc == 130
    assert err == "qoslab: cancelled\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.toml"]
