"""Captures out of the simulator (issue 11): ``qoslab run --capture`` and the
``[capture]`` table write pcap files that tshark reads without a warning, whose
Wireshark expert info agrees with the run's own counters, and that
``qoslab analyze`` reads back to the same counts and finds the policer in."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from qoslab.cli import main

ROOT = Path(__file__).resolve().parents[1]

#: Two CUBIC flows through a 4 Mbit/s policer with a small bucket: drops,
#: fast retransmissions and RTOs within 3 simulated seconds.
POLICED = """
[scenario]
duration = "3s"
seed = 3
[topology]
senders = 2
receivers = 1
access = { rate = "1gbit", delay = "5ms" }
bottleneck = { rate = "100mbit", delay = "1ms" }
[policy.bottleneck.egress]
police = { cir = "4mbit", bc = "20000B" }
[[traffic]]
kind = "tcp-bulk"
flows = 2
profile = "linux"
[[traffic]]
kind = "ping"
interval = "100ms"
"""

needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


def _run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def policed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    d = tmp_path_factory.mktemp("simcap")
    sc = d / "police.toml"
    sc.write_text(POLICED)
    out = d / "out"
    assert main(["run", str(sc), "--capture", "r1->r2", "--out", str(out), "--quiet"]) == 0
    result = json.loads((out / "results.json").read_text())
    return result, out / "r1-r2.pcap"


def _tshark(pcap: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["tshark", "-n", "-r", str(pcap), *args], capture_output=True, text=True, timeout=120
    )


def _tshark_warnings(stderr: str) -> list[str]:
    # tshark's notice about running as root is not about the file.
    return [x for x in stderr.splitlines() if x.strip() and "Running as user" not in x]


def _per_port(pcap: Path, display_filter: str) -> Counter[int]:
    p = _tshark(pcap, "-Y", display_filter, "-T", "fields", "-e", "tcp.srcport")
    assert p.returncode == 0, p.stderr
    return Counter(int(x) for x in p.stdout.split())


@needs_tshark
def test_tshark_reads_the_capture_without_warnings(policed_run: tuple[dict, Path]) -> None:
    _, pcap = policed_run
    p = _tshark(pcap, "-q", "-z", "expert,warn")
    assert p.returncode == 0 and not _tshark_warnings(p.stderr), p.stderr
    # No malformed frame, no bad checksum, nothing at error level.
    p = _tshark(
        pcap,
        "-o",
        "tcp.check_checksum:TRUE",
        "-o",
        "ip.check_checksum:TRUE",
        "-Y",
        "_ws.malformed || _ws.expert.severity == error || tcp.checksum.status == 0"
        " || ip.checksum.status == 0",
    )
    assert p.returncode == 0 and p.stdout == "", p.stdout[:500]
    # Real headers: addresses of the emulator's numbering, MSS/SACK/TS/WS on the SYNs.
    p = _tshark(
        pcap,
        "-Y",
        "tcp.flags.syn == 1 && tcp.flags.ack == 0",
        "-T",
        "fields",
        "-e",
        "ip.src",
        "-e",
        "tcp.options.mss_val",
        "-e",
        "tcp.options.wscale.shift",
        "-e",
        "tcp.options.sack_perm",
        "-e",
        "tcp.options.timestamp.tsval",
    )
    syns = [line.split("\t") for line in p.stdout.splitlines()]
    assert sorted(s[0] for s in syns) == ["10.77.0.1", "10.77.0.2"], syns
    assert all(s[1] == "1460" and s[2] == "7" and s[3] and s[4] for s in syns), syns


@needs_tshark
def test_wireshark_expert_info_agrees_with_the_run(policed_run: tuple[dict, Path]) -> None:
    result, pcap = policed_run
    # The capture is upstream of the policer, where nothing is reordered: every
    # segment Wireshark calls a retransmission or out-of-order (a retransmission
    # sent within its out-of-order time threshold of the previous segment) is one
    # the simulated sender retransmitted.
    rtx = _per_port(pcap, "tcp.analysis.retransmission || tcp.analysis.out_of_order")
    for f in result["flows"]:
        if f["protocol"] != "tcp":
            continue
        port = 10000 + f["id"]
        assert f["retransmits"] > 20  # the run really lost packets
        assert rtx[port] == f["retransmits"], (port, rtx[port], f["retransmits"])
    fast = _per_port(pcap, "tcp.analysis.fast_retransmission")
    assert sum(fast.values()) > 0
    # The receivers' buffers never fill: no zero window, as the run's windows say.
    assert sum(_per_port(pcap, "tcp.analysis.zero_window").values()) == 0
    # Our own analysis of the same file agrees with Wireshark's, flow by flow.
    ours = _analyze_flows(pcap)
    for port, f in ours.items():
        assert f["retransmits"] == rtx[port]
    by_port = {10000 + f["id"]: f for f in result["flows"] if f["protocol"] == "tcp"}
    for port, f in ours.items():
        assert f["retransmits"] == by_port[port]["retransmits"]
        assert f["dup_acks"] == _dup_acks_toward(pcap, port)


def _dup_acks_toward(pcap: Path, client_port: int) -> int:
    p = _tshark(
        pcap,
        "-Y",
        f"tcp.analysis.duplicate_ack && tcp.dstport == {client_port}",
        "-T",
        "fields",
        "-e",
        "frame.number",
    )
    return len(p.stdout.split())


def _analyze_flows(pcap: Path) -> dict[int, dict]:
    """client port → retransmits (incl. out-of-order) and dup ACKs, from
    ``qoslab analyze --json``."""
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["analyze", str(pcap), "--json"]) == 0
    doc = json.loads(buf.getvalue())
    out = {}
    for f, c in zip(doc["flows"], doc["capture"]["flows"], strict=True):
        if f["protocol"] != "tcp":
            continue
        port = int(f["from"].rsplit(":", 1)[1])
        out[port] = {
            "retransmits": f["retransmits"] + c["out_of_order"],
            "dup_acks": c["dup_acks"],
        }
    return out


def test_analyze_reads_back_the_run_counters_and_finds_the_policer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Closing the loop on a simulated run (the USC-NSL lab's 1.5 Mbit/s / 100 kB
    policer at 100 ms): rate within 5 %, bucket within 25 %."""
    sc = tmp_path / "p.toml"
    sc.write_text((ROOT / "validation/emulate/police1500k-bc100k-1cubic.toml").read_text())
    pcap = tmp_path / "p.pcap"
    rc, out, err = _run(capsys, "run", sc, "--capture", f"r1->r2={pcap}", "--json")
    assert rc == 0, err
    sim = json.loads(out)
    rc, out, err = _run(capsys, "analyze", pcap, "--policing", "--json")
    assert rc == 0, err
    doc = json.loads(out)
    flows = [f for f in doc["flows"] if f["protocol"] == "tcp"]
    ooo = doc["capture"]["flows"][0]["out_of_order"]
    assert flows[0]["retransmits"] + ooo == sim["flows"][0]["retransmits"]
    bulk = max(doc["policing"], key=lambda r: r["data_packets"])
    assert bulk["all_losses"]["policed"], bulk["verdict"]
    assert bulk["extension"]["wire_rate_bps"] == pytest.approx(1.5e6, rel=0.05)
    assert bulk["extension"]["bucket_bytes"] == pytest.approx(100_000, rel=0.25)


def test_capture_table_and_snaplen(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pcap = tmp_path / "after.pcap"
    sc = tmp_path / "t.toml"
    sc.write_text(POLICED + f'\n[capture]\nlinks = ["r1->r2:egress={pcap}"]\nsnaplen = 100\n')
    rc, _, err = _run(capsys, "run", sc, "--quiet")
    assert rc == 0, err
    data = pcap.read_bytes()
    magic, _, _, _, _, snaplen, linktype = struct.unpack("<IHHiIII", data[:24])
    assert magic == 0xA1B23C4D and snaplen == 100 and linktype == 1  # ns pcap, Ethernet
    caplen, origlen = struct.unpack("<II", data[32:40])
    assert caplen <= 100 and origlen >= caplen
    assert not list(tmp_path.glob("*.tmp*"))  # written atomically, nothing left


def test_headers_only_by_default(policed_run: tuple[dict, Path]) -> None:
    _, pcap = policed_run
    data = pcap.read_bytes()
    off, big = 24, 0
    while off < len(data):
        caplen, origlen = struct.unpack("<II", data[off + 8 : off + 16])
        assert caplen <= 14 + 60 + 60
        big += origlen > caplen
        off += 16 + caplen
    assert big > 100


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--capture", "r1->r2"], "no file given; add =FILE or run with --out DIR"),
        (["--capture", "r1->r9=x.pcap"], "no link direction 'r1->r9'"),
        (["--capture", "r1->r2:middle=x.pcap"], "must be ingress or egress"),
        (["--snaplen=300000", "--capture", "r1->r2=x.pcap"], "expected 0..262144"),
    ],
)
def test_bad_captures_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    sc = tmp_path / "t.toml"
    sc.write_text(POLICED)
    rc, _, err = _run(capsys, "run", sc, *argv)
    assert rc == 2
    assert needle in err and len(err.strip().splitlines()) == 1, err
    assert not list(Path.cwd().glob("x.pcap*"))


def test_bad_capture_table_is_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sc = tmp_path / "t.toml"
    sc.write_text(POLICED + '\n[capture]\nlinks = ["r1->r2", "s0->r9"]\n')
    rc, _, err = _run(capsys, "run", sc, "--out", tmp_path / "o")
    assert rc != 0
    assert f"{sc}:" in err and "capture.links" in err and "no link direction 's0->r9'" in err
