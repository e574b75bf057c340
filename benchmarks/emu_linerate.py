"""`qoslab emulate` at line rate (issue 16): real iperf3 and ping between network
namespaces through the userspace forwarder, against the kernel on the same path in
the same run.

Measured, each case run ``--runs`` times (median, min-max), every run screened for
CPU steal (/proc/stat; a run whose steal exceeds ``--max-steal`` is repeated, at most
``--tries`` times, and the table says how many were kept):

1. goodput through a 1 Gbit/s TBF and a 1 Gbit/s police policy, 1 and 4 TCP flows,
   data and ACKs both through the forwarder, against ideal (rate x 1448/1514) and
   against kernel tbf (``--backend kernel``: the same forwarder, the policy in the
   kernel's own tbf qdisc; the kernel has no police action here, so police has no
   kernel column);
2. rate accuracy of the TBF at 1, 10, 100 Mbit/s and 1 Gbit/s (1 flow, goodput after
   the first second, from the 100 ms goodput series), userspace vs kernel tbf;
3. idle latency: ping through the emulator (every link 10 Gbit/s, no delay) against
   ping through plain kernel forwarding (a Linux bridge in a namespace joining the
   same two host namespaces): median and p99 of the RTT, and the difference; for the
   main form (``--threads``), the default single thread, and a single thread that
   never sleeps (``--busy-poll``), alone and with ``--rt-unthrottle``;
4. the delay line under load, in the same forms: a 4 ms bottleneck (each way) carrying a
   UDP load while ping measures; RTT - 2 x 4 ms - the same form's idle median, halved
   (one way), with the forwarder's event lateness, how late its timed sleeps woke and
   how late after their due time the frames it delivered were handed to the ports'
   ``send()`` and sent. 4 ms, not 5: iputils ping prints an RTT of 10 ms or more
   with one decimal (100 µs steps), below 10 ms with two (10 µs steps), and the target
   is ±20 µs. At the hosts' veths (dumpcap, kernel stamps), each echo request's one way
   against the configured delay (which includes the queueing the model rightly puts
   behind the UDP at the bottleneck) and **against the model's own schedule**: the one
   way minus what the model put between the frame's arrival and its delivery, read from
   two captures the emulator itself writes (the first hop's ingress, the last hop's
   egress); and, besides the forms above, the default single thread with idle CPUs
   polling (``--idle-poll``);
5. CPU per forwarded frame, user and system, of the forwarder thread
   (/proc/self/task/TID/stat of the thread named ``qoslab-emu``);
6. flows 1-64 through the 1 Gbit/s TBF;
7. the GSO mode (``--offload on``): goodput through a 10 Gbit/s TBF, 1 and 4 flows; and
   the forwarder's GSO capacity (one thread): through a 20 Gbit/s TBF, which still charges
   every wire segment but does not bind below 19.1 Gbit/s of goodput, and with no policy
   (only the 40 Gbit/s links' per-segment serialisation) — a 10 Gbit/s TBF caps goodput at
   9.564 Gbit/s, so issue 16's "≥ 10 Gbit/s with per-segment accounting" is read there;
8. unless ``--threads 1``: the forwarder in a single thread (TBF and police at 1 Gbit/s
   with 1 and 4 flows, idle ping, and the GSO cases) against one thread per direction (the
   benchmark's main rows, its ``--threads`` default 0), in the same run;
9. receiving hosts with GRO in a threaded NAPI (``qoslab emulate --gro on``) against the
   default hosts, one forwarder thread, TBF and police at 1 Gbit/s (kernel tbf on the same
   GRO hosts), with diagnosis columns for both: the share of 10 ms queue samples with the
   policy's queue empty, policy drops, TCP retransmissions, the forwarder's event lateness
   p99 / p99.9, and its run-queue wait per second (schedstat: ~50 ms/s means the kernel held
   the SCHED_FIFO forwarder off for its 5 % of the CPU, docs/performance.md); and the
   same GRO cases with the kernel's RT throttling lifted for the run
   (``qoslab emulate --gro on --rt-unthrottle``).

With ``--floor`` instead: the machine's own latency floor, independent of qoslab, at idle
and beside two of the loads above (the delay line's UDP + ping, one TCP flow through the
1 Gbit/s TBF) run by ``qoslab emulate`` in its default form: cyclictest (rt-tests) on every
CPU (how late a SCHED_FIFO 99 thread sleeping on a timer is woken: p50 / p99 / p99.9 /
max) and oslat on the last CPU (how often and how long a thread that never sleeps is held
off), each with the CPU steal of its window. If a timer wake-up is late by more than the
delay line's ±20 µs at p99 here, no forwarder that sleeps can meet it on this machine.

    sudo .venv/bin/python benchmarks/emu_linerate.py --write docs/performance.md
    sudo .venv/bin/python benchmarks/emu_linerate.py --runs 1 --duration 3   # quick look
    sudo .venv/bin/python benchmarks/emu_linerate.py --floor --runs 3
    sudo .venv/bin/python benchmarks/emu_linerate.py --label "loaded (7 builds)" --json

Needs root, iperf3, ip, tc, ethtool, ping (and dumpcap with tshark for the delay line's
one way at the hosts' veths; without them those columns stay empty; cyclictest and oslat,
Debian's rt-tests, for ``--floor``). Every namespace and
process it starts is removed at the end, on an error and on Ctrl-C (``qoslab.emulate``'s
own cleanup, and :class:`qoslab.emulate.netns.Netns` for the kernel-forwarding baseline).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "validation"))
BEGIN, END = "<!-- emu-linerate:begin -->", "<!-- emu-linerate:end -->"
#: TCP payload per wire frame with timestamps: 1448 of 1514 bytes as tc counts them.
PAYLOAD_SHARE = 1448 / 1514
CLK_TCK = os.sysconf("SC_CLK_TCK")
#: One-way delay of the delay-line case: under 10 ms of RTT, so ping prints 10 µs steps.
DELAY_NS = 4_000_000
#: What the model adds to an echo request's one way besides the delay: its 98-byte frame
#: (56 B payload, ICMP, IP, Ethernet) serialised on three 1 Gbit/s hops (access,
#: bottleneck, access), 784 ns each.
PING_SERIALISATION_NS = 3 * 98 * 8


# --- measurement helpers ------------------------------------------------------------


def proc_stat() -> tuple[int, int]:
    """(steal, total) jiffies of all CPUs."""
    with open("/proc/stat", encoding="ascii") as fh:
        vals = [int(x) for x in fh.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal guest guest_nice; guests are
    # already inside user/nice.
    return vals[7], sum(vals[:8])


class ThreadCpu:
    """Polls this process's threads for the forwarder's (``qoslab-emu``, or
    ``qoslab-emu-N`` when it runs one thread per group of ports) and keeps their last
    utime/stime, summed (the threads exit when the run stops), and the time they were
    runnable but not running (/proc/.../schedstat, second field: run-queue wait). A
    SCHED_FIFO thread that wants more than ``sched_rt_runtime_us`` of each second while
    other tasks want its CPU waits ~50 ms at a time (the fair server since Linux 6.12,
    RT throttling before), and that shows here."""

    def __init__(self) -> None:
        self.user_s = 0.0
        self.sys_s = 0.0
        self.wait_s = 0.0
        self._last: dict[str, tuple[int, int]] = {}
        self._wait: dict[str, int] = {}
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> ThreadCpu:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join(timeout=2)

    def _loop(self) -> None:
        base = Path("/proc/self/task")
        while not self._stop.wait(0.05):
            for task in base.iterdir():
                try:
                    if not (task / "comm").read_text().startswith("qoslab-emu"):
                        continue
                    stat = (task / "stat").read_text()
                    self._wait[task.name] = int((task / "schedstat").read_text().split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                fields = stat.rsplit(")", 1)[1].split()
                # fields[11], [12] = utime, stime (stat fields 14, 15)
                self._last[task.name] = (int(fields[11]), int(fields[12]))
            self.user_s = sum(u for u, _ in self._last.values()) / CLK_TCK
            self.sys_s = sum(s for _, s in self._last.values()) / CLK_TCK
            self.wait_s = sum(self._wait.values()) / 1e9


@dataclass
class Sample:
    goodput_bps: float = 0.0
    steady_bps: float = 0.0
    frames: int = 0
    user_s: float = 0.0
    sys_s: float = 0.0
    #: the forwarder threads' run-queue wait (runnable, not running), s
    wait_s: float = 0.0
    steal: float = 0.0
    ping_ns: list[int] = field(default_factory=list)
    #: echo requests' one-way time, s0's eth0 -> d0's eth0, kernel stamps (VethTaps)
    veth_one_way_ns: list[int] = field(default_factory=list)
    #: the same requests against the model's own schedule: (d0's stamp - s0's stamp) -
    #: (the model's delivery time - the model's arrival time), i.e. the one way minus what
    #: the model put between the frame's arrival and its delivery (delay, serialisation,
    #: queueing); = read_late + released_late
    late_vs_model_ns: list[int] = field(default_factory=list)
    #: the model's arrival time (its s0->r1 ingress capture) - s0's stamp: the veth
    #: crossing into the forwarder's port plus how late the loop read the frame
    read_late_ns: list[int] = field(default_factory=list)
    #: d0's stamp - the model's delivery time (its r2->d0 egress capture: the last bit
    #: leaves the last serialiser; that link has no delay): how late it was released
    released_late_ns: list[int] = field(default_factory=list)
    #: the model's delivery - arrival time - the delay - the serialisation: the modelled
    #: queueing (behind the UDP at the bottleneck), the emulation's output, not an error
    modelled_queue_ns: list[int] = field(default_factory=list)
    lateness_p99_ns: int = 0
    lateness_p999_ns: int = 0
    #: how late the forwarder's timed sleeps (ppoll) woke, p99 (docs/performance.md,
    #: issue 16)
    wake_count: int = 0
    wake_p99_ns: int = 0
    #: per frame delivered to a host: its port's send() began / returned - its due time
    handed_p99_ns: int = 0
    sent_p99_ns: int = 0
    #: share of the queue series' samples after the first second with the policy's queue
    #: empty (the bottleneck then idles unless a frame is being let through)
    queue_empty: float = float("nan")
    policy_drops: int = 0
    retransmits: int = 0
    tx_refused: int = 0
    rx_ring_drops: int = 0
    super_packets: int = 0
    tx_super_packets: int = 0
    tx_super_segments: int = 0
    tx_whole_super_packets: int = 0


def scenario(
    *,
    name: str,
    duration_s: float,
    flows: int,
    rate_bps: int | None,
    policy: str,
    delay: str = "0ms",
    link: str = "10gbit",
    udp_bps: int = 0,
    ping_ms: float = 0.0,
    interval: str = "100ms",
) -> str:
    """A dumbbell with ``flows`` TCP bulk flows (or none), an optional UDP load and
    an optional ping, and one policy on the bottleneck's egress."""
    lines = [
        "[scenario]",
        f'name = "{name}"',
        f'duration = "{duration_s}s"',
        "[topology]",
        "senders = 2",
        "receivers = 2",
        f'access = {{ rate = "{link}", delay = "0ms" }}',
        f'bottleneck = {{ rate = "{link}", delay = "{delay}" }}',
    ]
    if rate_bps is not None:
        # burst: 1 ms at the rate, at least ten 1514-byte frames
        burst = max(rate_bps // 8000, 15140)
        lines.append("[policy.bottleneck.egress]")
        if policy == "tbf":
            lines.append(
                f'shape = {{ kind = "tbf", rate = "{rate_bps}bit", burst = "{burst}B",'
                ' latency = "20ms" }'
            )
        else:
            lines.append(
                f'police = {{ kind = "linux-police", rate = "{rate_bps}bit", burst = "{burst}B" }}'
            )
    if flows:
        lines += ["[[traffic]]", 'kind = "tcp-bulk"', f"flows = {flows}", 'from = "s0"']
    if udp_bps:
        lines += ["[[traffic]]", 'kind = "udp"', 'from = "s1"', f'rate = "{udp_bps}bit"']
    if ping_ms:
        lines += ["[[traffic]]", 'kind = "ping"', 'from = "s0"', f'interval = "{ping_ms}ms"']
    lines += ["[record]", f'interval = "{interval}"', 'series = ["goodput", "ping", "queue"]']
    return "\n".join(lines) + "\n"


def run_emulate(
    text: str,
    backend: str,
    work: Path,
    offload: bool = False,
    threads: int = 0,
    gro: bool = False,
    rt_unthrottle: bool = False,
    busy_poll: bool = False,
    veth_one_way: bool = False,
    idle_poll: bool = False,
) -> Sample:
    from qoslab.emulate.run import emulate

    path = work / "scenario.toml"
    path.write_text(text, encoding="utf-8")
    # dumpcap and tshark come with Wireshark's command-line tools; without them the veth
    # columns stay empty.
    have_taps = shutil.which("dumpcap") is not None and shutil.which("tshark") is not None
    taps = VethTaps(work) if veth_one_way and have_taps else None
    # The model's own schedule for the pings: captures of the first hop out of s0 at its
    # ingress (stamped with the model's arrival time) and of the last hop into d0 at its
    # egress (the model's delivery time); both carry the pings only.
    model_pcaps = (work / "model-s0-r1.pcap", work / "model-r2-d0.pcap")
    for f in model_pcaps:
        f.unlink(missing_ok=True)
    capture = (
        [
            (VethTaps.MODEL_FIRST_HOP, "ingress", str(model_pcaps[0])),
            (VethTaps.MODEL_LAST_HOP, "egress", str(model_pcaps[1])),
        ]
        if taps
        else None
    )
    s0, t0 = proc_stat()
    try:
        with ThreadCpu() as cpu:
            res = emulate(
                str(path),
                backend=backend,
                offload=offload,
                threads=threads,
                gro=gro,
                rt_unthrottle=rt_unthrottle,
                busy_poll=busy_poll,
                idle_poll=idle_poll,
                capture=capture,
                progress=taps.progress if taps else None,
            )
    finally:
        joined = taps.finish(*model_pcaps) if taps else {}
    s1, t1 = proc_stat()
    raw = res.raw
    fwd = raw["emulation"]["forwarder"]
    tcp = [f for f in raw["flows"] if f["protocol"] == "tcp"]
    out = Sample(
        goodput_bps=sum(float(f["goodput_bps"]) for f in tcp),
        frames=int(fwd.get("frames_out") or 0),
        user_s=cpu.user_s,
        sys_s=cpu.sys_s,
        wait_s=cpu.wait_s,
        steal=(s1 - s0) / max(1, t1 - t0),
        lateness_p99_ns=int((fwd.get("timing") or {}).get("p99_ns", 0)),
        lateness_p999_ns=int((fwd.get("timing") or {}).get("p999_ns", 0)),
        wake_count=int((fwd.get("timing") or {}).get("wake_count", 0)),
        wake_p99_ns=int((fwd.get("timing") or {}).get("wake_p99_ns", 0)),
        handed_p99_ns=int((fwd.get("timing") or {}).get("handed_p99_ns", 0)),
        sent_p99_ns=int((fwd.get("timing") or {}).get("sent_p99_ns", 0)),
        policy_drops=sum(int(p.get("packets_dropped") or 0) for p in raw.get("policies", [])),
        retransmits=sum(int(f.get("retransmits") or 0) for f in tcp),
        tx_refused=int(fwd.get("tx_refused") or 0),
        rx_ring_drops=int(fwd.get("rx_ring_drops") or 0),
        super_packets=int(fwd.get("super_packets") or 0),
        tx_super_packets=int(fwd.get("tx_super_packets") or 0),
        tx_super_segments=int(fwd.get("tx_super_segments") or 0),
        tx_whole_super_packets=int(fwd.get("tx_whole_super_packets") or 0),
    )
    g = raw["series"].get("goodput", {})
    if len(g.get("time_ns", [])):
        ids = {f["id"] for f in tcp}
        dur = int(raw["duration_ns"])
        per_flow: dict[int, list[tuple[int, int]]] = {}
        for t, fl, b in zip(g["time_ns"], g["flow"], g["bytes"], strict=False):
            if int(fl) in ids:
                per_flow.setdefault(int(fl), []).append((int(t), int(b)))
        # Each entry is one iperf3 interval ending at t; its length is the time since the
        # flow's previous entry (iperf3's intervals are ~100 ms, never shorter — `-i` 0.1
        # is its floor — and not exactly 100 ms), not the scenario's record interval.
        # Intervals ending after the first second (slow start, the bucket's initial burst)
        # and before the last one (iperf3's last can be partial) count.
        steady = 0.0
        for rows in per_flow.values():
            rows.sort()
            sent = span = 0
            for (t0, _), (t1, b1) in itertools.pairwise(rows):
                if 1_100_000_000 <= t1 <= dur - 100_000_000 and t1 > t0:
                    sent += b1
                    span += t1 - t0
            if span:
                steady += sent * 8e9 / span
        out.steady_bps = steady
    qs = raw["series"].get("queue", {})
    if len(qs.get("time_ns", [])):
        after = [int(b) for t, b in zip(qs["time_ns"], qs["bytes"], strict=False) if t > 1e9]
        if after:
            out.queue_empty = sum(1 for b in after if b == 0) / len(after)
    pings = raw["series"].get("ping", {})
    out.ping_ns = [int(x) for x in pings.get("rtt_ns", [])]
    out.veth_one_way_ns = joined.get("one_way", [])
    out.late_vs_model_ns = joined.get("vs_model", [])
    out.read_late_ns = joined.get("read_late", [])
    out.released_late_ns = joined.get("released_late", [])
    out.modelled_queue_ns = joined.get("queued", [])
    return out


class VethTaps:
    """The pings' one-way time through the emulator as the hosts' kernels stamp it:
    ``dumpcap`` on s0's and d0's eth0 (ICMP only), started from the run's first progress
    call (the namespaces exist then) and stopped by its own duration before the run's
    end; each echo request's stamp leaving s0 (when the kernel hands it to the veth) is
    matched with its stamp arriving at d0 (when d0's stack takes it) by ICMP id and
    sequence. Outside the ping program, so its scheduling and the reply's way back are
    not in it: what is left is the delay line, the modelled serialisation and queueing,
    and the forwarder's own lateness."""

    HOSTS = ("s0", "d0")
    #: The first hop out of s0 (captured at ingress) and the last into d0 (at egress):
    #: the model's own arrival and delivery times of each ping.
    MODEL_FIRST_HOP = "s0->r1"
    MODEL_LAST_HOP = "r2->d0"

    def __init__(self, work: Path) -> None:
        self.work = work
        self.procs: list[subprocess.Popen[bytes]] = []
        self.files: dict[str, Path] = {}
        self.started = False

    def progress(self, done_ns: int, total_ns: int, _live: dict[str, Any]) -> None:
        if self.started or done_ns > total_ns // 4:
            return
        from qoslab.emulate.netns import PREFIX

        self.started = True
        # Stop a second before the scenario's end, while the veths still exist.
        left_s = max(1, int((total_ns - done_ns) / 1e9) - 1)
        for h in self.HOSTS:
            f = self.work / f"icmp-{h}.pcapng"
            f.unlink(missing_ok=True)
            self.files[h] = f
            ns = f"{PREFIX}{os.getpid()}-{h}"
            argv = ["ip", "netns", "exec", ns, "dumpcap", "-q", "-i", "eth0", "-f", "icmp"]
            argv += ["-a", f"duration:{left_s}", "-w", str(f)]
            self.procs.append(
                subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            )

    def finish(self, arrived: Path, delivered: Path) -> dict[str, list[int]]:
        """Per echo request seen at both veths, ns: ``one_way`` (s0 -> d0); and for those
        also in the model's captures (``arrived``: the first hop's ingress, ``delivered``:
        the last hop's egress), ``vs_model`` = ``read_late`` + ``released_late`` and the
        modelled ``queued`` (see :class:`Sample`)."""
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if not self.started or any(not f.exists() for f in self.files.values()):
            return {}
        a, b = (echo_requests(self.files[h]) for h in self.HOSTS)
        ma, mb = (echo_requests(f) if f.exists() else {} for f in (arrived, delivered))
        keys = [k for k in a if k in b]
        both = [k for k in keys if k in ma and k in mb]
        return {
            "one_way": [b[k] - a[k] for k in keys],
            "vs_model": [(b[k] - a[k]) - (mb[k] - ma[k]) for k in both],
            "read_late": [ma[k] - a[k] for k in both],
            "released_late": [b[k] - mb[k] for k in both],
            "queued": [mb[k] - ma[k] - DELAY_NS - PING_SERIALISATION_NS for k in both],
        }


def echo_requests(path: Path) -> dict[tuple[str, str], int]:
    """ICMP echo requests in a capture: (ident, seq) -> time stamp, ns since the epoch."""
    fields = ["frame.time_epoch", "icmp.ident", "icmp.seq"]
    argv = ["tshark", "-r", str(path), "-Y", "icmp.type == 8", "-T", "fields"]
    for x in fields:
        argv += ["-e", x]
    text = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    out: dict[tuple[str, str], int] = {}
    for line in text.splitlines():
        t, ident, seq = line.split("\t")[:3]
        sec, _, frac = t.partition(".")
        out[(ident, seq)] = int(sec) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])
    return out


def kernel_forward_ping(duration_s: float, interval_ms: float, load_bps: int = 0) -> Sample:
    """ping s0 -> d0 through plain kernel forwarding: two host namespaces (the
    emulator's addressing, offloads off) joined by a bridge in a third."""
    from qoslab.emulate.netns import Netns, run_cmd
    from qoslab.emulate.traffic import parse_ping

    net = Netns(hosts=["s0", "d0"], tag=f"{os.getpid()}kb")
    s0, t0 = proc_stat()
    try:
        net.build()
        run_cmd(["ip", "-n", net.net, "link", "add", "br0", "type", "bridge"])
        for h in net.hosts:
            run_cmd(["ip", "-n", net.net, "link", "set", net.port(h), "master", "br0"])
        run_cmd(["ip", "-n", net.net, "link", "set", "br0", "up"])
        count = max(1, int(duration_s * 1000 / interval_ms))
        p = net.popen(
            "s0",
            [
                "ping", "-n", "-D", "-i", f"{interval_ms / 1000:.3f}", "-c", str(count),
                "-s", "56", net.ip("d0"),
            ],
        )  # fmt: skip
        out, _ = p.communicate(timeout=duration_s + 30)
        replies, _, _ = parse_ping(out)
        s1, t1 = proc_stat()
        return Sample(
            ping_ns=[r[2] for r in replies], steal=(s1 - s0) / max(1, t1 - t0), frames=count
        )
    finally:
        net.close()


def pct(a: list[int], q: float) -> float:
    """Nearest-rank percentile."""
    if not a:
        return float("nan")
    s = sorted(a)
    return float(s[max(0, min(len(s) - 1, int(-(-q * len(s) // 1)) - 1))])


@dataclass
class Case:
    key: str
    samples: list[Sample] = field(default_factory=list)
    rejected: int = 0


def repeat(
    key: str, fn: Callable[[], Sample], runs: int, tries: int, max_steal: float, log: bool
) -> Case:
    c = Case(key)
    attempts = 0
    while len(c.samples) < runs and attempts < runs + tries:
        attempts += 1
        s = fn()
        if s.steal > max_steal:
            c.rejected += 1
            if log:
                print(f"  {key}: steal {s.steal:.1%} > {max_steal:.0%}, repeated", file=sys.stderr)
            continue
        c.samples.append(s)
        if log:
            print(
                f"  {key}: {s.goodput_bps / 1e6:.1f} Mbit/s (steady {s.steady_bps / 1e6:.1f}),"
                f" {len(s.ping_ns)} pings, steal {s.steal:.1%}",
                file=sys.stderr,
            )
    return c


def stat(vals: list[float], scale: float = 1.0, fmt: str = "{:.1f}") -> str:
    """median (min-max)."""
    if not vals:
        return "—"
    v = [x / scale for x in vals]
    med = statistics.median(v)
    if len(v) == 1:
        return fmt.format(med)
    return f"{fmt.format(med)} ({fmt.format(min(v))}-{fmt.format(max(v))})"


# --- the machine's own latency floor (`--floor`) ------------------------------------

#: cyclictest's wake-up period, µs: 5 000 wake-ups a second per CPU, the order of the
#: delay line's releases at the benchmark's loads.
FLOOR_INTERVAL_US = 200
#: cyclictest's histogram range, µs (later wake-ups count as overflows, in the max).
FLOOR_HIST_US = 20_000


def delay_line_scenario(duration_s: float) -> str:
    """The delay line's load: 4 ms each way on a 1 Gbit/s bottleneck, 300 Mbit/s of UDP
    beside a ping every 10 ms (the delay rows and the floor's loaded row)."""
    return scenario(
        name="delay",
        duration_s=duration_s,
        flows=0,
        rate_bps=None,
        policy="",
        delay=f"{DELAY_NS // 1_000_000}ms",
        link="1gbit",
        udp_bps=300_000_000,
        ping_ms=10,
    )


@dataclass
class Floor:
    """One cyclictest window: its wake-up latency histogram (all CPUs together), the
    worst, and the CPU steal over the same window."""

    hist: dict[int, int] = field(default_factory=dict)
    overflows: int = 0
    max_us: int = 0
    steal: float = 0.0

    def quantile(self, q: float) -> float:
        """Nearest-rank quantile, µs (an overflow counts as the max)."""
        n = sum(self.hist.values()) + self.overflows
        if n == 0:
            return float("nan")
        rank, seen = max(1, -(-q * n // 1)), 0
        for us in sorted(self.hist):
            seen += self.hist[us]
            if seen >= rank:
                return float(us)
        return float(self.max_us)


class RtTool:
    """One rt-tests tool (cyclictest or oslat) run beside an emulation: started once the
    run is under way, stopped a second before its end (the load is then still running),
    its JSON report read with the steal over the same window."""

    name = ""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.proc: subprocess.Popen[bytes] | None = None
        self.json = work / f"{self.name}.json"
        self.stat0 = (0, 0)

    def argv(self, seconds: int) -> list[str]:
        raise NotImplementedError

    def start(self, seconds: int) -> None:
        self.json.unlink(missing_ok=True)
        self.stat0 = proc_stat()
        self.proc = subprocess.Popen(
            self.argv(seconds), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )

    def progress(self, done_ns: int, total_ns: int, _live: dict[str, Any]) -> None:
        """As an emulation's progress callback."""
        if self.proc is None and done_ns > 500_000_000:
            self.start(max(1, int((total_ns - done_ns) / 1e9) - 1))

    def report(self) -> tuple[dict[str, Any], float]:
        """Waits for the tool; its JSON report and the steal share over its window."""
        if self.proc is None:
            raise RuntimeError(f"{self.name} never started (the run ended too early)")
        try:
            _, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        s1, t1 = proc_stat()
        if self.proc.returncode != 0 or not self.json.exists():
            msg = err.decode(errors="replace").strip().splitlines()
            raise RuntimeError(f"{self.name} failed: {msg[-1] if msg else self.proc.returncode}")
        doc = json.loads(self.json.read_text(encoding="utf-8"))
        return doc, (s1 - self.stat0[0]) / max(1, t1 - self.stat0[1])


class Cyclictest(RtTool):
    """rt-tests' cyclictest on every CPU (``-S``: one SCHED_FIFO thread per CPU, pinned),
    priority 99, a wake-up every :data:`FLOOR_INTERVAL_US` on an absolute timer, memory
    locked; ``--default-system``: it leaves /dev/cpu_dma_latency alone, so the CPUs idle
    as they do for the forwarder's default form. What it measures is the machine's own
    wake-up latency (timer interrupt, hypervisor, interrupts-off and softirq sections, the
    scheduler): no userspace thread that sleeps on a timer here is woken sooner."""

    name = "cyclictest"

    def argv(self, seconds: int) -> list[str]:
        argv = ["cyclictest", "-S", "-m", "-p", "99", "-i", str(FLOOR_INTERVAL_US)]
        argv += ["-D", str(seconds), "-q", "-h", str(FLOOR_HIST_US), "--default-system"]
        argv += ["--histfile", str(self.work / "cyclictest.hist"), "--json", str(self.json)]
        return argv

    def finish(self) -> Floor:
        doc, steal = self.report()
        f = Floor(steal=steal)
        for t in doc["thread"].values():
            for us, n in t.get("histogram", {}).items():
                f.hist[int(us)] = f.hist.get(int(us), 0) + int(n)
            f.max_us = max(f.max_us, int(t["max"]))
            f.overflows += int(t["cycles"]) - sum(int(n) for n in t.get("histogram", {}).values())
        return f


#: oslat's histogram: 1 µs buckets up to this many µs (longer stretches land in the last).
SPIN_BUCKETS = 1024
#: The delay line's target: a spinning thread held off longer than this at a frame's due
#: time releases it late by more than issue 16 allows.
TARGET_US = 20


@dataclass
class Spin:
    """One oslat window on one CPU: how long a spinning thread at SCHED_FIFO 99 was held
    off between two of its reads of the clock (µs histogram), and derived from it the
    share of instants a frame due then would be released more than :data:`TARGET_US`
    late, sum over stretches g > target of (g - target) / the window (stretches past the
    histogram's last bucket counted as that bucket: a lower bound)."""

    hist: dict[int, int] = field(default_factory=dict)
    seconds: float = 0.0
    max_us: int = 0
    steal: float = 0.0

    def over(self, us: int = TARGET_US) -> float:
        """Stretches longer than ``us`` per second."""
        return sum(n for g, n in self.hist.items() if g > us) / max(self.seconds, 1e-9)

    def late_share(self, us: int = TARGET_US) -> float:
        late = sum((g - us) * n for g, n in self.hist.items() if g > us)
        return late / max(self.seconds * 1e6, 1e-9)


class Oslat(RtTool):
    """rt-tests' oslat: one thread spinning on CPU ``cpu`` at SCHED_FIFO 99 (nothing in
    userspace preempts it), reading the clock in a loop; the gaps between two reads are
    the times the machine took the CPU away (interrupts, the tick, the hypervisor): what a
    forwarder that never sleeps loses at the very least."""

    name = "oslat"

    def __init__(self, work: Path, cpu: int) -> None:
        super().__init__(work)
        self.cpu = cpu

    def argv(self, seconds: int) -> list[str]:
        main = 0 if self.cpu != 0 else 1
        argv = ["oslat", "-c", str(self.cpu), "-C", str(main), "-f", "99", "-D", str(seconds)]
        argv += ["-b", str(SPIN_BUCKETS), "-z", "-q", "--json", str(self.json)]
        return argv

    def finish(self) -> Spin:
        doc, steal = self.report()
        (t,) = doc["thread"].values()
        return Spin(
            hist={int(g): int(n) for g, n in t.get("histogram", {}).items() if int(n)},
            seconds=float(t["duration"]),
            max_us=int(t["max"]),
            steal=steal,
        )


def probe_idle(probe: Cyclictest | Oslat, seconds: int) -> Floor | Spin:
    """``probe`` with no emulation running (whatever else the machine runs)."""
    probe.start(seconds)
    return probe.finish()


def probe_loaded(probe: Cyclictest | Oslat, text: str, work: Path) -> Floor | Spin:
    """``probe`` beside an emulation of ``text`` in the default form (one forwarder thread,
    no option), from half a second into the run to a second before its end: its load is
    iperf3 and ping through the forwarder."""
    from qoslab.emulate.run import emulate

    path = work / "scenario.toml"
    path.write_text(text, encoding="utf-8")
    try:
        emulate(str(path), threads=1, progress=probe.progress)
    except BaseException:
        if probe.proc is not None and probe.proc.poll() is None:
            probe.proc.kill()
            probe.proc.wait()
        raise
    return probe.finish()


def measure_floor(args: argparse.Namespace) -> dict[str, tuple[list[Floor], list[Spin]]]:
    """``args.runs`` cyclictest windows and as many oslat windows (on the last CPU) per
    load, alternated (idle, delay-line load, 1 Gbit/s TCP load, idle, ...), so that a
    change in the host hits every row."""
    for tool in ("cyclictest", "oslat"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} not found (Debian: apt-get install rt-tests)")
    d = args.duration
    loads = {
        "idle (no emulation)": None,
        "delay line: 300 Mbit/s UDP + ping, 4 ms": delay_line_scenario(d),
        "TBF 1 Gbit/s, 1 TCP flow": scenario(
            name="linerate", duration_s=d, flows=1, rate_bps=1_000_000_000, policy="tbf"
        ),
    }
    out: dict[str, tuple[list[Floor], list[Spin]]] = {k: ([], []) for k in loads}
    cpu = (os.cpu_count() or 1) - 1
    work = Path(tempfile.mkdtemp(prefix="qoslab-emu-floor-"))
    try:
        for i in range(args.runs):
            for key, text in loads.items():
                for probe in (Cyclictest(work), Oslat(work, cpu)):
                    if not args.quiet:
                        name = type(probe).__name__.lower()
                        print(f"floor: {name}, {key}, run {i + 1}/{args.runs} …", file=sys.stderr)
                    if text is None:
                        got = probe_idle(probe, max(1, int(d) - 1))
                    else:
                        got = probe_loaded(probe, text, work)
                    if isinstance(got, Floor):
                        out[key][0].append(got)
                    else:
                        out[key][1].append(got)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def render_floor(
    floors: dict[str, tuple[list[Floor], list[Spin]]], args: argparse.Namespace
) -> str:
    out = [
        f"Taken {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on "
        f"{platform.node() or 'this machine'} ({os.cpu_count()} vCPU, Linux "
        f"{platform.release()}), **{args.label}**; {args.runs} window(s) of about"
        f" {max(1, int(args.duration) - 1)} s per row and tool, alternated, median (min-max);"
        " the loaded rows beside `qoslab emulate` in its default form (one forwarder"
        " thread, no option); steal from /proc/stat over the same window. Regenerate with"
        " `sudo .venv/bin/python benchmarks/emu_linerate.py --floor`.",
        "",
        "A thread sleeping on a timer: cyclictest (rt-tests) on every CPU, SCHED_FIFO 99,"
        f" a wake-up every {FLOOR_INTERVAL_US} µs, `--default-system` (the CPUs idle as"
        " they do for the default form): how late after its due time it runs, µs, both"
        " CPUs together:",
        "",
        "| load | wake-up late p50 | p99 | p99.9 | max | wake-ups | steal |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for key, (fs, _) in floors.items():

        def col(q: float, fs: list[Floor] = fs) -> str:
            return stat([f.quantile(q) for f in fs], fmt="{:.0f}")

        n = [float(sum(f.hist.values()) + f.overflows) for f in fs]
        out.append(
            f"| {key} | {col(0.5)} | {col(0.99)} | {col(0.999)}"
            f" | {stat([float(f.max_us) for f in fs], fmt='{:.0f}')}"
            f" | {stat(n, fmt='{:.0f}')} | {stat([f.steal * 100 for f in fs], fmt='{:.1f} %')} |"
        )
    cpu = (os.cpu_count() or 1) - 1
    out += [
        "",
        f"A thread that never sleeps: oslat (rt-tests) spinning on CPU {cpu}, SCHED_FIFO 99:"
        f" stretches longer than {TARGET_US} µs the machine held it off, per second, and the"
        f" share of instants at which a frame due would be released more than {TARGET_US} µs"
        f" late (sum of (stretch - {TARGET_US} µs) / window; stretches over"
        f" {SPIN_BUCKETS} µs counted as {SPIN_BUCKETS}: a lower bound; above 1 % no"
        " forwarder meets the target at p99):",
        "",
        f"| load | held off > {TARGET_US} µs, /s | instants late > {TARGET_US} µs"
        " | longest, µs | steal |",
        "|---|---:|---:|---:|---:|",
    ]
    for key, (_, ss) in floors.items():
        out.append(
            f"| {key} | {stat([x.over() for x in ss], fmt='{:.0f}')}"
            f" | {stat([x.late_share() * 100 for x in ss], fmt='{:.2f} %')}"
            f" | {stat([float(x.max_us) for x in ss], fmt='{:.0f}')}"
            f" | {stat([x.steal * 100 for x in ss], fmt='{:.1f} %')} |"
        )
    return "\n".join(out) + "\n"


# --- the benchmark ------------------------------------------------------------------


def measure(args: argparse.Namespace) -> dict[str, Case]:
    """Every case ``args`` selects, in a scratch directory removed after (scenario files,
    the veth and model captures of the delay line)."""
    work = Path(tempfile.mkdtemp(prefix="qoslab-emu-bench-"))
    try:
        return measure_in(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure_in(args: argparse.Namespace, work: Path) -> dict[str, Case]:
    cases: dict[str, Case] = {}
    d = args.duration

    def add(key: str, fn: Callable[[], Sample]) -> None:
        if args.only and not any(key.startswith(o) for o in args.only):
            return
        if not args.quiet:
            print(f"{key} …", file=sys.stderr)
        cases[key] = repeat(key, fn, args.runs, args.tries, args.max_steal, not args.quiet)

    def emu(
        text: str,
        backend: str = "userspace",
        offload: bool = False,
        threads: int | None = None,
        gro: bool = False,
        rt_unthrottle: bool = False,
        busy_poll: bool = False,
        veth_one_way: bool = False,
        idle_poll: bool = False,
    ) -> Callable[[], Sample]:
        n = args.threads if threads is None else threads
        return lambda: run_emulate(
            text,
            backend,
            work,
            offload,
            n,
            gro,
            rt_unthrottle,
            busy_poll,
            veth_one_way,
            idle_poll,
        )

    gbit = 1_000_000_000

    def linerate(policy: str, flows: int) -> str:
        # the 1 Gbit/s cases record every 10 ms: the queue-empty share needs it
        return scenario(
            name="linerate",
            duration_s=d,
            flows=flows,
            rate_bps=gbit,
            policy=policy,
            interval="10ms",
        )

    for policy in ("tbf", "police"):
        for flows in (1, 4):
            text = linerate(policy, flows)
            add(f"goodput/{policy}/{flows}/userspace", emu(text))
            if policy == "tbf":
                add(f"goodput/{policy}/{flows}/kernel", emu(text, "kernel"))
    for rate in (1_000_000, 10_000_000, 100_000_000):
        text = scenario(name="accuracy", duration_s=d, flows=1, rate_bps=rate, policy="tbf")
        add(f"accuracy/{rate}/userspace", emu(text))
        add(f"accuracy/{rate}/kernel", emu(text, "kernel"))
    idle = scenario(name="idle", duration_s=d, flows=0, rate_bps=None, policy="", ping_ms=10)
    add("latency/userspace", emu(idle))
    if args.threads != 1:
        add("latency/threads1", emu(idle, threads=1))
    # The default form (one thread) never sleeping (`--busy-poll`), and with the kernel's
    # RT throttling lifted as well (a spinning SCHED_FIFO thread wants its whole CPU).
    add("latency/busy-poll", emu(idle, threads=1, busy_poll=True))
    add("latency/busy-poll-rt", emu(idle, threads=1, busy_poll=True, rt_unthrottle=True))
    # The default form with idle CPUs polling (`--idle-poll`: PM QoS CPU latency 0).
    add("latency/idle-poll", emu(idle, threads=1, idle_poll=True))
    add("latency/kernel-forwarding", lambda: kernel_forward_ping(d, 10))
    loaded = delay_line_scenario(d)
    add("delay/userspace", emu(loaded, veth_one_way=True))
    if args.threads != 1:
        add("delay/threads1", emu(loaded, threads=1, veth_one_way=True))
    add("delay/busy-poll", emu(loaded, threads=1, busy_poll=True, veth_one_way=True))
    add(
        "delay/busy-poll-rt",
        emu(loaded, threads=1, busy_poll=True, rt_unthrottle=True, veth_one_way=True),
    )
    add("delay/idle-poll", emu(loaded, threads=1, idle_poll=True, veth_one_way=True))
    for flows in (16, 64):
        text = scenario(name="flows", duration_s=d, flows=flows, rate_bps=gbit, policy="tbf")
        add(f"goodput/tbf/{flows}/userspace", emu(text))
    if args.threads != 1:
        # The same forwarder in one thread: what one thread per direction changes.
        for policy in ("tbf", "police"):
            for flows in (1, 4):
                text = linerate(policy, flows)
                add(f"threads1/{policy}/{flows}", emu(text, threads=1))
    # Receiving hosts with GRO in a NAPI thread (`qoslab emulate --gro on`), one forwarder
    # thread (the default of `qoslab emulate`); the kernel-tbf column with the same hosts.
    for policy in ("tbf", "police"):
        for flows in (1, 4):
            text = linerate(policy, flows)
            add(f"gro/{policy}/{flows}/userspace", emu(text, threads=1, gro=True))
            if policy == "tbf":
                add(f"gro/{policy}/{flows}/kernel", emu(text, "kernel", threads=1, gro=True))
            # ... and with the kernel's RT throttling lifted (`--rt-unthrottle`), so the
            # SCHED_FIFO forwarder is not held off 50 ms of every second.
            add(
                f"gro-rt/{policy}/{flows}/userspace",
                emu(text, threads=1, gro=True, rt_unthrottle=True),
            )
            if policy == "tbf":
                add(
                    f"gro-rt/{policy}/{flows}/kernel",
                    emu(text, "kernel", threads=1, gro=True, rt_unthrottle=True),
                )
    for flows in (1, 4):
        text = scenario(
            name="gso", duration_s=d, flows=flows, rate_bps=10 * gbit, policy="tbf", link="40gbit"
        )
        add(f"gso/tbf/{flows}/userspace", emu(text, offload=True))
        if args.threads != 1:
            # GSO: the forwarder, not the hosts, is the limit; does a second
            # thread (one per direction) help there?
            add(f"gso1/tbf/{flows}", emu(text, offload=True, threads=1))
    # The GSO capacity: a 10 Gbit/s TBF caps goodput at 9.564 Gbit/s, below issue 16's
    # 10 Gbit/s target, so the target is read through a TBF that charges every wire
    # segment but does not bind (20 Gbit/s), and through the bare 40 Gbit/s links.
    for flows in (1, 4):
        for key, rate in (("tbf20", 20 * gbit), ("none", None)):
            text = scenario(
                name="gso", duration_s=d, flows=flows, rate_bps=rate, policy="tbf", link="40gbit"
            )
            add(f"gso/{key}/{flows}", emu(text, offload=True, threads=1))
    return cases


def render(cases: dict[str, Case], args: argparse.Namespace, took_s: float) -> str:
    def get(key: str) -> Case:
        return cases.get(key, Case(key))

    def kept(c: Case) -> str:
        return f"{len(c.samples)}" + (f" (+{c.rejected} over steal)" if c.rejected else "")

    gbit = 1e9
    ideal = gbit * PAYLOAD_SHARE
    out = [
        BEGIN,
        "",
        f"Taken {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on "
        f"{platform.node() or 'this machine'} ({os.cpu_count()} vCPU, Linux "
        f"{platform.release()}), **{args.label}**; {args.runs} run(s) of {args.duration:g} s"
        f" per case, median (min-max), runs with CPU steal above {args.max_steal:.0%}"
        f" repeated; {took_s / 60:.1f} min in all. Regenerate with",
        "`sudo .venv/bin/python benchmarks/emu_linerate.py --write docs/performance.md`.",
        "",
        "Goodput through a policy at 1 Gbit/s (ideal = rate x 1448/1514 ="
        f" {ideal / 1e6:.1f} Mbit/s; kernel = the same forwarder with the policy in the"
        " kernel's own tbf qdisc, `--backend kernel`; the kernel here has no police action):",
        "",
        "| policy | flows | userspace Mbit/s | of ideal | kernel tbf Mbit/s | of ideal | runs |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for policy in ("tbf", "police"):
        for flows in (1, 4):
            u = get(f"goodput/{policy}/{flows}/userspace")
            k = get(f"goodput/{policy}/{flows}/kernel")
            ug = [s.goodput_bps for s in u.samples]
            kg = [s.goodput_bps for s in k.samples]
            out.append(
                f"| {policy} | {flows} | {stat(ug, 1e6)} | {stat(ug, ideal / 100, '{:.1f} %')}"
                f" | {stat(kg, 1e6)} | {stat(kg, ideal / 100, '{:.1f} %')} | {kept(u)} |"
            )
    out += [
        "",
        "TBF rate accuracy, 1 flow, goodput after the first second (100 ms series):",
        "",
        "| rate | ideal Mbit/s | userspace | of ideal | kernel tbf | of ideal |",
        "|---|---:|---:|---:|---:|---:|",
    ]

    def accuracy_row(label: str, rate: float, u: Case, k: Case) -> str:
        i = rate * PAYLOAD_SHARE
        ug = [s.steady_bps for s in u.samples]
        kg = [s.steady_bps for s in k.samples]
        return (
            f"| {label} | {i / 1e6:.3f} | {stat(ug, 1e6, '{:.3f}')}"
            f" | {stat(ug, i / 100, '{:.2f} %')} | {stat(kg, 1e6, '{:.3f}')}"
            f" | {stat(kg, i / 100, '{:.2f} %')} |"
        )

    for rate in (1_000_000, 10_000_000, 100_000_000, 1_000_000_000):
        key = "goodput/tbf/1" if rate == gbit else f"accuracy/{rate}"
        u, k = get(f"{key}/userspace"), get(f"{key}/kernel")
        out.append(accuracy_row(f"{rate / 1e6:g} Mbit/s", rate, u, k))
    ru, rk = get("gro-rt/tbf/1/userspace"), get("gro-rt/tbf/1/kernel")
    if ru.samples:
        out.append(accuracy_row("1000 Mbit/s, GRO hosts, RT unthrottled", gbit, ru, rk))
    lu, lk = get("latency/userspace"), get("latency/kernel-forwarding")

    def q(c: Case, p: float) -> list[float]:
        return [pct(s.ping_ns, p) for s in c.samples if s.ping_ns]

    # The forwarder's forms measured idle and under load: (label, suffix of the
    # latency/ and delay/ keys). The main rows are `--threads` as given; one thread is
    # `qoslab emulate`'s default.
    forms = [
        (f"threads={args.threads}", "userspace"),
        ("threads=1 (default)", "threads1"),
        ("threads=1, --busy-poll", "busy-poll"),
        ("threads=1, --busy-poll --rt-unthrottle", "busy-poll-rt"),
        ("threads=1, --idle-poll", "idle-poll"),
    ]
    if args.threads == 1:
        forms.pop(1)
    out += [
        "",
        "Latency (ping every 10 ms, 56-byte payload; µs). Added = the form's RTT minus kernel"
        " forwarding's, run by run:",
        "",
        "| path | RTT p50 | RTT p99 | added p50 | added p99 | runs |",
        "|---|---:|---:|---:|---:|---:|",
        f"| kernel forwarding (bridge) | {stat(q(lk, 0.5), 1e3)} | {stat(q(lk, 0.99), 1e3)}"
        f" | | | {kept(lk)} |",
    ]
    for label, key in forms:
        c = get(f"latency/{key}")
        if not c.samples:
            continue
        a50 = [a - b for a, b in zip(q(c, 0.5), q(lk, 0.5), strict=False)]
        a99 = [a - b for a, b in zip(q(c, 0.99), q(lk, 0.99), strict=False)]
        out.append(
            f"| qoslab emulate, idle, {label} | {stat(q(c, 0.5), 1e3)} | {stat(q(c, 0.99), 1e3)}"
            f" | {stat(a50, 1e3)} | {stat(a99, 1e3)} | {kept(c)} |"
        )
    out += [
        "",
        f"Delay line under load ({DELAY_NS // 1_000_000} ms each way on a 1 Gbit/s bottleneck,"
        " 300 Mbit/s UDP alongside the ping): one-way error = (RTT -"
        f" {2 * DELAY_NS // 1_000_000} ms - the same form's idle RTT median) / 2, µs (it"
        " includes the path's own jitter, and up to one UDP frame's 12 µs of modelled"
        " queueing at the bottleneck for the pings that meet one); at the veths: each echo"
        " request's one way from s0's eth0 to d0's eth0 as the hosts' kernels stamp it"
        " (dumpcap), minus the delay and its 2.4 µs of modelled serialisation, µs (no"
        " ping program, no way back: the delay line, the modelled queueing behind the UDP"
        " at the bottleneck — the emulation's correct output, not an error — and the"
        " forwarder's lateness; `requests` = those matched); **against the model's"
        " schedule** (the delay line's own error, what issue 16's ±20 µs is read on): the"
        " same one way minus what the model itself put between the frame's arrival and its"
        " delivery (the emulator's captures of the first hop at ingress and the last hop"
        " at egress, the model's clock: the delay, the serialisation and the modelled"
        " queueing), µs, split into read late (the model's arrival time - s0's stamp: the"
        " veth crossing and how late the loop read the frame) and released late (d0's"
        " stamp - the model's delivery time), p99, and the modelled queueing (the model's"
        " delivery - arrival - delay - serialisation; the emulation's output, not an"
        " error), p99; the forwarder's own"
        " event lateness p99, how late its timed sleeps woke (p99), and how late after"
        " their due time the frames it delivered were handed to their port's send() and"
        " sent, p99 (its own clock: sanity checks and a breakdown, not outside"
        " measurements), how long per second it was runnable but not running"
        " (schedstat), and the forwarder threads' CPU (user + system) in % of one CPU:",
        "",
        "| forwarder | one-way error p50 | p99 | at the veths, vs configured delay: error p50"
        " | p99 | requests | **vs the model's schedule: late p50** | **p99**"
        " | read late p99 | released late p99 | modelled queueing p99"
        " | forwarder lateness p99 | sleep wake-up late p99"
        " | handed late p99 | sent late p99 | forwarder waiting, ms/s | forwarder CPU"
        " | runs |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, key in forms:
        dl, idle_c = get(f"delay/{key}"), get(f"latency/{key}")
        if not dl.samples:
            continue
        if q(idle_c, 0.5):
            idle50 = statistics.median(q(idle_c, 0.5))
            one_way = [
                [(x - 2 * DELAY_NS - idle50) / 2 for x in s.ping_ns]
                for s in dl.samples
                if s.ping_ns
            ]
            e50 = stat([pct([int(v) for v in o], 0.5) for o in one_way], 1e3)
            e99 = stat([pct([int(v) for v in o], 0.99) for o in one_way], 1e3)
        else:
            e50 = e99 = "— (no idle run of this form)"
        veth = [
            [x - DELAY_NS - PING_SERIALISATION_NS for x in s.veth_one_way_ns]
            for s in dl.samples
            if s.veth_one_way_ns
        ]
        v50 = stat([pct(v, 0.5) for v in veth], 1e3)
        v99 = stat([pct(v, 0.99) for v in veth], 1e3)
        vn = stat([float(len(v)) for v in veth], 1, "{:.0f}")
        vm = [s.late_vs_model_ns for s in dl.samples if s.late_vs_model_ns]
        m50 = stat([pct(v, 0.5) for v in vm], 1e3)
        m99 = stat([pct(v, 0.99) for v in vm], 1e3)
        mq = [s.modelled_queue_ns for s in dl.samples if s.modelled_queue_ns]
        q99 = stat([pct(v, 0.99) for v in mq], 1e3)
        rd = stat([pct(s.read_late_ns, 0.99) for s in dl.samples if s.read_late_ns], 1e3)
        rl = [s.released_late_ns for s in dl.samples if s.released_late_ns]
        rl99 = stat([pct(v, 0.99) for v in rl], 1e3)
        cpu = [(s.user_s + s.sys_s) * 100 / args.duration for s in dl.samples]
        slept = any(s.wake_count for s in dl.samples)  # a busy-polling forwarder never does
        wake99 = stat([float(s.wake_p99_ns) for s in dl.samples], 1e3) if slept else "—"
        handed = stat([float(s.handed_p99_ns) for s in dl.samples], 1e3)
        sent = stat([float(s.sent_p99_ns) for s in dl.samples], 1e3)
        out.append(
            f"| {label} | {e50} | {e99} | {v50} | {v99} | {vn} | {m50} | {m99} | {rd} | {rl99}"
            f" | {q99}"
            f" | {stat([float(s.lateness_p99_ns) for s in dl.samples], 1e3)}"
            f" | {wake99} | {handed} | {sent}"
            f" | {stat([s.wait_s * 1e3 / max(1e-9, args.duration) for s in dl.samples])}"
            f" | {stat(cpu, 1, '{:.0f} %')}"
            f" | {kept(dl)} |"
        )
    out += [
        "",
        "CPU of the forwarder thread per forwarded frame (data and ACKs), and flows"
        " through the 1 Gbit/s TBF:",
        "",
        "| flows | goodput Mbit/s | of ideal | frames/s | µs user / frame | µs sys / frame"
        " | ring drops | runs |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for flows in (1, 4, 16, 64):
        c = get(f"goodput/tbf/{flows}/userspace")
        g = [s.goodput_bps for s in c.samples]
        fps = [s.frames / args.duration for s in c.samples]
        us = [s.user_s * 1e6 / max(1, s.frames) for s in c.samples]
        sy = [s.sys_s * 1e6 / max(1, s.frames) for s in c.samples]
        drops = [float(s.rx_ring_drops + s.tx_refused) for s in c.samples]
        out.append(
            f"| {flows} | {stat(g, 1e6)} | {stat(g, ideal / 100, '{:.1f} %')}"
            f" | {stat(fps, 1, '{:.0f}')} | {stat(us, 1, '{:.2f}')} | {stat(sy, 1, '{:.2f}')}"
            f" | {stat(drops, 1, '{:.0f}')} | {kept(c)} |"
        )
    one = [
        (
            f"TBF 1 Gbit/s, {f} flow(s): goodput Mbit/s",
            f"goodput/tbf/{f}/userspace",
            f"threads1/tbf/{f}",
        )
        for f in (1, 4)
    ]
    if any(get(k1).samples for _, _, k1 in one) or get("latency/threads1").samples:
        out += [
            "",
            "One forwarder thread per direction (`threads=0`) against a single thread"
            " (`threads=1`, the default of `qoslab emulate`), same run:",
            "",
            "| case | per direction | single thread | µs CPU / frame, per direction"
            " | µs CPU / frame, single |",
            "|---|---:|---:|---:|---:|",
        ]

        def cpu(c: Case) -> str:
            v = [(s.user_s + s.sys_s) * 1e6 / max(1, s.frames) for s in c.samples]
            return stat(v, 1, "{:.2f}")

        for label, k, k1 in one:
            a, b = get(k), get(k1)
            ga = [s.goodput_bps for s in a.samples]
            gb = [s.goodput_bps for s in b.samples]
            out.append(f"| {label} | {stat(ga, 1e6)} | {stat(gb, 1e6)} | {cpu(a)} | {cpu(b)} |")
        lu1 = get("latency/threads1")
        out.append(
            f"| idle ping RTT p50, µs | {stat(q(lu, 0.5), 1e3)} | {stat(q(lu1, 0.5), 1e3)} | | |"
        )
    gro_keys = [k for k in cases if k.startswith("gro/")]
    if gro_keys:
        out += [
            "",
            "Receiving hosts with GRO in a NAPI thread (`qoslab emulate --gro on`) against"
            " the default hosts (`--gro off`), one forwarder thread, policy at 1 Gbit/s, same"
            " run. Diagnosis columns: the share of 10 ms queue samples (after the first"
            " second) with the policy's queue empty, frames the policy dropped, TCP"
            " retransmissions, the forwarder's event lateness p99 / p99.9 (µs), and how long"
            " per second the forwarder thread was runnable but not running (schedstat):",
            "",
            "| policy | flows | hosts | goodput Mbit/s | of ideal | kernel tbf Mbit/s"
            " | µs user / frame | µs sys / frame | queue empty | policy drops | retransmits"
            " | lateness p99 / p99.9 | forwarder waiting, ms/s | runs |",
            "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]

        def diag(c: Case, k: Case, queue: bool) -> str:
            g = [s.goodput_bps for s in c.samples]
            kg = [s.goodput_bps for s in k.samples]
            us = [s.user_s * 1e6 / max(1, s.frames) for s in c.samples]
            sy = [s.sys_s * 1e6 / max(1, s.frames) for s in c.samples]
            # a policer has no queue: its column stays empty
            qe = [s.queue_empty for s in c.samples if queue and s.queue_empty == s.queue_empty]
            dr = [float(s.policy_drops) for s in c.samples]
            rt = [float(s.retransmits) for s in c.samples]
            l99 = [float(s.lateness_p99_ns) for s in c.samples]
            l999 = [float(s.lateness_p999_ns) for s in c.samples]
            wt = [s.wait_s * 1e3 / args.duration for s in c.samples]
            return (
                f"{stat(g, 1e6)} | {stat(g, ideal / 100, '{:.1f} %')} | {stat(kg, 1e6)}"
                f" | {stat(us, 1, '{:.2f}')} | {stat(sy, 1, '{:.2f}')}"
                f" | {stat(qe, 0.01, '{:.1f} %')} | {stat(dr, 1, '{:.0f}')}"
                f" | {stat(rt, 1, '{:.0f}')} | {stat(l99, 1e3, '{:.0f}')}"
                f" / {stat(l999, 1e3, '{:.0f}')} | {stat(wt, 1, '{:.1f}')} | {kept(c)} |"
            )

        for policy in ("tbf", "police"):
            for flows in (1, 4):
                off = get(f"threads1/{policy}/{flows}")
                if not off.samples:
                    off = get(f"goodput/{policy}/{flows}/userspace")
                koff = get(f"goodput/{policy}/{flows}/kernel")
                on = get(f"gro/{policy}/{flows}/userspace")
                kon = get(f"gro/{policy}/{flows}/kernel")
                queue = policy != "police"
                out.append(f"| {policy} | {flows} | off | {diag(off, koff, queue)}")
                out.append(f"| {policy} | {flows} | GRO | {diag(on, kon, queue)}")
                rt_on = get(f"gro-rt/{policy}/{flows}/userspace")
                if rt_on.samples:
                    rt_k = get(f"gro-rt/{policy}/{flows}/kernel")
                    out.append(
                        f"| {policy} | {flows} | GRO, RT unthrottled | {diag(rt_on, rt_k, queue)}"
                    )
    out += [
        "",
        "GSO mode (`--offload on`): the hosts send TSO super-packets, the conditioners see"
        " each as its wire segments (descriptors; bytes made only for a segment treated apart);"
        " TBF at 10 Gbit/s on 40 Gbit/s links"
        f" (ideal {10 * ideal / 1e9:.3f} Gbit/s); threads as `--threads`. The capacity rows"
        " (one thread): a TBF at 20 Gbit/s, which charges every wire segment but does not bind"
        f" (ideal {20 * ideal / 1e9:.3f} Gbit/s), and no policy; issue 16's ≥ 10 Gbit/s is read"
        " there, as a 10 Gbit/s TBF caps goodput below it:",
        "",
        "| policy | flows | threads | goodput Gbit/s | of ideal | super-packets/s"
        " | µs user / segment | µs sys / segment | segments / packet to host"
        " | forwarded as read | runs |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    # (policy label, key, threads, rate the ideal is of)
    forms = [
        ("tbf 10 Gbit/s", "gso/tbf/{}/userspace", str(args.threads), 10),
        ("tbf 10 Gbit/s", "gso1/tbf/{}", "1", 10),
        ("tbf 20 Gbit/s", "gso/tbf20/{}", "1", 20),
        ("none (40 Gbit/s links)", "gso/none/{}", "1", 0),
    ]
    for label, key, form, of_gbit in forms:
        for flows in (1, 4):
            c = get(key.format(flows))
            if not c.samples:
                continue
            g = [s.goodput_bps for s in c.samples]
            sp = [s.super_packets / args.duration for s in c.samples]
            us = [s.user_s * 1e6 / max(1, s.frames) for s in c.samples]
            sy = [s.sys_s * 1e6 / max(1, s.frames) for s in c.samples]
            # how many wire segments each GSO packet handed to a receiving host carried
            rj = [s.tx_super_segments / max(1, s.tx_super_packets) for s in c.samples]
            # the share of those handed over as they were read (no segment treated apart)
            wh = [100 * s.tx_whole_super_packets / max(1, s.tx_super_packets) for s in c.samples]
            of_ideal = stat(g, of_gbit * ideal / 100, "{:.1f} %") if of_gbit else "—"
            out.append(
                f"| {label} | {flows} | {form} | {stat(g, 1e9, '{:.3f}')}"
                f" | {of_ideal}"
                f" | {stat(sp, 1, '{:.0f}')} | {stat(us, 1, '{:.2f}')} | {stat(sy, 1, '{:.2f}')}"
                f" | {stat(rj, 1, '{:.1f}')} | {stat(wh, 1, '{:.0f} %')} | {kept(c)} |"
            )
    out += ["", END]
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="examples:\n"
        "  sudo .venv/bin/python benchmarks/emu_linerate.py --write docs/performance.md\n"
        "  sudo .venv/bin/python benchmarks/emu_linerate.py --runs 1 --duration 3\n"
        "  sudo .venv/bin/python benchmarks/emu_linerate.py --only goodput/tbf/1 --json\n"
        "  sudo .venv/bin/python benchmarks/emu_linerate.py --floor --runs 3\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--runs", type=int, default=3, help="accepted runs per case (default 3)")
    ap.add_argument("--duration", type=float, default=6.0, help="seconds per run (default 6)")
    ap.add_argument("--tries", type=int, default=3, help="extra runs allowed for steal")
    ap.add_argument("--max-steal", type=float, default=0.05, help="steal share refused")
    ap.add_argument("--label", default="quiet machine", help="how loaded the machine was")
    ap.add_argument("--only", action="append", help="run only cases with this key prefix")
    ap.add_argument(
        "--threads",
        type=int,
        default=0,
        help="forwarder threads (default 0: one per independent group of ports; 1: one)",
    )
    ap.add_argument("--write", metavar="FILE", help="put the tables into FILE between markers")
    ap.add_argument("--json", action="store_true", help="print every sample as JSON")
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    ap.add_argument(
        "--floor",
        action="store_true",
        help="instead: the machine's own wake-up latency (cyclictest, rt-tests) at idle and"
        " beside the delay line's and a 1 Gbit/s TCP load, with steal (--runs windows each)",
    )
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("emu_linerate: needs root (namespaces, AF_PACKET): run it with sudo", file=sys.stderr)
        return 2
    if args.runs < 1 or args.duration < 2:
        print("emu_linerate: --runs ≥ 1 and --duration ≥ 2 expected", file=sys.stderr)
        return 2

    def on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # so every namespace's cleanup (finally) runs

    signal.signal(signal.SIGTERM, on_term)
    if args.floor:
        try:
            floors = measure_floor(args)
        except RuntimeError as e:
            print(f"emu_linerate: {e}", file=sys.stderr)
            return 1
        print(render_floor(floors, args), end="")
        return 0
    t0 = time.monotonic()
    cases = measure(args)
    took = time.monotonic() - t0
    text = render(cases, args, took)
    if args.json:
        doc: dict[str, Any] = {
            k: {
                "rejected": c.rejected,
                "samples": [
                    {
                        **s.__dict__,
                        "ping_ns": None,
                        "veth_one_way_ns": None,
                        "veth_one_way_p99_ns": pct(s.veth_one_way_ns, 0.99),
                        "late_vs_model_ns": None,
                        "late_vs_model_p50_ns": pct(s.late_vs_model_ns, 0.5),
                        "late_vs_model_p90_ns": pct(s.late_vs_model_ns, 0.9),
                        "late_vs_model_p99_ns": pct(s.late_vs_model_ns, 0.99),
                        "read_late_ns": None,
                        "read_late_p99_ns": pct(s.read_late_ns, 0.99),
                        "released_late_ns": None,
                        "released_late_p99_ns": pct(s.released_late_ns, 0.99),
                        "modelled_queue_ns": None,
                        "modelled_queue_p99_ns": pct(s.modelled_queue_ns, 0.99),
                        "pings": len(s.ping_ns),
                        "ping_p50_ns": pct(s.ping_ns, 0.5),
                        "ping_p99_ns": pct(s.ping_ns, 0.99),
                    }
                    for s in c.samples
                ],
            }
            for k, c in cases.items()
        }
        print(json.dumps(doc, indent=1))
    else:
        print(text)
    if args.write:
        from doc_section import replace_section

        replace_section(Path(args.write), BEGIN, END, text)
        print(f"wrote {args.write}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except subprocess.CalledProcessError as e:
        print(f"emu_linerate: {e}", file=sys.stderr)
        sys.exit(1)
