"""`qoslab run`'s output: the table without pandas, iperf3's -J layout,
[SUM] per direction, totals-only mode, effective parameters and unit
warnings, policy-tree classes, '-' for stdin/stdout, | head, and the
notebook API (lazy DataFrames, one column naming, plot, _repr_html_)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import qoslab
import tomllib
from qoslab import cli
from qoslab.results import SimulationResult

ROOT = Path(__file__).resolve().parents[1]
IPERF3 = ROOT / "tests" / "data" / "iperf3"
ISR = ROOT / "scenarios" / "isr4000-police.toml"
HEAVY = ("pandas", "matplotlib", "pyarrow", "duckdb")

#: Two flows each way through a 10 Mbit/s policer, 2 s: upload s0->d0 and a
#: download d0->s0 (a UDP stream sent by the server).
BIDIR = """
[scenario]
name = "bidir"
duration = "2s"
[topology]
access = { rate = "100mbit", delay = "1ms" }
bottleneck = { rate = "100mbit", delay = "1ms" }
[policy.bottleneck.egress]
police = { cir = "10mbit", bc = "20000B" }
[[traffic]]
kind = "tcp-bulk"
flows = 2
label = "up"
[[traffic]]
kind = "udp"
from = "d0"
to = "s0"
rate = "2mbit"
label = "down"
[record]
interval = "100ms"
series = ["goodput", "rtt", "cwnd"]
"""


def _qoslab(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "qoslab.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert cli.main(["run", *args]) == 0
    return capsys.readouterr().out


# --- 1. the table and JSON paths do not import pandas --------------------------


@pytest.mark.parametrize("fmt", [[], ["--json"], ["--format", "iperf3"], ["--summary"]])
def test_run_prints_without_pandas(fmt: list[str]) -> None:
    code = f"""
        import contextlib, io, json, sys
        from qoslab.cli import main
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert main(["run", {str(ISR)!r}, *{fmt!r}]) == 0
        assert len(out.getvalue()) > 200
        print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))
    """
    p = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=ROOT
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout.strip().splitlines()[-1]) == []


def test_dataframes_are_built_on_first_access() -> None:
    r = qoslab.simulate(ISR)
    assert "flows" not in vars(r) and "goodput" not in vars(r)
    assert len(r.goodput) > 0
    assert "goodput" in vars(r) and "flows" not in vars(r)


# --- 2. iperf3 -J -----------------------------------------------------------


def _shape(obj: Any) -> Any:
    return {k: _shape(v) for k, v in obj.items()} if isinstance(obj, dict) else None


def _keys_within(ours: dict[str, Any], real: dict[str, Any], where: str) -> None:
    extra = set(ours) - set(real)
    assert not extra, f"{where}: keys iperf3 3.12 does not write: {sorted(extra)}"


def test_iperf3_json_has_iperf3s_keys(capsys: pytest.CaptureFixture[str]) -> None:
    real = json.loads((IPERF3 / "iperf3-3.12-tcp.json").read_text())
    ours = json.loads(_run(capsys, str(ISR), "--format", "iperf3"))
    assert list(ours) == ["start", "intervals", "end"]
    _keys_within(ours["start"], real["start"], "start")
    _keys_within(ours["start"]["test_start"], real["start"]["test_start"], "test_start")
    for k in ("connected", "version", "timestamp", "test_start"):
        assert k in ours["start"]
    assert ours["start"]["test_start"]["num_streams"] == 4
    assert len(ours["intervals"]) == 20  # one per second, as iperf3 -i 1
    iv, riv = ours["intervals"][3], real["intervals"][0]
    assert len(iv["streams"]) == 4
    for st in iv["streams"]:
        _keys_within(st, riv["streams"][0], "intervals.streams")
        assert {"socket", "start", "end", "seconds", "bytes", "bits_per_second"} <= set(st)
        assert {"retransmits", "snd_cwnd", "rtt", "sender"} <= set(st)
    _keys_within(iv["sum"], riv["sum"], "intervals.sum")
    end, rend = ours["end"], real["end"]
    _keys_within(end, rend, "end")
    assert {"streams", "sum_sent", "sum_received"} <= set(end)
    for st in end["streams"]:
        assert set(st) == {"sender", "receiver"}
        _keys_within(st["sender"], rend["streams"][0]["sender"], "end.streams.sender")
        _keys_within(st["receiver"], rend["streams"][0]["receiver"], "end.streams.receiver")
    _keys_within(end["sum_sent"], rend["sum_sent"], "sum_sent")
    # Figures: the run's own (a sanity check of the conversion).
    r = qoslab.simulate(ISR)
    s = r.summary
    assert end["sum_sent"]["retransmits"] == sum(f["retransmits"] for f in s["flows"])
    assert end["sum_received"]["bytes"] == sum(f["bytes"] for f in s["flows"])
    total = sum(i["sum"]["bytes"] for i in ours["intervals"])
    assert total == end["sum_received"]["bytes"]
    assert sum(i["sum"]["retransmits"] for i in ours["intervals"]) == s["flows"][0][
        "retransmits"
    ] + sum(f["retransmits"] for f in s["flows"][1:])


def test_iperf3_json_is_read_by_the_iperf3_package(capsys: pytest.CaptureFixture[str]) -> None:
    """The `iperf3` Python package's TestResult (third-party iperf3 tooling)
    reads our output, and reads the real iperf3 3.12 file the same way."""
    iperf3 = pytest.importorskip("iperf3")
    real = iperf3.TestResult((IPERF3 / "iperf3-3.12-tcp.json").read_text())
    assert real.protocol == "TCP" and real.sent_bytes == 12582912
    ours = iperf3.TestResult(_run(capsys, str(ISR), "--format", "iperf3"))
    assert ours.error is None and ours.protocol == "TCP" and ours.num_streams == 4
    s = qoslab.simulate(ISR).summary
    assert ours.received_bytes == sum(f["bytes"] for f in s["flows"])
    assert ours.retransmits == sum(f["retransmits"] for f in s["flows"])
    assert abs(ours.received_Mbps - 19.5) < 0.1  # the table's [SUM]


def test_iperf3_json_bidir_as_iperf3_bidir(capsys: pytest.CaptureFixture[str]) -> None:
    real = json.loads((IPERF3 / "iperf3-3.12-bidir.json").read_text())
    ours = json.loads(_run(capsys, BIDIR, "--format", "iperf3"))
    assert set(ours["end"]) == set(real["end"]) - {
        "sender_tcp_congestion",
        "receiver_tcp_congestion",
    }
    assert set(ours["intervals"][0]) == set(real["intervals"][0])  # sum_bidir_reverse
    senders = [
        st["sender"]["sender"] if "sender" in st else st["udp"]["sender"]
        for st in ours["end"]["streams"]
    ]
    assert senders == [True, True, False]
    assert ours["end"]["sum_sent_bidir_reverse"]["sender"] is False
    assert ours["end"]["sum_sent"]["sender"] is True


# --- 3. [SUM] per direction, totals-only, width, labels -----------------------


def test_bidir_table_has_roles_and_a_sum_per_direction(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _run(capsys, BIDIR)
    assert "[ ID][Role] Interval" in out
    assert "[SUM][TX-C]   0.00-2.00" in out and "[SUM][RX-C]   0.00-2.00" in out
    assert "[  2][RX-C]" in out and "[  0][TX-C]" in out
    s = qoslab.simulate(BIDIR).summary
    assert [f["direction"] for f in s["flows"]] == ["upload", "upload", "download"]


def test_many_flows_print_totals_only(capsys: pytest.CaptureFixture[str]) -> None:
    doc = tomllib.loads(BIDIR)
    doc["traffic"][0]["flows"] = 20
    doc["scenario"]["duration"] = "1s"
    text = "\n".join(_toml_lines(doc))
    out = _run(capsys, text)
    lines = out.splitlines()
    assert "21 flows: totals per direction and traffic label" in out
    assert len(lines) < 25, out
    assert not any(ln.startswith("[  7]") for ln in lines)
    grp = [ln for ln in lines if "(20 flows)" in ln or "(1 flows)" in ln]
    assert not grp or all("GRP" in ln for ln in grp)
    full = _run(capsys, text, "--per-flow")
    assert len(full.splitlines()) > 40 and "[ 19][TX-C]" in full


def _toml_lines(doc: dict[str, Any]) -> list[str]:
    import tomli_w

    return tomli_w.dumps(doc).splitlines()


def test_labels_group_in_totals(capsys: pytest.CaptureFixture[str]) -> None:
    doc = tomllib.loads(BIDIR)
    doc["traffic"].append({"kind": "tcp-bulk", "flows": 2, "label": "other"})
    out = _run(capsys, "\n".join(_toml_lines(doc)), "--summary")
    assert "[GRP][TX-C]" in out and "up (2 flows)" in out and "other (2 flows)" in out


def test_rows_are_cut_to_the_width() -> None:
    r = qoslab.simulate(ISR)
    lines = r.table(width=60).splitlines()
    assert max(len(ln) for ln in lines) == 60
    assert any(ln.endswith("…") for ln in lines)


# --- 4/5. effective parameters, unit warnings, classes ------------------------


def test_header_shows_effective_rate_and_warns_about_bps(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = BIDIR.replace('cir = "10mbit"', 'cir = "5Mbps"')
    out = _run(capsys, text)
    head = out.split("[ ID]")[0]
    assert "cir=40mbit" in head  # tc's megabytes: 5 MByte/s = 40 Mbit/s
    assert "bc=20000B" in head
    assert '<string>:9: cir = "5Mbps" is tc\'s bytes per second: 40.0 Mbits/sec' in head
    assert 'write "5Mbit"' in head
    # In JSON the warning goes to stderr, the JSON stays clean.
    assert cli.main(["run", text, "--json"]) == 0
    o, e = capsys.readouterr()
    json.loads(o)
    assert "qoslab: warning: " in e and "5Mbps" in e
    assert "warning" not in _run(capsys, BIDIR).split("[ ID]")[0]


def test_tree_classes_in_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    doc = tomllib.loads((ROOT / "scenarios" / "example.toml").read_text(encoding="utf-8"))
    doc["scenario"]["duration"] = "1s"
    policy = tomllib.loads((ROOT / "examples" / "htb-two-classes.toml").read_text("utf-8"))
    doc["policy"] = {"bottleneck": {"egress": policy}}
    text = "\n".join(_toml_lines(doc))
    out = _run(capsys, text)
    assert "r1->r2 egress classes" in out
    rows = {ln.split()[0]: ln for ln in out.split("r1->r2 egress classes")[1].splitlines()[2:]}
    assert {"root", "1", "10", "20"} <= set(rows), rows
    assert "class id=10 parent=1" in out.split("[ ID]")[0]
    s = json.loads(_run(capsys, text, "--json"))
    classes = {c["name"]: c for c in s["policies"][0]["classes"]}
    assert classes["10"]["params"]["rate"] and classes["20"]["params"]["rate"]
    assert classes["10"]["params"]["rate"] != classes["20"]["params"]["rate"]
    # Leaves' throughput adds up to the root's (what left the tree).
    leaves = [c for c in classes.values() if c["name"] in ("10", "20")]
    assert abs(sum(c["throughput_bps"] for c in leaves) - classes["root"]["throughput_bps"]) < 1
    assert classes["root"]["throughput_bps"] > 0


def test_r2q_quantum_warning_in_header(capsys: pytest.CaptureFixture[str]) -> None:
    doc = tomllib.loads((ROOT / "scenarios" / "example.toml").read_text(encoding="utf-8"))
    doc["scenario"]["duration"] = "1s"
    # 1 Gbit/s / r2q 10 = 12.5 MB quantum: Linux clamps it and warns (sch_htb.c).
    doc["policy"] = {
        "bottleneck": {
            "egress": {
                "htb": {"default": "1"},
                "class": [{"id": "1", "rate": "1gbit"}],
            }
        }
    }
    out = _run(capsys, "\n".join(_toml_lines(doc)))
    head = out.split("[ ID]")[0]
    assert "  warning: " in head and "quantum" in head, head
    # Once: the tree's own row, not again with the policy's path in front.
    assert head.count("quantum of class") == 1, head


# --- 6. Unix conventions --------------------------------------------------------


def test_scenario_from_stdin_and_report_to_stdout() -> None:
    p = _qoslab("run", "-", "--summary", stdin=ISR.read_text())
    assert p.returncode == 0, p.stderr
    assert "[SUM]   0.00-20.00" in p.stdout
    bad = _qoslab("run", "-", stdin="[scenario]\nduration = 3\n")
    assert bad.returncode == 2 and bad.stderr.startswith("qoslab: error: <stdin>:2")


def test_meter_reads_stdin_and_writes_stdout() -> None:
    trace = (ROOT / "examples" / "trace.csv").read_text()
    p = _qoslab(
        "meter",
        "srtcm",
        "--cir",
        "1mbit",
        "--cbs",
        "3000B",
        "--ebs",
        "6000B",
        "--input",
        "-",
        "--output",
        "-",
        stdin=trace,
    )
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].endswith(",color,action")
    assert len(lines) == len(trace.strip().splitlines())  # the CSV and nothing else


def test_capture_to_stdout_is_a_pcap(tmp_path: Path) -> None:
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "qoslab.cli",
            "run",
            str(ROOT / "scenarios" / "example.toml"),
            "--capture",
            "r1->r2=-",
        ],
        capture_output=True,
        timeout=300,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1")  # pcap, nothing else


def test_two_outputs_on_stdout_are_refused() -> None:
    p = _qoslab("run", str(ISR), "--capture", "r1->r2=-", "--report", "-")
    assert p.returncode == 2 and "both want stdout" in p.stderr


def test_head_closes_the_pipe_without_traceback() -> None:
    p = subprocess.run(
        f"{sys.executable} -m qoslab.cli run {ISR} --per-flow | head -3",
        shell=True,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert p.returncode == 0
    assert len(p.stdout.splitlines()) == 3
    assert "Traceback" not in p.stderr and "Broken pipe" not in p.stderr, p.stderr


def test_out_directory_has_normal_permissions(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        out = tmp_path / "a" / "b"
        assert cli.main(["run", str(ISR), "--out", str(out), "--quiet"]) == 0
    finally:
        os.umask(old)
    assert (out.stat().st_mode & 0o777) == 0o755
    assert ((out / "results.json").stat().st_mode & 0o777) == 0o644
    assert (out.parent.stat().st_mode & 0o777) == 0o755


# --- 7. notebook API and one naming ---------------------------------------------


def test_one_column_naming_across_json_dataframes_and_files(tmp_path: Path) -> None:
    r = qoslab.simulate(ISR)
    flat = set(r.flows.columns)
    for f in r.summary["flows"]:
        for k, v in f.items():
            if isinstance(v, dict):
                assert {f"{k}.{sub}" for sub in v} <= flat
            elif k != "chunks":
                assert k in flat
    assert "rtt" not in flat and "bytes" in flat  # README's names
    pol = set(r.policies.columns)
    assert {"drops.packets", "colors.red.bytes", "params.cir", "max_queue_packets"} <= pol
    cli.main(["run", str(ISR), "--out", str(tmp_path / "o"), "--quiet"])
    import pandas as pd

    for name, df in r.series().items():
        assert list(pd.read_csv(tmp_path / "o" / f"{name}.csv").columns) == list(df.columns)
        assert list(pd.read_parquet(tmp_path / "o" / f"{name}.parquet").columns) == list(df.columns)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("<!-- columns -->")[1].split("<!-- /columns -->")[0]
    documented = {w.strip("`") for w in section.split() if w.startswith("`") and w.endswith("`")}
    frames = {"r.flows": flat, "r.policies": pol, "r.goodput": set(r.goodput.columns)}
    for col in documented:
        if "." in col or col.isidentifier():
            assert any(col in cols for cols in frames.values()) or col.startswith("r."), col


def test_notebook_api() -> None:
    r = qoslab.simulate(ISR)
    html = r._repr_html_()
    assert html.count("<tr>") == 1 + 4 + 1 + 1  # head + 4 flows, policy head + row
    assert "isr4000-police-20mbit" in html
    assert "SimulationResult(scenario='isr4000-police-20mbit'" in repr(r)
    from qoslab import plots

    assert qoslab.plots is plots
    fig = r.plot("io_graph")
    assert fig is not None and len(fig.axes) >= 1
    figs = r.plot()
    assert "io_graph" in figs or len(figs) > 0
    with pytest.raises(ValueError, match="unknown figure"):
        r.plot("nope")


def test_trace_results_as_dataframes() -> None:
    import numpy as np

    t = np.arange(0, 10_000_000, 1_000_000, dtype=np.uint64)
    s = np.full(10, 1500, dtype=np.uint32)
    pr = qoslab.police("srtcm", t, s, cir="1mbit", cbs="3000B", ebs="3000B")
    df = pr.to_frame()
    assert list(df.columns) == ["time_ns", "size_bytes", "color", "action"]
    assert len(df) == 10 and set(df["color"]) <= {"green", "yellow", "red"}
    sr = qoslab.shape("tbf", t, s, rate="1mbit", burst="3000B", limit="30000B")
    df = sr.to_frame()
    assert list(df.columns) == ["time_ns", "size_bytes", "departure_ns", "dropped"]
    assert df["dropped"].dtype == bool


def test_result_roundtrip_fields() -> None:
    r = SimulationResult(qoslab.simulate(ISR).raw)
    assert r.summary["flows"][0]["direction"] == "upload"


def test_iperf3_json_udp_as_iperf3_udp(capsys: pytest.CaptureFixture[str]) -> None:
    """A UDP run: iperf3's UDP keys (end.sum, udp blocks with packets and
    lost_packets), read by the iperf3 package as a UDP test."""
    iperf3 = pytest.importorskip("iperf3")
    text = BIDIR.split("[[traffic]]")[0] + '[[traffic]]\nkind = "udp"\nrate = "15mbit"\n'
    out = _run(capsys, text, "--format", "iperf3")
    real = json.loads((IPERF3 / "iperf3-3.12-udp.json").read_text())
    ours = json.loads(out)
    assert ours["start"]["test_start"]["protocol"] == "UDP"
    _keys_within(ours["end"], real["end"], "end")
    assert set(ours["end"]["streams"][0]) == {"udp"}
    _keys_within(ours["end"]["streams"][0]["udp"], real["end"]["streams"][0]["udp"], "udp")
    t = iperf3.TestResult(out)
    f = qoslab.simulate(text).summary["flows"][0]
    assert t.protocol == "UDP" and t.packets == f["packets_sent"]
    assert t.lost_packets == f["packets_lost"] > 0  # 15 Mbit/s into a 10 Mbit/s policer
    assert abs(t.lost_percent - 100 * f["packets_lost"] / f["packets_sent"]) < 1e-9
