"""Real traffic for an emulation: ``iperf3`` and ``ping`` in the host namespaces.

A scenario's ``[[traffic]]`` becomes real programs (the plan's flows, numbered as the
simulator numbers them):

- ``tcp-bulk``: ``iperf3 -c DST -P n -t T -C cc [-w window] [-M mss] [-n bytes] -J`` —
  flows of one spec with the same endpoints and start share one client (``-P n``), a
  staggered flow gets its own; every client talks to its own one-off server
  (``iperf3 -s -1 -p PORT -J``) on the receiving host.
- ``udp``: the same with ``-u -b rate -l payload`` (iperf3's ``-b`` is per stream).
- ``ping``: ``ping -n -D -i interval -s size -c count`` (timestamps in CLOCK_REALTIME,
  mapped onto the run's monotonic time axis).

iperf3 figures (Debian's 3.12): per stream, the receiver's bytes and seconds (goodput
as iperf3 reports it: receiver bytes over receiver time), the sender's retransmissions
(the kernel's ``tcpi_total_retrans``), and per interval the receiver's bytes (the
server's ``-J`` intervals: the goodput series), the sender's ``snd_cwnd`` and ``rtt``
(``tcpi_snd_cwnd`` times mss and ``tcpi_rtt``, smoothed) and retransmissions.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qoslab.emulate.netns import EmulationSetupError, Netns, run_cmd

__all__ = ["Program", "parse_ping", "plan_programs"]

BASE_PORT = 5201
IPERF_MIN_INTERVAL_S = 0.1  # iperf3 refuses shorter reporting intervals


@dataclass
class Program:
    """One client program (an iperf3 client, maybe ``-P n``, or a ping) and the
    plan flows it carries, in the order its streams appear in iperf3's JSON."""

    kind: str  # "iperf3" | "ping"
    flows: list[dict[str, Any]]
    src: str
    dst: str
    start_ns: int
    argv: list[str]
    server_argv: list[str] | None = None
    port: int = 0
    out: Path | None = None
    server_out: Path | None = None
    proc: subprocess.Popen[str] | None = None
    server: subprocess.Popen[str] | None = None
    launched_ns: int = 0
    notes: list[str] = field(default_factory=list)


def _seconds(ns: int) -> str:
    return f"{ns / 1e9:g}"


def _group_key(f: dict[str, Any]) -> tuple[Any, ...]:
    return (
        f["traffic_index"],
        f["protocol"],
        f["from"],
        f["to"],
        f["start_ns"],
        f["stop_ns"],
        f["bytes"],
        json.dumps(f.get("tcp"), sort_keys=True),
        json.dumps(f.get("udp"), sort_keys=True),
        f.get("dscp", 0),
    )


def plan_programs(
    plan: dict[str, Any], netns: Netns, workdir: Path, interval_ns: int
) -> tuple[list[Program], list[str]]:
    """The programs that realise the plan's flows, and notes on what was rounded."""
    duration_ns = int(plan["duration_ns"])
    notes: list[str] = []
    interval_s = max(IPERF_MIN_INTERVAL_S, interval_ns / 1e9)
    if interval_ns / 1e9 < IPERF_MIN_INTERVAL_S:
        notes.append(
            f"iperf3 reports at most every {IPERF_MIN_INTERVAL_S:g} s: series interval "
            f"{interval_ns / 1e9:g} s taken as {interval_s:g} s"
        )
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    programs: list[Program] = []
    for f in plan["flows"]:
        if f["protocol"] == "ping":
            programs.append(_ping_program(f, netns, duration_ns))
        else:
            groups.setdefault(_group_key(f), []).append(f)
    port = BASE_PORT
    for flows in groups.values():
        f = flows[0]
        end_ns = duration_ns if f["stop_ns"] is None else min(int(f["stop_ns"]), duration_ns)
        span_s = (end_ns - int(f["start_ns"])) / 1e9
        t_s = max(1, round(span_s))
        if f["bytes"] is None and abs(t_s - span_s) > 1e-9:
            notes.append(
                f"flow {f['id']}: iperf3 -t takes whole seconds: {span_s:g} s sent as {t_s} s"
            )
        dst_ip = netns.ip(f["to"])
        argv = ["iperf3", "-c", dst_ip, "-p", str(port), "-J", "-i", f"{interval_s:g}"]
        argv += ["-P", str(len(flows))]
        if f["bytes"] is not None:
            argv += ["-n", str(int(f["bytes"]))]
        else:
            argv += ["-t", str(t_s)]
        if f.get("dscp"):
            argv += ["-S", str(int(f["dscp"]) << 2)]
        if f["protocol"] == "tcp":
            tcp = f["tcp"]
            argv += ["-C", tcp["cc"]]
            # the scenario's rcvbuf: SO_RCVBUF and SO_SNDBUF, as setsockopt takes them
            if tcp.get("socket_buffer_bytes") is not None:
                argv += ["-w", str(int(tcp["socket_buffer_bytes"]))]
            # TCP_MAXSEG caps the MSS before options are taken off (tcp_output.c
            # __tcp_mtu_to_mss), so a payload of `mss` with timestamps is mss + 12.
            natural = 1460 - (12 if tcp["timestamps"] else 0)
            if int(tcp["mss"]) != natural:
                argv += ["-M", str(int(tcp["mss"]) + (12 if tcp["timestamps"] else 0))]
        else:
            udp = f["udp"]
            if udp.get("on_ns") is not None:
                raise EmulationSetupError(
                    f"flow {f['id']}: iperf3 cannot send on/off periods"
                    " (traffic kind 'onoff' runs only in the simulator)"
                )
            argv += ["-u", "-b", str(int(udp["rate_bps"])), "-l", str(int(udp["payload_bytes"]))]
        i = len(programs)
        programs.append(
            Program(
                kind="iperf3",
                flows=flows,
                src=f["from"],
                dst=f["to"],
                start_ns=int(f["start_ns"]),
                argv=argv,
                server_argv=["iperf3", "-s", "-1", "-p", str(port), "-J", "-i", f"{interval_s:g}"],
                port=port,
                out=workdir / f"client-{i}.json",
                server_out=workdir / f"server-{i}.json",
            )
        )
        port += 1
    programs.sort(key=lambda p: p.start_ns)
    return programs, notes


def _ping_program(f: dict[str, Any], netns: Netns, duration_ns: int) -> Program:
    p = f["ping"]
    interval_ns = int(p["interval_ns"])
    end_ns = duration_ns if f["stop_ns"] is None else min(int(f["stop_ns"]), duration_ns)
    count = max(1, (end_ns - int(f["start_ns"])) // interval_ns)
    deadline_s = math.ceil((end_ns - int(f["start_ns"])) / 1e9) + 2
    argv = ["ping", "-n", "-D", "-i", _seconds(interval_ns), "-s", str(int(p["payload_bytes"]))]
    argv += ["-c", str(count), "-w", str(deadline_s)]
    if f.get("dscp"):
        argv += ["-Q", str(int(f["dscp"]) << 2)]
    argv.append(netns.ip(f["to"]))
    return Program(
        kind="ping", flows=[f], src=f["from"], dst=f["to"], start_ns=int(f["start_ns"]), argv=argv
    )


# --- running ----------------------------------------------------------------------


def start_servers(programs: list[Program], netns: Netns) -> None:
    """Starts every iperf3 server and waits until each listens (at most 5 s)."""
    for p in programs:
        if p.server_argv is None:
            continue
        assert p.server_out is not None
        p.server = _popen_to_file(netns, p.dst, p.server_argv, p.server_out)
    deadline = time.monotonic() + 5.0
    for p in programs:
        if p.server_argv is None:
            continue
        while True:
            out = run_cmd(netns.exec_argv(p.dst, ["ss", "-Hltn", f"sport = :{p.port}"]))
            if out.strip():
                break
            if p.server is not None and p.server.poll() is not None:
                raise EmulationSetupError(
                    f"iperf3 server on {p.dst}:{p.port} exited: {_tail(p.server_out)}"
                )
            if time.monotonic() > deadline:
                raise EmulationSetupError(f"iperf3 server on {p.dst}:{p.port} did not listen")
            time.sleep(0.02)


def _popen_to_file(netns: Netns, host: str, argv: list[str], out: Path) -> subprocess.Popen[str]:
    fh = open(out, "w", encoding="utf-8")
    try:
        p = subprocess.Popen(
            netns.exec_argv(host, argv),
            stdout=fh,
            stderr=subprocess.STDOUT if argv[0] == "ping" else subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
    finally:
        fh.close()
    netns.procs.append(p)
    return p


def launch(p: Program, netns: Netns, workdir: Path, now_ns: int) -> None:
    if p.out is None:
        p.out = workdir / f"ping-{p.flows[0]['id']}.txt"
    p.proc = _popen_to_file(netns, p.src, p.argv, p.out)
    p.launched_ns = now_ns


def _tail(path: Path | None) -> str:
    if path is None or not path.exists():
        return "(no output)"
    text = path.read_text(encoding="utf-8", errors="replace").strip()
    return text.splitlines()[-1] if text else "(no output)"


# --- parsing ----------------------------------------------------------------------

_PING_LINE = re.compile(
    r"^\[(?P<ts>\d+\.\d+)\] \d+ bytes from [^:]+: icmp_seq=(?P<seq>\d+) .*time=(?P<ms>[\d.]+) ms"
)
_PING_SUM = re.compile(r"(?P<tx>\d+) packets transmitted, (?P<rx>\d+) received")


def parse_ping(text: str) -> tuple[list[tuple[float, int, int]], int, int]:
    """``ping -D`` output → [(realtime reply s, seq, rtt ns)], transmitted, received."""
    replies = []
    tx = rx = 0
    for line in text.splitlines():
        m = _PING_LINE.match(line)
        if m:
            replies.append((float(m["ts"]), int(m["seq"]), round(float(m["ms"]) * 1e6)))
            continue
        s = _PING_SUM.search(line)
        if s:
            tx, rx = int(s["tx"]), int(s["rx"])
    if tx == 0 and replies:
        tx = rx = len(replies)
    return replies, tx, rx


def read_iperf_json(path: Path | None, what: str) -> dict[str, Any]:
    """An iperf3 ``-J`` document; a failed run raises with iperf3's own error."""
    if path is None or not path.exists():
        raise EmulationSetupError(f"{what}: no output")
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        raise EmulationSetupError(f"{what}: not JSON: {_tail(path)}") from None
    if isinstance(doc, dict) and doc.get("error"):
        raise EmulationSetupError(f"{what}: iperf3: {doc['error']}")
    return doc


def tmpdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="qoslab-emulate-"))
