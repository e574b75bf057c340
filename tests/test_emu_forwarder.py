"""The userspace forwarder of ``qoslab emulate`` end to end, through the
binding: real Linux TCP (iperf3) and ping between two network namespaces
through the forwarder's tbf and delay.

Needs root (network namespaces, AF_PACKET), ``ip``, ``ethtool`` and
``iperf3``; skipped with the reason otherwise. Every namespace and process
is removed even when a check fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

if not sys.platform.startswith("linux"):
    pytest.skip("the emulator is Linux only", allow_module_level=True)

from qoslab import _core

MISSING = [t for t in ("ip", "ethtool", "iperf3", "ping") if shutil.which(t) is None]
needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or bool(MISSING),
    reason="needs root and ip/ethtool/iperf3/ping"
    + (f" (missing: {', '.join(MISSING)})" if MISSING else " (not root)"),
)

SCENARIO = """
[scenario]
name = "emu-forwarder-test"
duration = "4s"
[topology]
senders = 1
receivers = 1
access = { rate = "1gbit", delay = "0ms" }
bottleneck = { rate = "1gbit", delay = "20ms" }
[policy.bottleneck.egress]
shape = { kind = "tbf", rate = "10mbit", burst = "10kb", latency = "50ms" }
[[traffic]]
kind = "tcp-bulk"
[record]
interval = "100ms"
series = ["goodput", "queue", "tokens"]
"""

IPS = {"s0": "10.77.0.1", "d0": "10.77.0.2"}
#: TCP goodput over a tbf of rate R with 1448-byte segments in 1514-byte frames.
EXPECTED_BPS = 10e6 * 1448 / 1514


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, check=check, capture_output=True, text=True, timeout=20)


@dataclass
class Net:
    fw: str
    ns: dict[str, str]
    ports: dict[str, str]
    procs: list[subprocess.Popen[str]] = field(default_factory=list)

    def run(self, host: str, *args: str) -> subprocess.CompletedProcess[str]:
        return sh("ip", "netns", "exec", self.ns[host], *args)


@pytest.fixture
def net() -> Iterator[Net]:
    pid = os.getpid()
    n = Net(
        fw=f"qlt-{pid}-fw",
        ns={h: f"qlt-{pid}-{h}" for h in IPS},
        ports={h: f"p{h}" for h in IPS},
    )
    made: list[str] = []
    try:
        for name in [n.fw, *n.ns.values()]:
            sh("ip", "netns", "add", name)
            made.append(name)
            sh("ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
            sh("ip", "-n", name, "link", "set", "lo", "up")
        macs = {}
        for h, ns in n.ns.items():
            sh(
                "ip",
                "-n",
                ns,
                "link",
                "add",
                "eth0",
                "type",
                "veth",
                "peer",
                "name",
                n.ports[h],
                "netns",
                n.fw,
            )
            sh("ip", "-n", ns, "addr", "add", f"{IPS[h]}/24", "dev", "eth0")
            # MTU-sized frames (no TSO/GSO super-frames). Checksum offload
            # stays on: the forwarder completes those checksums itself.
            n.run(h, "ethtool", "-K", "eth0", "tso", "off", "gso", "off", "gro", "off")
            sh("ip", "netns", "exec", n.fw, "ethtool", "-K", n.ports[h], "gro", "off")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "-n", n.fw, "link", "set", n.ports[h], "up")
            out = sh("ip", "-n", ns, "-j", "link", "show", "eth0").stdout
            macs[h] = json.loads(out)[0]["address"]
        for h, ns in n.ns.items():
            for other in IPS:
                if other != h:
                    sh(
                        "ip",
                        "-n",
                        ns,
                        "neigh",
                        "add",
                        IPS[other],
                        "lladdr",
                        macs[other],
                        "dev",
                        "eth0",
                        "nud",
                        "permanent",
                    )
        yield n
    finally:
        for p in n.procs:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=5)
        for name in made:
            sh("ip", "netns", "del", name, check=False)


def start(n: Net, tmp: Path, **kw: object) -> _core.EmuHandle:
    return _core.emu_start(
        str(kw.get("scenario", SCENARIO)),
        "emu-test.toml",
        n.fw,
        n.ports,
        IPS,
        kw.get("kernel_links", {}),  # type: ignore[arg-type]
        kw.get("captures", []),  # type: ignore[arg-type]
        time.monotonic_ns(),
        offload=bool(kw.get("offload", False)),
        threads=int(kw.get("threads", 0)),  # type: ignore[call-overload]
        busy_poll=bool(kw.get("busy_poll", False)),
    )


def ping_ms(n: Net) -> tuple[float, float]:
    """Five pings' minimum and average RTT, ms."""
    out = n.run("s0", "ping", "-c", "5", "-i", "0.2", "-W", "2", IPS["d0"]).stdout
    m = re.search(r"= ([\d.]+)/([\d.]+)/", out)
    assert m, out
    return float(m.group(1)), float(m.group(2))


def assert_delay_line_rtt(rtt_min: float, rtt_avg: float) -> None:
    """2 x 20 ms of propagation, plus 4 x 1 Gbit/s serialisations and the hosts' own
    stacks: well under a millisecond more, at the minimum. The average of five may carry
    one wake-up the host itself made late (this VM's timer wake-ups reach milliseconds at
    p99.9 and max with nothing of ours running: docs/performance.md, the latency floor),
    so it only has to show no systematic stall."""
    assert 40.0 <= rtt_min <= 41.5, (rtt_min, rtt_avg)
    assert rtt_avg <= 45.0, (rtt_min, rtt_avg)


def iperf_bps(n: Net) -> float:
    server = subprocess.Popen(
        ["ip", "netns", "exec", n.ns["d0"], "iperf3", "-s", "-1", "-B", IPS["d0"]],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    n.procs.append(server)
    time.sleep(0.3)
    out = n.run("s0", "iperf3", "-c", IPS["d0"], "-t", "3", "-O", "1", "-J").stdout
    server.wait(timeout=10)
    return float(json.loads(out)["end"]["sum_received"]["bits_per_second"])


@needs_root
def test_tcp_through_the_userspace_tbf_and_ping_through_the_delay(net: Net, tmp_path: Path) -> None:
    pcap = tmp_path / "r1-r2-egress.pcap"
    h = start(net, tmp_path, captures=[("r1->r2", "egress", str(pcap))])
    try:
        rtt_min, rtt_avg = ping_ms(net)
        bps = iperf_bps(net)
        live = h.stats()
    finally:
        res = h.stop()
    print(f"ping {rtt_min:.2f}/{rtt_avg:.2f} ms, iperf3 {bps / 1e6:.3f} Mbit/s")
    assert_delay_line_rtt(rtt_min, rtt_avg)
    assert abs(bps - EXPECTED_BPS) / EXPECTED_BPS < 0.04, (bps, EXPECTED_BPS)
    assert live["running"] and live["frames_in"] > 1000
    (pol,) = res["policies"]
    assert pol["name"] == "r1->r2 egress" and pol["kind"] == "tbf"
    assert pol["packets_in"] > 1000
    assert res["unroutable"] == 0 and res["oversize"] == 0 and res["tx_refused"] == 0
    assert res["timing"]["count"] > 1000
    # The hosts left TCP checksums to offload; the forwarder filled them in.
    assert res["checksums_completed"] > 1000
    q = res["series"]
    assert len(q["queue_time_ns"]) > 20 and (q["tokens_bytes"] >= -1).all()
    links = {x["name"]: x for x in res["links"]}
    assert links["r1->r2"]["packets"] > 1000
    # One thread per direction: the data and the ACKs were forwarded by two
    # threads, and each direction's counters come from the one that owns it.
    assert res["threads"] == 2
    assert links["r2->r1"]["packets"] > 100
    assert res["frames_in"] >= links["r1->r2"]["packets"] + links["r2->r1"]["packets"]
    assert pcap.exists()
    if shutil.which("tshark") is None:
        print("tshark not installed: capture not checked with it")
    else:
        t = sh("tshark", "-r", str(pcap), "-c", "5")
        # tshark's note about running as root is not a capture warning.
        warnings = [ln for ln in t.stderr.splitlines() if ln.strip() and "as user" not in ln]
        assert t.returncode == 0 and not warnings, t.stderr
        assert "TCP" in t.stdout or "ICMP" in t.stdout, t.stdout


@needs_root
def test_one_thread_forwards_both_directions(net: Net, tmp_path: Path) -> None:
    h = start(net, tmp_path, threads=1)
    try:
        rtt_min, rtt_avg = ping_ms(net)
    finally:
        res = h.stop()
    assert_delay_line_rtt(rtt_min, rtt_avg)
    assert res["threads"] == 1
    links = {x["name"]: x for x in res["links"]}
    assert links["r1->r2"]["packets"] >= 5 and links["r2->r1"]["packets"] >= 5
    # Between pings it slept until just before each due release (20 ms of delay).
    t = res["timing"]
    assert t["wake_count"] >= 5, t
    assert t["wake_p99_ns"] <= t["wake_max_ns"], t
    # Every frame handed to a host was sent after the model released it, and its
    # send() began before it returned (same clock, sanity check).
    assert t["sent_count"] == res["frames_out"] - res["tx_refused"], t
    assert t["handed_p50_ns"] <= t["sent_p50_ns"] <= t["sent_p99_ns"] <= t["sent_max_ns"], t


@needs_root
def test_busy_poll_never_sleeps_and_keeps_the_delay(net: Net, tmp_path: Path) -> None:
    h = start(net, tmp_path, threads=1, busy_poll=True)
    try:
        # The minimum: a thread that never sleeps is held off its CPU for the fair
        # tasks' share (up to 50 ms at a time) when they queue on it, as on a loaded
        # machine (docs/performance.md, issue 16); the delay line itself is exact.
        rtt, _ = ping_ms(net)
    finally:
        res = h.stop()
    assert 40.0 <= rtt <= 41.5, rtt
    assert res["threads"] == 1
    # No timed sleep at all: every release was met spinning.
    assert res["timing"]["wake_count"] == 0, res["timing"]
    assert res["timing"]["count"] > 0


@needs_root
def test_kernel_backend_runs_the_real_tbf(net: Net, tmp_path: Path) -> None:
    plan = _core.emu_plan(SCENARIO, "emu-test.toml")
    (pol,) = plan["policies"]
    kern = pol["kernel"]
    assert kern["qdisc"] == "tbf"
    sh("ip", "-n", net.fw, "link", "add", "qk0a", "type", "veth", "peer", "name", "qk0b")
    for dev in ("qk0a", "qk0b"):
        sh("ip", "-n", net.fw, "link", "set", dev, "up")
    sh(
        "ip",
        "netns",
        "exec",
        net.fw,
        "tc",
        "qdisc",
        "add",
        "dev",
        "qk0a",
        "root",
        kern["qdisc"],
        *kern["tc_args"],
    )
    h = start(net, tmp_path, kernel_links={"r1->r2": ("qk0a", "qk0b")})
    try:
        bps = iperf_bps(net)
    finally:
        res = h.stop()
    print(f"kernel tbf: iperf3 {bps / 1e6:.3f} Mbit/s, policy {res['policies'][0]}")
    assert abs(bps - EXPECTED_BPS) / EXPECTED_BPS < 0.04, (bps, EXPECTED_BPS)
    (p,) = res["policies"]
    assert p["packets_in"] > 1000


def test_missing_namespace_is_an_emulation_error() -> None:
    with pytest.raises(_core.EmulationError, match="no-such-ns"):
        _core.emu_start(SCENARIO, "x.toml", "no-such-ns", {"s0": "a", "d0": "b"}, IPS, {}, [], 0)


def test_plan_lists_hosts_flows_and_the_tc_form_of_the_policy() -> None:
    plan = _core.emu_plan(SCENARIO, "emu-test.toml")
    assert plan["hosts"] == ["s0", "d0"]
    (flow,) = plan["flows"]
    assert flow["id"] == 0 and (flow["from"], flow["to"]) == ("s0", "d0")
    assert flow["tcp"]["cc"] == "cubic" and flow["tcp"]["socket_buffer_bytes"] is None
    (pol,) = plan["policies"]
    assert pol["link"] == "r1->r2"
    assert pol["kernel"] == {
        "qdisc": "tbf",
        "tc_args": ["rate", "10mbit", "burst", "10kb", "latency", "50ms"],
    }
    assert [x["name"] for x in plan["links"]][:2] == ["s0->r1", "r1->s0"]


def test_plan_refuses_what_linux_cannot_do_at_the_key() -> None:
    text = SCENARIO.replace('kind = "tcp-bulk"', 'kind = "tcp-bulk"\ndelayed_ack = "200ms"')
    with pytest.raises(_core.ScenarioError) as e:
        _core.emu_plan(text, "emu-test.toml")
    assert e.value.path == "traffic[0].delayed_ack"
    assert "Linux cannot" in e.value.message
    line = 1 + text.splitlines().index('delayed_ack = "200ms"')
    assert str(e.value).startswith(f"emu-test.toml:{line}:15: ")


def pcap_frame_lengths(path: Path) -> list[int]:
    """Captured length of every record of a classic pcap file."""
    data = path.read_bytes()
    at, out = 24, []
    while at + 16 <= len(data):
        incl = int.from_bytes(data[at + 8 : at + 12], "little")
        out.append(incl)
        at += 16 + incl
    return out


@needs_root
def test_offload_on_splits_super_packets_into_wire_segments(net: Net, tmp_path: Path) -> None:
    """--offload on: the sender hands 64 KB TSO super-packets to its veth; the
    forwarder must split them, or the 10 kB bucket of the tbf (smaller than any
    super-packet) would pass none of them and TCP would stall."""
    for h in IPS:
        net.run(h, "ethtool", "-K", "eth0", "sg", "on", "tx", "on", "tso", "on", "gso", "on")
    pcap = tmp_path / "r1-r2-egress.pcap"
    h = start(net, tmp_path, captures=[("r1->r2", "egress", str(pcap))], offload=True)
    try:
        bps = iperf_bps(net)
    finally:
        res = h.stop()
    print(f"iperf3 {bps / 1e6:.3f} Mbit/s, {res['super_packets']} super-packets")
    assert res["super_packets"] > 100, res
    # Segments for the receiver that leave in one batch are joined back into
    # super-packets; at 10 Mbit/s they mostly leave one by one.
    assert res["tx_super_segments"] >= 2 * res["tx_super_packets"]
    assert abs(bps - EXPECTED_BPS) / EXPECTED_BPS < 0.04, (bps, EXPECTED_BPS)
    assert res["unroutable"] == 0 and res["oversize"] == 0 and res["tx_refused"] == 0
    lengths = pcap_frame_lengths(pcap)
    assert len(lengths) > 1000 and max(lengths) <= 1514, (len(lengths), max(lengths))


#: A fast path for --offload on: 40 Gbit/s links, a 5 Gbit/s tbf.
FAST_SCENARIO = SCENARIO.replace('rate = "1gbit"', 'rate = "40gbit"').replace(
    'rate = "10mbit", burst = "10kb"', 'rate = "5gbit", burst = "1mb"'
)


@needs_root
def test_offload_on_forwards_unchanged_super_packets_as_they_came(net: Net, tmp_path: Path) -> None:
    """--offload on at gigabits: a super-packet whose segments all pass the tbf
    and reach the receiver back to back leaves the forwarder as it came (bytes and
    virtio-net header; counted in tx_whole_super_packets), while the capture still
    shows the wire segments the tbf counted."""
    assert FAST_SCENARIO.count("40gbit") == 2 and "5gbit" in FAST_SCENARIO
    for h in IPS:
        net.run(h, "ethtool", "-K", "eth0", "sg", "on", "tx", "on", "tso", "on", "gso", "on")
    pcap = tmp_path / "r1-r2-egress.pcap"
    h = start(
        net,
        tmp_path,
        scenario=FAST_SCENARIO,
        captures=[("r1->r2", "egress", str(pcap))],
        offload=True,
        threads=1,
    )
    try:
        bps = iperf_bps(net)
    finally:
        res = h.stop()
    print(
        f"iperf3 {bps / 1e9:.3f} Gbit/s, {res['super_packets']} super-packets in,"
        f" {res['tx_super_packets']} out, {res['tx_whole_super_packets']} as they came"
    )
    assert res["super_packets"] > 100, res
    assert 0 < res["tx_whole_super_packets"] <= res["tx_super_packets"], res
    assert res["unroutable"] == 0 and res["oversize"] == 0 and res["tx_refused"] == 0
    # Every byte the receiver got passed the tbf as wire segments.
    assert bps < 5e9, bps
    lengths = pcap_frame_lengths(pcap)
    assert len(lengths) > 1000 and max(lengths) <= 1514, (len(lengths), max(lengths))
