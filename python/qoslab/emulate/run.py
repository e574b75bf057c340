"""One emulation run: namespaces up, forwarder on, traffic on schedule, results in.

``emulate(scenario)`` returns a :class:`qoslab.results.SimulationResult` in the same
schema as ``qoslab.simulate`` (``raw["mode"] == "emulate"``), so the table, ``--out``,
``--report`` and ``qoslab compare`` work on it unchanged.

Backends (where a link direction's policy runs):

- ``userspace`` (default): qoslab-core's conditioners inside the forwarder, the very
  code the simulator runs, driven by the monotonic clock;
- ``kernel``: the kernel's own qdisc (``tc qdisc add … tbf|htb|pfifo|bfifo``) on a veth
  loop inside the forwarder namespace, at the same place on the path; links and delays
  stay in the forwarder, so the two backends differ only in the conditioner.

TCP settings the scenario gives are applied per host namespace (sysctls), per route
(``ip route … initcwnd|rto_min``) or per socket (iperf3 ``-C``, ``-w``, ``-M``); the
plan (``_core.emu_plan``) refuses, with the scenario's file:line, what Linux cannot do.
"""

from __future__ import annotations

import contextlib
import json
import platform
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from qoslab import _core
from qoslab.emulate import idlepoll, rt
from qoslab.emulate.netns import EmulationSetupError, Netns, preflight, run_cmd
from qoslab.emulate.traffic import (
    Program,
    launch,
    parse_ping,
    plan_programs,
    read_iperf_json,
    start_servers,
    tmpdir,
)
from qoslab.results import SimulationResult
from qoslab.scenario import ScenarioSource, load_scenario, with_seed

__all__ = ["BACKENDS", "emulate", "emulation_plan"]

BACKENDS = ("userspace", "kernel")
#: progress(elapsed_ns, duration_ns, live_stats) → False cancels.
ProgressFn = Callable[[int, int, dict[str, Any]], Any]
GRACE_S = 15.0  # how long after the scenario's end the programs may take to finish

_LINUX_DEFAULTS = {
    "net.ipv4.tcp_sack": "1",
    "net.ipv4.tcp_timestamps": "1",
    "net.ipv4.tcp_window_scaling": "1",
    "net.ipv4.tcp_frto": "2",
    "net.ipv4.tcp_recovery": "1",
    "net.ipv4.tcp_early_retrans": "3",
}


def emulation_plan(
    scenario: ScenarioSource, seed: int | None = None
) -> tuple[dict[str, Any], str, str]:
    """The plan of a scenario (hosts, flows, policies, links) without running it;
    raises ``qoslab.ScenarioError`` for a scenario Linux cannot run."""
    text, filename = load_scenario(scenario)
    if seed is not None:
        text = with_seed(text, seed)
    return _core.emu_plan(text, filename), text, filename


def _host_sysctls(plan: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Per-host sysctls from the TCP settings of the flows a host sends or receives;
    two flows that need different values on one host are refused."""
    per_host: dict[str, dict[str, tuple[str, int]]] = {}
    for f in plan["flows"]:
        tcp = f.get("tcp")
        if f["protocol"] != "tcp" or tcp is None:
            continue
        want = {
            "net.ipv4.tcp_sack": "1" if tcp["sack"] else "0",
            "net.ipv4.tcp_timestamps": "1" if tcp["timestamps"] else "0",
            "net.ipv4.tcp_window_scaling": "1" if tcp["window_scaling"] else "0",
            "net.ipv4.tcp_frto": "2" if tcp["frto"] else "0",
            "net.ipv4.tcp_recovery": "1" if tcp["rack"] else "0",
            "net.ipv4.tcp_early_retrans": "3" if tcp["tlp"] else "0",
        }
        if tcp.get("ecn"):
            want["net.ipv4.tcp_ecn"] = "1"
        for host in (f["from"], f["to"]):
            have = per_host.setdefault(host, {})
            for key, value in want.items():
                if key in have and have[key][0] != value:
                    raise EmulationSetupError(
                        f"flows {have[key][1]} and {f['id']} need {key} = {have[key][0]} and"
                        f" {value} on host {host}: one namespace has one value"
                    )
                have[key] = (value, f["id"])
    out: dict[str, dict[str, str]] = {}
    for host in plan["hosts"]:
        settings = {"net.ipv4.tcp_no_metrics_save": "1"}  # no state carried between flows
        settings.update({k: v for k, (v, _) in per_host.get(host, {}).items()})
        out[host] = settings
    return out


def _routes(plan: dict[str, Any], netns: Netns, notes: list[str]) -> dict[str, list[str]]:
    """``ip route`` lines per host for the per-destination TCP settings (what could
    not be given per route is said in ``notes``)."""
    per: dict[tuple[str, str], dict[str, str]] = {}
    for f in plan["flows"]:
        tcp = f.get("tcp")
        if f["protocol"] != "tcp" or tcp is None:
            continue
        if tcp.get("initial_ssthresh_bytes") is not None:
            raise EmulationSetupError(
                f"flow {f['id']}: an initial ssthresh cannot be set on Linux (it comes only"
                " from the TCP metrics cache); remove initial_ssthresh from the scenario"
            )
        # The congestion control goes on the route too (`congctl`, RTAX_CC_ALGO), so the
        # socket is born with it: iperf3 sets TCP_CONGESTION only after connect(), and a
        # socket established with the namespace's default (bbr on a host whose
        # net.ipv4.tcp_congestion_control is bbr; namespaces inherit it and this kernel
        # refuses to change it inside one) has run bbr_init, which turns on internal
        # pacing (sk_pacing_status = SK_PACING_NEEDED, net/ipv4/tcp_bbr.c) for good:
        # the "cubic" flow would then be a paced cubic flow.
        metrics = {"congctl": str(tcp["cc"])}
        if int(tcp["initial_window_segments"]) != 10:
            metrics["initcwnd"] = str(int(tcp["initial_window_segments"]))
        if int(tcp["min_rto_ns"]) != 200_000_000:
            metrics["rto_min"] = f"{int(tcp['min_rto_ns']) // 1000}us"
        key = (f["from"], f["to"])
        have = per.setdefault(key, {})
        for k, v in metrics.items():
            if k == "congctl" and have.get(k, v) != v:
                # flows of different cc on one pair: none is born with its own
                if have[k]:
                    notes.append(
                        f"flows {key[0]}->{key[1]} use different congestion controls: they"
                        " start with the namespace default and switch after connect()"
                        " (a socket that started as bbr stays paced)"
                    )
                have[k] = ""
                continue
            if have.get(k, v) != v:
                raise EmulationSetupError(
                    f"flow {f['id']}: {k} {v} differs from another flow {key[0]}->{key[1]}"
                    " (one route carries one value)"
                )
            have[k] = v
    lines: dict[str, list[str]] = {}
    for (src, dst), metrics in per.items():
        extra = " ".join(f"{k} {v}" for k, v in metrics.items() if v)
        lines.setdefault(src, []).append(f"route replace {netns.ip(dst)}/32 dev eth0 {extra}")
    return lines


def _kernel_loops(
    plan: dict[str, Any], netns: Netns
) -> tuple[dict[str, tuple[str, str]], list[dict[str, Any]]]:
    """Veth loops with the kernel qdisc of every policy, for ``--backend kernel``."""
    loops: dict[str, tuple[str, str]] = {}
    applied = []
    for i, pol in enumerate(plan["policies"]):
        k = pol.get("kernel")
        if k is None:
            raise EmulationSetupError(
                f"policy '{pol['name']}' ({pol['kind']}) has no kernel qdisc here (this"
                " kernel has tbf, htb, pfifo, bfifo): use --backend userspace"
            )
        a, b = f"k{i}a", f"k{i}b"
        netns.veth_pair(a, b)
        commands = k.get("commands") or [
            ["qdisc", "add", "dev", "DEV", "root", k["qdisc"], *k["tc_args"]]
        ]
        shown = []
        for cmd in commands:
            argv = ["tc", *[a if x == "DEV" else str(x) for x in cmd]]
            run_cmd(["ip", "netns", "exec", netns.net, *argv])
            shown.append(" ".join(argv))
        loops[pol["link"]] = (a, b)
        applied.append({"policy": pol["name"], "dev": a, "commands": shown})
    return loops, applied


class _KernelSampler:
    """Samples ``tc -s -j qdisc show`` of the kernel loops: counters at the end and
    the backlog per interval (the queue series and the maximum queue)."""

    def __init__(self, netns: Netns, devs: list[tuple[int, str]], interval_ns: int, t0_ns: int):
        self.netns, self.devs, self.t0 = netns, devs, t0_ns
        self.interval_s = max(0.05, interval_ns / 1e9)
        self.rows: list[tuple[int, int, int, int]] = []  # time, policy, packets, bytes
        self.maxq: dict[int, tuple[int, int]] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def read(self, dev: str) -> dict[str, Any]:
        out = run_cmd(
            ["ip", "netns", "exec", self.netns.net, "tc", "-s", "-j", "qdisc", "show", "dev", dev]
        )
        qdiscs = json.loads(out or "[]")
        return next((q for q in qdiscs if q.get("root")), qdiscs[0] if qdiscs else {})

    def _loop(self) -> None:
        while not self.stop.wait(self.interval_s):
            now = time.monotonic_ns() - self.t0
            for i, dev in self.devs:
                try:
                    q = self.read(dev)
                except (EmulationSetupError, json.JSONDecodeError):
                    continue
                pk, by = int(q.get("qlen", 0)), int(q.get("backlog", 0))
                self.rows.append((now, i, pk, by))
                mp, mb = self.maxq.get(i, (0, 0))
                self.maxq[i] = (max(mp, pk), max(mb, by))


def _install_sigterm() -> Callable[[], None]:
    """SIGTERM raises KeyboardInterrupt in the main thread (so cleanup runs)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, handler)

    def restore() -> None:
        signal.signal(signal.SIGTERM, old)

    return restore


@contextlib.contextmanager
def _network(hosts: list[str], offload: bool = False, gro: bool = False) -> Iterator[Netns]:
    netns = Netns(hosts=hosts, offload=offload, gro=gro)
    restore = _install_sigterm()
    try:
        netns.build()
        yield netns
    finally:
        # Cleanup must not be interrupted by a second Ctrl-C.
        old = signal.signal(signal.SIGINT, signal.SIG_IGN) if _is_main() else None
        try:
            netns.close()
        finally:
            if old is not None:
                signal.signal(signal.SIGINT, old)
            restore()


def _is_main() -> bool:
    return threading.current_thread() is threading.main_thread()


def emulate(
    scenario: ScenarioSource,
    seed: int | None = None,
    backend: str = "userspace",
    capture: list[tuple[str, str, str]] | None = None,
    progress: ProgressFn | None = None,
    offload: bool = False,
    threads: int = 1,
    gro: bool = False,
    rt_unthrottle: bool = False,
    busy_poll: bool = False,
    idle_poll: bool = False,
) -> SimulationResult:
    """Runs a scenario with real Linux TCP between namespaces through qoslab's
    conditioners (``backend="userspace"``) or the kernel's qdiscs (``"kernel"``).

    ``capture``: (link ``"r1->r2"``, ``"ingress"|"egress"``, pcap path) triples.
    ``offload``: the hosts hand GSO super-packets to their veths (TSO on) and every
    conditioner sees each as its wire segments (as Linux's ``tbf_segment``), so every
    policy still counts wire frames; a super-packet none of whose segments was treated
    apart reaches the receiver as it came, and captures show wire segments.
    ``threads``: forwarder threads; 1 (default) = a single thread, 0 = one per independent
    group of ports (data and ACKs of a two-host path in two threads, one per CPU). One
    thread is the default because it measured as fast and with a far tighter delay line
    (docs/performance.md, issue 16).
    ``gro``: the hosts' eth0 coalesce the frames they receive (GRO) in a NAPI kernel thread
    of their own, as a host with a NIC does, instead of taking each frame through IP and TCP
    inside the forwarder's ``send()``; frames on the wire stay wire-sized (not with
    ``offload``, where the forwarder joins segments itself).
    ``rt_unthrottle``: the kernel's real-time throttling (``kernel.sched_rt_runtime_us``)
    is lifted for the run and restored after it, so the SCHED_FIFO forwarder is not held
    off for 50 ms of every second (``qoslab.emulate.rt``; a machine-wide setting).
    ``busy_poll``: the forwarder threads never sleep: a frame or a due delay-line release
    is handled within about a µs instead of after the wake-up of a sleeping thread (tens of
    µs on a virtual machine whose idle CPU halts). Costs a whole CPU per forwarder thread
    for the run (docs/performance.md, issue 16).
    ``idle_poll``: a PM QoS CPU latency request of 0 µs is held for the run, so idle CPUs
    poll instead of halting and a sleeping forwarder (or host) wakes without the
    hypervisor's wake-up (``qoslab.emulate.idlepoll``; withdrawn by the kernel when the
    run ends, however it ends).
    Needs root, iperf3, ip, tc, ethtool, ping. Raises ``qoslab.ScenarioError`` for a
    scenario Linux cannot run, ``EmulationSetupError`` when the machine cannot, and
    ``qoslab.Cancelled`` on Ctrl-C/SIGTERM — after removing every namespace and process.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if gro and offload:
        raise ValueError("gro needs offload off: with offload the forwarder joins segments itself")
    plan, text, filename = emulation_plan(scenario, seed)
    preflight()
    info = _core.scenario_info(text, filename)
    work = tmpdir()
    try:
        with (
            _network(list(plan["hosts"]), offload, gro) as netns,
            rt.unthrottled() if rt_unthrottle else contextlib.nullcontext() as rt_before,
            idlepoll.idle_polling() if idle_poll else contextlib.nullcontext(),
        ):
            result = _run(
                plan,
                info,
                text,
                filename,
                netns,
                backend,
                capture or [],
                progress,
                work,
                threads,
                busy_poll,
            )
            if rt_unthrottle:
                result.raw["emulation"]["notes"].append(
                    f"kernel RT throttling lifted for the run (sched_rt_runtime_us {rt_before}"
                    " -> -1, restored after)"
                )
            if busy_poll:
                result.raw["emulation"]["notes"].append(
                    "forwarder busy-polled: it never slept, one CPU per thread spent spinning"
                )
            if idle_poll:
                result.raw["emulation"]["notes"].append(
                    "idle CPUs polled for the run (PM QoS CPU latency 0 µs, withdrawn after)"
                )
            return result
    except KeyboardInterrupt:
        raise _core.Cancelled("emulation cancelled") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(
    plan: dict[str, Any],
    info: dict[str, Any],
    text: str,
    filename: str,
    netns: Netns,
    backend: str,
    capture: list[tuple[str, str, str]],
    progress: ProgressFn | None,
    work: Path,
    threads: int = 1,
    busy_poll: bool = False,
) -> SimulationResult:
    interval_ns = int(plan["record_interval_ns"])
    duration_ns = int(plan["duration_ns"])
    for host, settings in _host_sysctls(plan).items():
        netns.sysctl(host, settings)
    route_notes: list[str] = []
    for host, lines in _routes(plan, netns, route_notes).items():
        netns.batch(netns.ns(host), lines)
    kernel_links: dict[str, tuple[str, str]] = {}
    applied: list[dict[str, Any]] = []
    if backend == "kernel":
        kernel_links, applied = _kernel_loops(plan, netns)
    programs, notes = plan_programs(plan, netns, work, interval_ns)
    start_servers(programs, netns)
    ports = {h: netns.port(h) for h in plan["hosts"]}
    ips = {h: netns.ip(h) for h in plan["hosts"]}
    nstat0 = {h: _nstat(netns, h) for h in plan["hosts"]}
    samplers = _start_tcpinfo(plan, netns, work, interval_ns)
    t0 = time.monotonic_ns()
    real0 = time.time_ns()
    fwd = _core.emu_start(
        text,
        filename,
        netns.net,
        ports,
        ips,
        kernel_links,
        capture,
        t0,
        offload=netns.offload,
        threads=threads,
        busy_poll=busy_poll,
    )
    sampler = None
    if kernel_links:
        devs = [(i, kernel_links[p["link"]][0]) for i, p in enumerate(plan["policies"])]
        sampler = _KernelSampler(netns, devs, interval_ns, t0)
        sampler.thread.start()
    fwd_result: dict[str, Any] | None = None
    try:
        try:
            _drive(programs, netns, work, t0, duration_ns, fwd, progress)
        finally:
            close = getattr(progress, "close", None)  # a bar's line is cleared, also on Ctrl-C
            if close is not None:
                close()
        if sampler is not None:
            sampler.stop.set()
            sampler.thread.join(timeout=5)
        fwd_result = fwd.stop()
    finally:
        if fwd_result is None:
            with contextlib.suppress(Exception):
                fwd.stop()
    nstat1 = {h: _nstat(netns, h) for h in plan["hosts"]}
    for proc in samplers.values():
        proc.terminate()
    for proc in samplers.values():
        with contextlib.suppress(Exception):
            proc.wait(timeout=3)
    tcpinfo = _read_tcpinfo(work, list(samplers), t0)
    kernel = []
    if sampler is not None:
        for i, dev in sampler.devs:
            kernel.append((i, dev, sampler.read(dev)))
    raw = _assemble(
        plan,
        info,
        programs,
        fwd_result,
        t0,
        real0,
        nstat0,
        nstat1,
        kernel,
        sampler,
        backend,
        tcpinfo,
    )
    raw["emulation"]["notes"] = route_notes + notes + raw["emulation"]["notes"]
    raw["emulation"]["kernel_qdiscs"] = applied
    if netns.gro:
        raw["emulation"]["frames"] = (
            "wire-sized: TSO, GSO and checksum offload off on every veth; the hosts' eth0"
            " coalesce what they receive (GRO, in a threaded NAPI)"
        )
    if netns.offload:
        raw["emulation"]["frames"] = (
            "GSO (--offload on): the hosts send TSO super-packets, each counted, policed"
            " and shaped as its wire segments by every conditioner (captures show wire"
            " segments); a super-packet whose segments all leave together unchanged reaches"
            " the receiving host as it came, other segments leaving in one batch are joined"
            " back into super-packets"
        )
    return SimulationResult(raw)


def _drive(
    programs: list[Program],
    netns: Netns,
    work: Path,
    t0: int,
    duration_ns: int,
    fwd: Any,
    progress: ProgressFn | None,
) -> None:
    """Launches every program at its start time and waits for all to finish
    (bounded: the scenario's duration plus a grace period)."""
    pending = list(programs)
    deadline = t0 + duration_ns + int(GRACE_S * 1e9)
    while True:
        now = time.monotonic_ns()
        while pending and now - t0 >= pending[0].start_ns:
            launch(pending.pop(0), netns, work, now - t0)
        running = [p for p in programs if p.proc is not None and p.proc.poll() is None]
        servers = [p for p in programs if p.server is not None and p.server.poll() is None]
        if not pending and not running and not servers:
            return
        if not pending and not running and now - t0 > duration_ns + int(3e9):
            return  # clients done; a server that never got its client is not waited on
        if now > deadline:
            late = ", ".join(" ".join(p.argv[:3]) for p in running) or "iperf3 servers"
            raise EmulationSetupError(
                f"traffic did not finish {GRACE_S:g} s after the scenario's end: {late}"
            )
        if progress is not None and progress(now - t0, duration_ns, fwd.stats()) is False:
            raise KeyboardInterrupt
        wait_s = 0.05
        if pending:
            wait_s = min(wait_s, max(0.0, (t0 + pending[0].start_ns - now) / 1e9))
        time.sleep(wait_s)


def _start_tcpinfo(
    plan: dict[str, Any], netns: Netns, work: Path, interval_ns: int
) -> dict[str, Any]:
    """A ``qoslab.emulate.tcpinfo`` sampler in every host that sends TCP: the kernel's
    per-connection state (cwnd, ssthresh, ca_state, RTO count) every 50 ms or faster."""
    from qoslab.emulate.traffic import _popen_to_file

    hosts = sorted({f["from"] for f in plan["flows"] if f["protocol"] == "tcp"})
    every_s = min(0.05, interval_ns / 1e9)
    procs = {}
    for h in hosts:
        argv = [sys.executable, "-I", str(Path(__file__).with_name("tcpinfo.py"))]
        argv += ["--interval", f"{every_s:g}"]
        argv += ["--max-seconds", f"{plan['duration_ns'] / 1e9 + GRACE_S + 30:g}"]
        procs[h] = _popen_to_file(netns, h, argv, work / f"tcpinfo-{h}.jsonl")
    deadline = time.monotonic() + 10.0
    for h, proc in procs.items():
        path = work / f"tcpinfo-{h}.jsonl"
        while not path.read_text(encoding="utf-8", errors="replace").startswith('{"ready"'):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise EmulationSetupError(f"the tcp_info sampler in {h} did not start")
            time.sleep(0.01)
    return procs


def _read_tcpinfo(
    work: Path, hosts: list[str], t0: int
) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """Samples by (host, client port), times relative to ``t0``."""
    out: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for h in hosts:
        path = work / f"tcpinfo-{h}.jsonl"
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by the end of the sampler
            if "sport" not in row:
                continue
            row["t"] = int(row["t"]) - t0
            out.setdefault((h, int(row["sport"])), []).append(row)
    return out


def _nstat(netns: Netns, host: str) -> dict[str, int]:
    """Absolute SNMP/netstat counters of a host namespace (fresh, so they count this run)."""
    try:
        out = run_cmd(netns.exec_argv(host, ["nstat", "-asz", "--json"]))
        doc = json.loads(out)
    except (EmulationSetupError, json.JSONDecodeError):
        return {}
    counters = doc.get("kernel", doc)
    return {k: int(v) for k, v in counters.items() if isinstance(v, int | float)}


# --- results in the simulator's schema ------------------------------------------------


def _rtt_summary(samples_ns: list[int]) -> dict[str, Any]:
    if not samples_ns:
        return {"samples": 0, "min_ns": 0, "mean_ns": 0.0, "p50_ns": 0, "p95_ns": 0, "max_ns": 0}
    a = np.sort(np.asarray(samples_ns, dtype=np.int64))

    # nearest-rank percentiles, as the simulator's summaries
    def rank(q: float) -> int:
        return int(a[max(0, min(len(a) - 1, int(np.ceil(q * len(a))) - 1))])

    return {
        "samples": len(a),
        "min_ns": int(a[0]),
        "mean_ns": float(a.mean()),
        "p50_ns": rank(0.5),
        "p95_ns": rank(0.95),
        "max_ns": int(a[-1]),
    }


def _stream_ports(doc: dict[str, Any], side: str) -> dict[int, int]:
    """socket id → the client's port of each data stream (``side`` is the key under
    which the client port appears: ``local_port`` in the client's JSON,
    ``remote_port`` in the server's)."""
    return {int(c["socket"]): int(c[side]) for c in doc.get("start", {}).get("connected", [])}


def _counter(n: dict[str, int], *keys: str) -> int:
    return sum(n.get(k, 0) for k in keys)


def _assemble(
    plan: dict[str, Any],
    info: dict[str, Any],
    programs: list[Program],
    fwd: dict[str, Any],
    t0: int,
    real0: int,
    nstat0: dict[str, dict[str, int]],
    nstat1: dict[str, dict[str, int]],
    kernel: list[tuple[int, str, dict[str, Any]]],
    sampler: _KernelSampler | None,
    backend: str,
    tcpinfo: dict[tuple[str, int], list[dict[str, Any]]],
) -> dict[str, Any]:
    flows: dict[int, dict[str, Any]] = {}
    interval_ns = int(plan["record_interval_ns"])
    cols: dict[str, dict[str, list[Any]]] = {
        "goodput": {"time_ns": [], "flow": [], "bytes": [], "retransmits": []},
        "rtt": {"time_ns": [], "flow": [], "rtt_ns": []},
        "cwnd": {"time_ns": [], "flow": [], "cwnd_bytes": [], "ssthresh_bytes": [], "state": []},
        "ping": {"time_ns": [], "flow": [], "seq": [], "rtt_ns": []},
    }
    notes: list[str] = []
    tcp_flows_per_host: dict[str, int] = {}
    for f in plan["flows"]:
        if f["protocol"] == "tcp":
            tcp_flows_per_host[f["from"]] = tcp_flows_per_host.get(f["from"], 0) + 1
    host_delta = {
        h: {k: nstat1.get(h, {}).get(k, 0) - nstat0.get(h, {}).get(k, 0) for k in nstat1.get(h, {})}
        for h in plan["hosts"]
    }
    for p in programs:
        if p.kind == "ping":
            f = p.flows[0]
            text = p.out.read_text(encoding="utf-8", errors="replace") if p.out else ""
            replies, tx, rx = parse_ping(text)
            rtts = []
            for ts, seq, rtt in replies:
                mono = ts * 1e9 - (real0 - t0)  # CLOCK_REALTIME → the run's axis
                cols["ping"]["time_ns"].append(max(0, int(mono - t0)))
                cols["ping"]["flow"].append(f["id"])
                cols["ping"]["seq"].append(seq)
                cols["ping"]["rtt_ns"].append(rtt)
                rtts.append(rtt)
            flows[f["id"]] = _flow(f, p.launched_ns, p.launched_ns + int(plan["duration_ns"]), 0)
            flows[f["id"]].update(packets_sent=tx, packets_lost=tx - rx, rtt=_rtt_summary(rtts))
            continue
        client = read_iperf_json(p.out, f"iperf3 client {p.src}->{p.dst}:{p.port}")
        try:
            server = read_iperf_json(p.server_out, f"iperf3 server {p.dst}:{p.port}")
        except EmulationSetupError as e:
            server = {}
            notes.append(f"{e} (goodput series of its flows left out)")
        c_ports = _stream_ports(client, "local_port")
        s_ports = _stream_ports(server, "remote_port")
        end_streams = client.get("end", {}).get("streams", [])
        for k, f in enumerate(p.flows):
            if k >= len(end_streams):
                raise EmulationSetupError(
                    f"iperf3 reported {len(end_streams)} streams, expected {len(p.flows)}"
                )
            st = end_streams[k]
            udp = st.get("udp")
            sender = st.get("sender") or udp or {}
            receiver = st.get("receiver") or udp or {}
            sock = int(sender.get("socket", -1))
            port = c_ports.get(sock)
            if udp is not None:
                # iperf3's client reports UDP as sent; what arrived is in the
                # server's own summary of the same stream (matched by port).
                srv_sock = next((sk for sk, pt in s_ports.items() if pt == port), None)
                srv = next(
                    (
                        x.get("udp", {})
                        for x in server.get("end", {}).get("streams", [])
                        if int(x.get("udp", {}).get("socket", -2)) == srv_sock
                    ),
                    None,
                )
                if srv:
                    # iperf3 3.12's server leaves `bytes` 0 in its UDP summary: the
                    # bytes it received are the sum of its intervals for the stream
                    got = sum(
                        int(x.get("bytes", 0))
                        for iv in server.get("intervals", [])
                        for x in iv.get("streams", [])
                        if int(x.get("socket", -2)) == srv_sock
                    )
                    receiver = {**srv, "bytes": int(srv.get("bytes") or got)}
                else:
                    notes.append(f"flow {f['id']}: no server summary; UDP bytes are as sent")
            seconds = float(receiver.get("seconds") or sender.get("seconds") or 0.0)
            nbytes = int(receiver.get("bytes", 0))
            row = _flow(f, p.launched_ns, p.launched_ns + int(seconds * 1e9), nbytes)
            rtt_samples: list[int] = []
            for iv in client.get("intervals", []):
                for s in iv.get("streams", []):
                    if int(s.get("socket", -2)) != sock:
                        continue
                    t = p.launched_ns + int(float(s["end"]) * 1e9)
                    if "rtt" in s:
                        rtt_samples.append(int(s["rtt"]) * 1000)
                        cols["rtt"]["time_ns"].append(t)
                        cols["rtt"]["flow"].append(f["id"])
                        cols["rtt"]["rtt_ns"].append(int(s["rtt"]) * 1000)
            retr_by_end = {}
            for iv in client.get("intervals", []):
                for s in iv.get("streams", []):
                    if int(s.get("socket", -2)) == sock:
                        retr_by_end[round(float(s["end"]), 1)] = int(s.get("retransmits", 0))
            s_sock = next((sk for sk, pt in s_ports.items() if pt == port), None)
            for iv in server.get("intervals", []):
                for s in iv.get("streams", []):
                    if s_sock is None or int(s.get("socket", -2)) != s_sock:
                        continue
                    end = float(s["end"])
                    cols["goodput"]["time_ns"].append(p.launched_ns + int(end * 1e9))
                    cols["goodput"]["flow"].append(f["id"])
                    cols["goodput"]["bytes"].append(int(s["bytes"]))
                    cols["goodput"]["retransmits"].append(retr_by_end.get(round(end, 1), 0))
            if f["protocol"] == "tcp":
                row["retransmits"] = int(sender.get("retransmits", 0))
                row["rtt"] = _rtt_summary(rtt_samples)
                samples = tcpinfo.get((f["from"], port), []) if port is not None else []
                if samples:
                    _from_tcpinfo(row, f["id"], samples, interval_ns, cols["cwnd"])
                elif tcp_flows_per_host.get(f["from"]) == 1:
                    d = host_delta[f["from"]]
                    row["timeouts"] = _counter(d, "TcpExtTCPTimeouts")
                    row["fast_recoveries"] = _counter(
                        d, "TcpExtTCPSackRecovery", "TcpExtTCPRenoRecovery"
                    )
                    row["packets_sent"] = _counter(d, "TcpOutSegs")
                else:
                    notes.append(f"flow {f['id']}: no tcp_info samples; RTO count unknown")
            else:
                # the receiver counts loss from the datagrams' sequence numbers
                row["packets_sent"] = int(receiver.get("packets", 0))
                row["packets_lost"] = int(receiver.get("lost_packets", 0))
            flows[f["id"]] = row
    flow_list = [flows[i] for i in sorted(flows)]
    policies = list(fwd.get("policies", []))
    fseries = fwd.get("series", {})
    # The forwarder's columns are named as qoslab_sim::result::Series fields.
    queue = {
        k: list(fseries.get(f"queue_{k}" if k != "tokens_bytes" else k, []))
        for k in ("time_ns", "policy", "packets", "bytes", "tokens_bytes")
    }
    colors = {
        k: list(fseries.get(f"color_{k}", []))
        for k in ("time_ns", "policy", "green_bytes", "yellow_bytes", "red_bytes", "dropped_bytes")
    }
    if kernel:
        policies = _kernel_policies(plan, kernel, sampler, policies)
        if sampler is not None:
            # every policy is in the kernel: its queue is what tc reported, not the
            # forwarder's (empty) rows for it
            queue = {k: [] for k in queue}
            for t, i, pk, by in sampler.rows:
                for col, v in zip(
                    ("time_ns", "policy", "packets", "bytes", "tokens_bytes"),
                    (t, i, pk, by, -1),
                    strict=True,
                ):
                    queue[col].append(v)
    data = [f for f in flow_list if f["protocol"] in ("tcp", "udp")]
    goodputs = [float(f["goodput_bps"]) for f in flow_list if f["protocol"] == "tcp"]
    series = {name: {k: np.asarray(v) for k, v in t.items()} for name, t in cols.items()}
    series["queue"] = {k: np.asarray(v) for k, v in queue.items()}
    series["colors"] = {k: np.asarray(v) for k, v in colors.items()}
    series["segments"] = {
        k: np.asarray([], dtype=np.int64) for k in ("time_ns", "flow", "seq", "len", "retransmit")
    }
    recorded = set(info["series"])
    for name, table in series.items():
        if name not in recorded:
            series[name] = {k: np.asarray([], dtype=np.int64) for k in table}
    return {
        "mode": "emulate",
        "name": plan["name"],
        "seed": plan["seed"],
        "duration_ns": plan["duration_ns"],
        "description": info["description"],
        "source": info["source"],
        "record_interval_ns": plan["record_interval_ns"],
        "recorded": info["series"],
        "sum_goodput_bps": sum(float(f["goodput_bps"]) for f in data),
        "jain_fairness": _jain(goodputs),
        "events": int(fwd.get("frames_in", 0)),
        "flows": flow_list,
        "policies": policies,
        "series": series,
        "emulation": {
            "backend": backend,
            "kernel": platform.release(),
            "iperf3": _iperf_version(),
            "frames": "wire-sized: TSO, GSO, GRO and checksum offload off on every veth",
            "forwarder": {
                k: fwd.get(k)
                for k in (
                    "frames_in",
                    "frames_out",
                    "unroutable",
                    "timing",
                    "links",
                    "tx_refused",
                    "rx_ring_drops",
                    "super_packets",
                    "tx_super_packets",
                    "tx_super_segments",
                    "tx_whole_super_packets",
                    "threads",
                )
            },
            "hosts": {
                h: {
                    k: host_delta[h].get(k, 0)
                    for k in (
                        "TcpExtTCPTimeouts",
                        "TcpExtTCPLossProbes",
                        "TcpExtTCPSackRecovery",
                        "TcpExtTCPRenoRecovery",
                        "TcpRetransSegs",
                        "TcpOutSegs",
                        # Which CUBIC HyStart detector ended slow start.
                        "TcpExtTCPHystartTrainDetect",
                        "TcpExtTCPHystartTrainCwnd",
                        "TcpExtTCPHystartDelayDetect",
                        "TcpExtTCPHystartDelayCwnd",
                    )
                }
                for h in plan["hosts"]
            },
            "notes": notes,
        },
    }


# Linux tcp_ca_state → the simulator's state codes (0 open, 1 disorder, 2 recovery,
# 3 loss); CWR (an ECN or local-congestion reduction) has no simulator state: open.
_CA_STATE = {0: 0, 1: 1, 2: 0, 3: 2, 4: 3}


def _from_tcpinfo(
    row: dict[str, Any],
    flow_id: int,
    samples: list[dict[str, Any]],
    interval_ns: int,
    cwnd: dict[str, list[Any]],
) -> None:
    """A flow's RTO count, data segments sent and recovery episodes from the kernel's
    tcp_info samples (the last one before the socket closed), and its cwnd series at
    the record interval."""
    last = samples[-1]
    if "total_rto" in last:
        row["timeouts"] = int(last["total_rto"])
    row["packets_sent"] = int(last.get("data_segs_out", 0))
    episodes, prev = 0, 0
    next_t = 0
    for x in samples:
        state = int(x.get("ca_state", 0))
        if state == 3 and prev != 3:
            episodes += 1
        prev = state
        if x["t"] >= next_t and "snd_cwnd" in x:
            mss = int(x.get("snd_mss", 0)) or 1448
            cwnd["time_ns"].append(max(0, int(x["t"])))
            cwnd["flow"].append(flow_id)
            cwnd["cwnd_bytes"].append(int(x["snd_cwnd"]) * mss)
            cwnd["ssthresh_bytes"].append(int(x.get("snd_ssthresh", 0)) * mss)
            cwnd["state"].append(_CA_STATE.get(state, 0))
            next_t = (int(x["t"]) // interval_ns + 1) * interval_ns
    row["fast_recoveries"] = episodes  # sampled: episodes shorter than a sample can be missed


def _flow(f: dict[str, Any], start_ns: int, end_ns: int, nbytes: int) -> dict[str, Any]:
    secs = (end_ns - start_ns) / 1e9
    return {
        "id": f["id"],
        "protocol": f["protocol"],
        "label": f["label"],
        "from": f["from"],
        "to": f["to"],
        "start_ns": start_ns,
        "end_ns": end_ns,
        "bytes_delivered": nbytes,
        "goodput_bps": nbytes * 8 / secs if secs > 0 else 0.0,
        "packets_sent": 0,
        "retransmits": 0,
        "packets_lost": 0,
        "timeouts": 0,
        "fast_recoveries": 0,
        "rtt": _rtt_summary([]),
    }


def _jain(values: list[float]) -> float:
    if len(values) < 2:
        return 1.0
    sq = sum(v * v for v in values)
    return sum(values) ** 2 / (len(values) * sq) if sq else 1.0


def _kernel_policies(
    plan: dict[str, Any],
    kernel: list[tuple[int, str, dict[str, Any]]],
    sampler: _KernelSampler | None,
    userspace: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """The kernel qdiscs' counters (``tc -s``) as policy rows, in the plan's order."""
    out = []
    for i, dev, q in kernel:
        pol = plan["policies"][i]
        sent_p, sent_b = int(q.get("packets", 0)), int(q.get("bytes", 0))
        drops = int(q.get("drops", 0))
        maxp, maxb = sampler.maxq.get(i, (0, 0)) if sampler else (0, 0)
        opts = q.get("options", {})
        describe = [(k, json.dumps(v) if not isinstance(v, str) else v) for k, v in opts.items()]
        out.append(
            {
                "name": pol["name"],
                "kind": f"kernel {q.get('kind', pol['kernel']['qdisc'])}",
                "packets_in": sent_p + drops,
                "bytes_in": sent_b,  # tc counts no bytes for drops
                "packets_dropped": drops,
                "bytes_dropped": 0,
                "color_packets": [sent_p, 0, 0],
                "color_bytes": [sent_b, 0, 0],
                "max_queue_packets": maxp,
                "max_queue_bytes": maxb,
                "describe": [("dev", dev), *describe],
                "classes": [],
            }
        )
    return out


def _iperf_version() -> str:
    try:
        return run_cmd(["iperf3", "--version"]).splitlines()[0].strip()
    except (EmulationSetupError, IndexError, OSError):
        return "unknown"


def stderr_progress(quiet: bool) -> ProgressFn | None:
    """The bar on a terminal (:func:`qoslab.progress.emulation_bar`):
    elapsed/duration, frames forwarded and dropped; ``None`` when quiet or
    off a terminal."""
    from qoslab.progress import emulation_bar

    return emulation_bar(quiet)
