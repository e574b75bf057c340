#!/usr/bin/env python3
"""Real Linux TCP through a real ``tc ... tbf`` qdisc, for comparison with the simulator.

What it does
------------
For each case below it builds three fresh network namespaces joined by veth pairs,

    client (10.201.1.1) --veth-- router --veth-- server (10.201.2.1)
                                  ^ tbf on the router's egress toward the server

installs ``tc qdisc add dev <router egress> root tbf rate R burst B limit L`` (or
``latency``), runs ``iperf3 -c <server> -P N -t T -C <cc> -J`` from the client while
``ping`` from the client measures the round-trip time under load, and records:

- per-flow and summed goodput (iperf3 receiver bytes over the receiver's time),
  per-flow Jain's fairness index;
- retransmissions (iperf3's ``retransmits``: the kernel's ``tcpi_total_retrans``);
- RTT: idle ping before the load, ping under load, iperf3's sender mean ``snd_rtt``
  (kernel ``srtt``);
- the qdisc counters from ``tc -s qdisc show`` (sent, dropped, overlimits, requeues).

The router is there so the topology mirrors the simulator's dumbbell (senders ->
router with the policy -> receivers) and so the sender's own stack (TSQ, its qdisc) is
not the one that shapes: the client's veth has no qdisc (``noqueue``); its packets
cross to the router and are forwarded into the tbf there.

Offloads: TSO, GSO and GRO are switched off on every veth with ``ethtool -K`` so that
TCP builds MSS-sized segments (1448 B payload, 1514 B frames) and tbf sees the same
packets the simulator models. Without that, tbf would see GSO super-packets of up to
64 KB; a super-packet larger than tbf's ``max_size`` (= burst) is then split by
``tbf_segment`` (net/sched/sch_tbf.c) into MSS segments queued one by one, and with GRO
on the router's ingress it would re-aggregate first. If ``ethtool`` is missing the
script refuses (install it, see below) rather than measure something else silently.

Safety: every namespace is named ``qlv-<pid>-<role>`` and deleted in a ``finally``
(also on Ctrl-C and SIGTERM); iperf3/ping processes are started by this script and
terminated by their own handles; addresses are 10.201.1.0/24 and 10.201.2.0/24 inside
those namespaces only; no interface of the host is touched. Every command has a
timeout and the whole run is bounded (about 2 minutes with the default 15 s per case).

Set-up (Debian, root):
    apt-get install -y iperf3 iproute2 ethtool iputils-ping
Run:
    sudo python3 validation/real_tbf.py            # all cases -> validation/real_tbf_results.json
    sudo python3 validation/real_tbf.py --list
    sudo python3 validation/real_tbf.py --case tbf20-b20k-4cubic --duration 10

Kernel sources for the behaviour discussed in docs/validation.md: net/sched/sch_tbf.c
(tbf_enqueue/tbf_dequeue/tbf_segment, the qdisc watchdog on an hrtimer),
net/ipv4/tcp_output.c (tcp_small_queue_check, TSQ), net/ipv4/tcp_cubic.c.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "real_tbf_results.json"
SETUP_HINT = "apt-get install -y iperf3 iproute2 ethtool iputils-ping"
REQUIRED_TOOLS = ("ip", "tc", "iperf3", "ping", "ethtool")

CLIENT_IP = "10.201.1.1"
ROUTER_C_IP = "10.201.1.254"
ROUTER_S_IP = "10.201.2.254"
SERVER_IP = "10.201.2.1"
ROUTER_EGRESS = "r1"  # router's veth toward the server: the tbf goes here

CMD_TIMEOUT_S = 15.0
PING_INTERVAL_S = 0.1
WARMUP_S = 2.0  # samples before this (slow start) are left out of "under load" figures


@dataclass(frozen=True)
class Case:
    name: str
    rate: str
    burst: str
    flows: int
    cc: str
    limit: str | None = None
    latency: str | None = None
    why: str = ""

    def tbf_args(self) -> list[str]:
        args = ["rate", self.rate, "burst", self.burst]
        if self.limit is not None:
            args += ["limit", self.limit]
        if self.latency is not None:
            args += ["latency", self.latency]
        return args


# 302800 B = 200 full frames of 1514 B: the "200 packets" queue of the simulator's
# scenarios, written in bytes because tbf's inner bfifo counts bytes.
CASES: tuple[Case, ...] = (
    Case(
        "tbf20-b20k-1cubic",
        "20mbit",
        "20000",
        1,
        "cubic",
        limit="302800",
        why="one CUBIC flow filling a 200-packet tbf queue: sawtooth depth, RTT = queue",
    ),
    Case(
        "tbf20-b20k-4cubic",
        "20mbit",
        "20000",
        4,
        "cubic",
        limit="302800",
        why="four CUBIC flows (iperf3 -P 4): sharing, fairness, loss synchronisation",
    ),
    Case(
        "tbf20-b20k-4reno",
        "20mbit",
        "20000",
        4,
        "reno",
        limit="302800",
        why="same with Reno: CUBIC vs Reno on a deep sub-ms-RTT queue",
    ),
    Case(
        "tbf20-b20k-1reno",
        "20mbit",
        "20000",
        1,
        "reno",
        limit="302800",
        why="one Reno flow: slow-start overshoot without HyStart, recovered alone",
    ),
    Case(
        "tbf10-b10k-lat50-4cubic",
        "10mbit",
        "10kb",
        4,
        "cubic",
        latency="50ms",
        why="limit from latency (tc: limit = rate*latency + burst = 72740 B, ~48 frames):"
        " a short queue, more drops, smaller windows",
    ),
    Case(
        "tbf20-b3000-1cubic",
        "20mbit",
        "3000",
        1,
        "cubic",
        limit="302800",
        why="burst of two frames: every release waits on the qdisc watchdog (hrtimer);"
        " shows whether timer slack costs rate",
    ),
    Case(
        "tbf100-b3000-1cubic",
        "100mbit",
        "3000",
        1,
        "cubic",
        limit="302800",
        why="the same two-frame burst at 100 Mbit/s (121 us per frame): timer and"
        " softirq latency now matter against the frame time",
    ),
)


class Failure(RuntimeError):
    """A set-up or measurement step failed; the message says which and why."""


def run(argv: list[str], timeout: float = CMD_TIMEOUT_S, check: bool = True) -> str:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise Failure(f"timed out after {timeout:.0f}s: {' '.join(argv)}") from e
    if check and p.returncode != 0:
        raise Failure(f"failed ({p.returncode}): {' '.join(argv)}\n{p.stderr.strip()}")
    return p.stdout


def preflight() -> None:
    if os.geteuid() != 0:
        raise Failure("needs root (network namespaces and tc): run it with sudo")
    missing = [t for t in REQUIRED_TOOLS if shutil.which(t) is None]
    if missing:
        raise Failure(f"missing {', '.join(missing)}; install with: {SETUP_HINT}")
    # Whether the kernel has tbf (CONFIG_NET_SCH_TBF) shows at the first `tc qdisc add`,
    # whose error Failure reports.


class Lab:
    """Three namespaces and two veth pairs; deletes everything it made on exit."""

    def __init__(self, tag: str, log: list[str], offloads: bool = False):
        self.offloads = offloads
        self.ns = {role: f"qlv-{os.getpid()}-{tag}-{role}" for role in ("c", "r", "s")}
        self.made: list[str] = []
        self.procs: list[subprocess.Popen[str]] = []
        self.log = log

    # -- commands -------------------------------------------------------------
    def sh(self, role: str | None, argv: list[str], **kw: Any) -> str:
        full = argv if role is None else ["ip", "netns", "exec", self.ns[role], *argv]
        self.log.append(" ".join(full))
        return run(full, **kw)

    def spawn(self, role: str, argv: list[str]) -> subprocess.Popen[str]:
        full = ["ip", "netns", "exec", self.ns[role], *argv]
        self.log.append(" ".join(full) + " &")
        p = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        return p

    # -- lifetime -------------------------------------------------------------
    def __enter__(self) -> Lab:
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _build(self) -> None:
        c, r, s = (self.ns[k] for k in ("c", "r", "s"))
        for name in (c, r, s):
            self.sh(None, ["ip", "netns", "add", name])
            self.made.append(name)
            self.sh(None, ["ip", "-n", name, "link", "set", "lo", "up"])
        # Created inside the namespaces directly: the host never sees these links.
        self.sh(
            None,
            ["ip", "-n", c, "link", "add", "c0", "type", "veth", "peer", "name", "r0", "netns", r],
        )
        self.sh(
            None,
            ["ip", "-n", r, "link", "add", "r1", "type", "veth", "peer", "name", "s0", "netns", s],
        )
        for role, dev, addr in (
            ("c", "c0", CLIENT_IP),
            ("r", "r0", ROUTER_C_IP),
            ("r", "r1", ROUTER_S_IP),
            ("s", "s0", SERVER_IP),
        ):
            self.sh(None, ["ip", "-n", self.ns[role], "addr", "add", f"{addr}/24", "dev", dev])
            if not self.offloads:
                self.sh(role, ["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"])
            self.sh(None, ["ip", "-n", self.ns[role], "link", "set", dev, "up"])
        self.sh(None, ["ip", "-n", c, "route", "add", "default", "via", ROUTER_C_IP])
        self.sh(None, ["ip", "-n", s, "route", "add", "default", "via", ROUTER_S_IP])
        self.sh("r", ["sysctl", "-qw", "net.ipv4.ip_forward=1"])
        for role in ("c", "s"):
            # Each case starts cold: no ssthresh/RTT cached from an earlier connection.
            self.sh(role, ["sysctl", "-qw", "net.ipv4.tcp_no_metrics_save=1"])

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=3)
        self.procs.clear()
        for name in reversed(self.made):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=10)
        self.made.clear()


# -- measurements ---------------------------------------------------------------

PING_TIME = re.compile(r"time=([0-9.]+) ms")


def ping_samples_ms(text: str) -> list[float]:
    return [float(m) for m in PING_TIME.findall(text)]


def summary(xs: list[float]) -> dict[str, float | int | None]:
    if not xs:
        return {"n": 0, "min": None, "mean": None, "median": None, "p95": None, "max": None}
    s = sorted(xs)
    return {
        "n": len(s),
        "min": s[0],
        "mean": sum(s) / len(s),
        "median": s[len(s) // 2],
        "p95": s[min(len(s) - 1, int(0.95 * len(s)))],
        "max": s[-1],
    }


def jain(xs: list[float]) -> float | None:
    if not xs or sum(xs) == 0:
        return None
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def qdisc_stats(lab: Lab) -> dict[str, Any]:
    out = json.loads(lab.sh("r", ["tc", "-s", "-j", "qdisc", "show", "dev", ROUTER_EGRESS]))
    root = next(q for q in out if q.get("root"))
    keep = (
        "kind",
        "options",
        "bytes",
        "packets",
        "drops",
        "overlimits",
        "requeues",
        "backlog",
        "qlen",
    )
    return {k: root.get(k) for k in keep}


# Sender-side loss-recovery counters of the client namespace (per-netns MIB, so they
# cover exactly this run's connections): RTOs, tail-loss probes, lost retransmissions.
NETSTAT_KEYS = (
    "TCPTimeouts",
    "TCPLossProbes",
    "TCPLostRetransmit",
    "TCPSackRecovery",
    "TCPRenoRecovery",
    "TCPSpuriousRTOs",
    "TCPSpuriousRtxHostQueues",
    "TCPDSACKRecv",
    "TCPSackRecoveryFail",
    "TCPFastRetrans",
    "TCPSlowStartRetrans",
    "TCPHystartTrainDetect",
    "TCPHystartDelayDetect",
)


def netstat(text: str) -> dict[str, int]:
    lines = text.splitlines()
    out: dict[str, int] = {}
    for head, vals in zip(lines[::2], lines[1::2], strict=False):
        if head.startswith("TcpExt:") and vals.startswith("TcpExt:"):
            for k, v in zip(head.split()[1:], vals.split()[1:], strict=True):
                if k in NETSTAT_KEYS:
                    out[k] = int(v)
    return out


def wait_listening(lab: Lab, port: int, deadline_s: float = 5.0) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if f":{port} " in lab.sh("s", ["ss", "-ltnH"]):
            return
        time.sleep(0.05)
    raise Failure(f"iperf3 server did not listen on :{port} within {deadline_s}s")


def iperf_digest(j: dict[str, Any]) -> dict[str, Any]:
    """The parts of iperf3's -J output that the comparison uses."""
    end = j["end"]
    flows = []
    for st in end["streams"]:
        snd, rcv = st["sender"], st["receiver"]
        flows.append(
            {
                "goodput_bps": rcv["bits_per_second"],
                "received_bytes": rcv["bytes"],
                "receiver_seconds": rcv["seconds"],
                "sent_bytes": snd["bytes"],
                "retransmits": snd.get("retransmits"),
                "max_snd_cwnd_bytes": snd.get("max_snd_cwnd"),
                "snd_rtt_us": {k: snd.get(k) for k in ("min_rtt", "mean_rtt", "max_rtt")},
            }
        )
    # Per-second series (sum over flows), for the time-series view and warm-up checks.
    series = []
    for iv in j.get("intervals", []):
        ss = iv["sum"]
        rtts = [st.get("rtt") for st in iv["streams"] if st.get("rtt") is not None]
        series.append(
            {
                "start_s": ss["start"],
                "end_s": ss["end"],
                "sent_bps": ss["bits_per_second"],
                "retransmits": ss.get("retransmits"),
                "cwnd_bytes": [st.get("snd_cwnd") for st in iv["streams"]],
                "mean_snd_rtt_us": (sum(rtts) / len(rtts)) if rtts else None,
            }
        )
    goodputs = [f["goodput_bps"] for f in flows]
    return {
        "sum_goodput_bps": end["sum_received"]["bits_per_second"],
        "sum_sent_bps": end["sum_sent"]["bits_per_second"],
        "sum_retransmits": end["sum_sent"].get("retransmits"),
        "jain": jain(goodputs),
        "flow_goodput_min_max_ratio": (min(goodputs) / max(goodputs)) if goodputs else None,
        "mean_snd_rtt_us": (
            sum(f["snd_rtt_us"]["mean_rtt"] for f in flows) / len(flows) if flows else None
        ),
        "flows": flows,
        "intervals": series,
        "cc": end.get("sender_tcp_congestion"),
        "cpu": end.get("cpu_utilization_percent"),
    }


def run_case(
    case: Case, duration_s: int, repeat: int = 0, offloads: bool = False
) -> dict[str, Any]:
    log: list[str] = []
    tag = f"{CASES.index(case) if case in CASES else 'x'}{repeat}"
    with Lab(tag, log, offloads) as lab:
        ns_sysctls = {
            k: lab.sh("c", ["sysctl", "-n", f"net.ipv4.{k}"]).strip()
            for k in (
                "tcp_wmem",
                "tcp_rmem",
                "tcp_limit_output_bytes",
                "tcp_congestion_control",
                "tcp_no_metrics_save",
            )
        }
        offloads = {
            line.split(":")[0]: line.split(":")[1].strip()
            for line in lab.sh("c", ["ethtool", "-k", "c0"]).splitlines()
            if line.split(":")[0]
            in (
                "tcp-segmentation-offload",
                "generic-segmentation-offload",
                "generic-receive-offload",
            )
        }
        idle = lab.sh("c", ["ping", "-n", "-c", "20", "-i", "0.05", SERVER_IP], timeout=10)
        idle_ms = ping_samples_ms(idle)
        lab.sh("r", ["tc", "qdisc", "add", "dev", ROUTER_EGRESS, "root", "tbf", *case.tbf_args()])
        before = qdisc_stats(lab)
        server = lab.spawn("s", ["iperf3", "-s", "-B", SERVER_IP, "-1"])
        wait_listening(lab, 5201)
        n_ping = int((duration_s - 0.5) / PING_INTERVAL_S)
        t0 = time.monotonic()
        client = lab.spawn(
            "c",
            [
                "iperf3",
                "-c",
                SERVER_IP,
                "-P",
                str(case.flows),
                "-t",
                str(duration_s),
                "-C",
                case.cc,
                "-J",
            ],
        )
        pinger = lab.spawn(
            "c", ["ping", "-n", "-c", str(n_ping), "-i", str(PING_INTERVAL_S), SERVER_IP]
        )
        try:
            out, err = client.communicate(timeout=duration_s + 20)
            pout, _ = pinger.communicate(timeout=10)
        except subprocess.TimeoutExpired as e:
            raise Failure(f"{case.name}: iperf3/ping did not finish in time") from e
        elapsed = time.monotonic() - t0
        if client.returncode != 0:
            raise Failure(f"{case.name}: iperf3 client failed: {err.strip() or out[:500]}")
        after = qdisc_stats(lab)
        tcp_counters = netstat(lab.sh("c", ["cat", "/proc/net/netstat"]))
        # The device counts one packet per skb, tc's bstats one per GSO segment:
        # their ratio is the mean number of segments per skb through the tbf.
        link = json.loads(lab.sh("r", ["ip", "-s", "-j", "link", "show", "dev", ROUTER_EGRESS]))
        egress_skbs = link[0]["stats64"]["tx"]["packets"]
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass  # closed by Lab.close
        j = json.loads(out)
        if "error" in j:
            raise Failure(f"{case.name}: iperf3: {j['error']}")
        load_ms = ping_samples_ms(pout)
        skip = int(WARMUP_S / PING_INTERVAL_S)
        sent = re.search(r"(\d+) packets transmitted, (\d+) received", pout)
        return {
            "case": asdict(case),
            "repeat": repeat,
            "offloads_left_on": offloads,
            "tc_command": f"tc qdisc add dev {ROUTER_EGRESS} root tbf " + " ".join(case.tbf_args()),
            "iperf3_command": f"iperf3 -c {SERVER_IP} -P {case.flows} -t {duration_s}"
            f" -C {case.cc} -J",
            "duration_s": duration_s,
            "wall_s": elapsed,
            "rtt_idle_ms": summary(idle_ms),
            "rtt_under_load_ms": summary(load_ms[skip:]),
            "rtt_under_load_all_ms": summary(load_ms),
            "ping_under_load": {
                "interval_s": PING_INTERVAL_S,
                "transmitted": int(sent.group(1)) if sent else None,
                "received": int(sent.group(2)) if sent else None,
                "samples_ms": load_ms,
            },
            "iperf3": iperf_digest(j),
            "client_ns_sysctls": ns_sysctls,
            "client_offloads": offloads,
            "qdisc_before": before,
            "qdisc_after": after,
            "router_egress_tx_skbs": egress_skbs,
            "client_tcp_counters": tcp_counters,
            "commands": log,
        }


def environment() -> dict[str, Any]:
    def first_line(argv: list[str]) -> str | None:
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=5)
            return (out.stdout or out.stderr).strip().splitlines()[0]
        except (OSError, subprocess.TimeoutExpired, IndexError):
            return None

    sysctls = {}
    for key in (
        "tcp_wmem",
        "tcp_rmem",
        "tcp_limit_output_bytes",
        "tcp_congestion_control",
        "tcp_available_congestion_control",
        "tcp_sack",
        "tcp_timestamps",
        "tcp_ecn",
        "tcp_min_rtt_wlen",
        "tcp_pacing_ss_ratio",
        "tcp_pacing_ca_ratio",
    ):
        p = Path("/proc/sys/net/ipv4") / key
        sysctls[key] = p.read_text().strip() if p.exists() else None
    return {
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "machine": platform.machine(),
        "tc": first_line(["tc", "-V"]),
        "iperf3": first_line(["iperf3", "--version"]),
        "cpus": os.cpu_count(),
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
        "host_sysctls_net_ipv4": sysctls,
        "note": "new namespaces inherit these tcp_* values on this kernel; -C sets CC per"
        " socket, so the host default (printed above) does not matter",
    }


def write_atomic(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=False)
            f.write("\n")
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _on_signal(sig: int, _frame: object) -> None:
    """First SIGINT/SIGTERM: ignore any more (Ctrl-C and `timeout` signal the whole
    process group, so a second copy often follows at once and would cut the cleanup
    short), then unwind through every `with`/`finally`, which deletes the namespaces."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if sig == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + sig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", action="append", help="run only this case (repeatable)")
    ap.add_argument("--duration", type=int, default=15, help="iperf3 -t seconds (default 15)")
    ap.add_argument(
        "--repeat", type=int, default=1, help="runs of each case, for the spread (default 1)"
    )
    ap.add_argument(
        "--keep-offloads",
        action="store_true",
        help="leave TSO/GSO/GRO at the veth defaults (on): shows tbf_segment at work; "
        "use with --out, the comparison needs them off",
    )
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    a = ap.parse_args(argv)

    if a.list:
        for c in CASES:
            print(f"{c.name:26} tbf {' '.join(c.tbf_args()):40} -P {c.flows} -C {c.cc}")
            print(f"{'':26} {c.why}")
        return 0
    if not 3 <= a.duration <= 60:
        ap.error("--duration must be 3..60 s (the run is meant to stay short)")
    if not 1 <= a.repeat <= 5:
        ap.error("--repeat must be 1..5")
    known = {c.name: c for c in CASES}
    chosen = list(CASES)
    if a.case:
        unknown = [n for n in a.case if n not in known]
        if unknown:
            ap.error(f"unknown case(s) {unknown}; see --list")
        chosen = [known[n] for n in a.case]

    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    try:
        preflight()
        env = environment()
        results = []
        for k, c in ((k, c) for k in range(a.repeat) for c in chosen):
            print(
                f"-- {c.name} (run {k + 1}/{a.repeat}): tbf {' '.join(c.tbf_args())}, "
                f"{c.flows}x {c.cc}, {a.duration}s",
                flush=True,
            )
            r = run_case(c, a.duration, k, a.keep_offloads)
            ip = r["iperf3"]
            print(
                f"   goodput {ip['sum_goodput_bps'] / 1e6:.2f} Mbit/s, "
                f"retrans {ip['sum_retransmits']}, jain {ip['jain']:.3f}, "
                f"ping idle {r['rtt_idle_ms']['median']} ms, "
                f"under load {r['rtt_under_load_ms']['median']} ms, "
                f"tbf drops {r['qdisc_after']['drops']}",
                flush=True,
            )
            results.append(r)
        env["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
        write_atomic(
            a.out, {"generator": "validation/real_tbf.py", "environment": env, "results": results}
        )
        print(f"wrote {a.out}")
        return 0
    except Failure as e:
        print(f"real_tbf: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("real_tbf: interrupted; namespaces removed, nothing written", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
