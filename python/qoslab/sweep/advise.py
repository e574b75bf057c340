"""``qoslab advise``: which policer Bc, which shaper queue, police or shape —
answered by a targeted sweep of simulations, beside the rules of thumb.

The set-up simulated: N TCP bulk flows (one sender, one receiver) over a
path of the given RTT; on the r1 -> r2 link (``--line-rate``, default
1 Gbit/s or 10 x the rate when faster), either a policer
``police = { cir = RATE, bc = Bc }`` or a tbf shaper
``{ rate = RATE, burst = max(2 x 1514 B, 1 ms x RATE), limit = Q }``.
Goodput is measured in the steady state (after ``--warmup``), per seed; a
seed draws the flows' start times (see ``Setup.scenario``).

Search: a bisection in log space over Bc (and over the tbf limit Q) for the
smallest value whose goodput reaches ``goal x CIR`` on **every** seed tried.
Goodput is not guaranteed to grow monotonically with Bc once seeds differ
(a loss burst can land differently), so the search does not trust one
crossing: its answer is the smallest passing value above the largest failing
value probed so far; when it has converged (the bracket within 10 %) it also
probes 1.25x and 1.5x the answer, and a failure there moves the bracket up
and the search goes on. The rules of thumb are probed first and seed the
bracket, so the search starts from what they found.

Rules of thumb (each simulated):
- Cisco ``police``: Bc defaults to CIR/32 bytes (1/4 s at CIR), at least 1500 B,
  as qoslab-core's policer has it (``cisco_default_bc``; pinned there by device
  outputs: a 3725's ``police cir 1000000`` shows ``bc 31250``, an ISR 4000's
  ``police 20000000`` shows ``bc 625000``).
- Juniper: burst-size-limit = the policed interface's line rate x 5 ms (the
  preferred method, when the interface's bandwidth is known), else 10 x MTU —
  "Determining Proper Burst Size for Traffic Policers" and "Two Methods for
  Calculating Burst-Size Limit" (Traffic Policers Feature Guide for EX9200
  Switches), Juniper Networks, juniper.net. Note: the line rate, not the
  policed rate (``--line-rate``, the link the policer sits on).
- "burst >= RTT x rate" (the bandwidth-delay product) for a policer.
- A BDP-sized shaper queue.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tomli_w

from qoslab import _core
from qoslab.sweep.execute import default_workers
from qoslab.sweep.worker import check_memory

__all__ = ["Advice", "advise", "main"]

MTU_BYTES = 1514  # an Ethernet frame of a 1500-byte IP packet
RESOLUTION = 1.1  # the bracket's width at convergence (max/min)
MAX_PROBES = 40  # per search: a bound on the loop whatever the curve does


@dataclass
class Probe:
    """One configuration run over every seed."""

    kind: str  # "police" | "shape" | "reference"
    value: int  # Bc or queue limit (bytes)
    goodput_bps: list[float] = field(default_factory=list)  # per seed, steady state
    jain: list[float] = field(default_factory=list)
    rtt_p95_ms: list[float] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "bytes": self.value,
            "goodput_bps_min": min(self.goodput_bps),
            "goodput_bps_mean": float(np.mean(self.goodput_bps)),
            "goodput_bps_max": max(self.goodput_bps),
            "jain_fairness": float(np.mean(self.jain)),
            "rtt_p95_ms": float(np.mean(self.rtt_p95_ms)),
            "loss_fraction": float(np.mean(self.loss)),
        }


@dataclass
class Setup:
    rate_bps: int
    rtt_ns: int
    flows: int
    cc: str
    profile: str
    seeds: list[int]
    duration_ns: int
    warmup_ns: int

    @property
    def bdp_bytes(self) -> int:
        return self.rate_bps * self.rtt_ns // 8_000_000_000

    line_bps: int = 0  # the link the policer/shaper sits on (0: the default)

    @property
    def link_bps(self) -> int:
        return self.line_bps or max(1_000_000_000, 10 * self.rate_bps)

    @property
    def tbf_burst_bytes(self) -> int:
        return max(2 * MTU_BYTES, self.rate_bps // 8000)

    def scenario(self, kind: str, value: int, seed: int = 1) -> str:
        """The scenario of one probe as TOML (read by the simulator's parser).

        Nothing in this set-up is random to the simulator (no loss, no timer
        lateness), so the seed varies what does vary in practice: each
        flow's start, uniform in [0, 100 ms) drawn from the seed."""
        starts = np.random.default_rng(seed).integers(0, 100_000_000, self.flows)
        access_ns = 250_000
        bottleneck_ns = self.rtt_ns // 2 - 2 * access_ns
        link = self.link_bps
        if kind == "police":
            policy: dict[str, Any] = {"police": {"cir": f"{self.rate_bps}bit", "bc": f"{value}B"}}
        elif kind == "shape":
            policy = {
                "shape": {
                    "kind": "tbf",
                    "rate": f"{self.rate_bps}bit",
                    "burst": f"{self.tbf_burst_bytes}B",
                    "limit": f"{value}B",
                }
            }
        else:  # reference: a link at the rate itself with a deep FIFO
            link = self.rate_bps
            policy = {"fifo": {"limit": f"{value}B"}}
        doc = {
            "scenario": {"name": f"advise-{kind}-{value}", "duration": f"{self.duration_ns}ns"},
            "topology": {
                "senders": 1,
                "receivers": 1,
                "access": {"rate": f"{max(link, self.link_bps)}bit", "delay": f"{access_ns}ns"},
                "bottleneck": {"rate": f"{link}bit", "delay": f"{bottleneck_ns}ns"},
            },
            "policy": {"bottleneck": {"egress": policy}},
            "traffic": [
                {
                    "kind": "tcp-bulk",
                    "flows": 1,
                    "profile": self.profile,
                    "cc": self.cc,
                    "start": f"{int(t)}ns",
                }
                for t in starts
            ],
            "record": {"interval": "100ms", "series": ["goodput"]},
        }
        return tomli_w.dumps(doc)


def _steady(raw: dict[str, Any], warmup_ns: int, duration_ns: int) -> float:
    g = raw["series"]["goodput"]
    t = np.asarray(g["time_ns"], dtype=np.int64)
    b = np.asarray(g["bytes"], dtype=np.float64)
    return float(b[t > warmup_ns].sum() * 8e9 / (duration_ns - warmup_ns))


def _run(args: tuple[str, int, int, int]) -> tuple[float, float, float, float]:
    """One (scenario, seed): steady goodput, Jain, mean p95 RTT, loss."""
    text, seed, warmup_ns, duration_ns = args
    check_memory(text, "<advise>", seed)
    raw = _core.simulate_toml(text, "<advise>", seed, None)
    flows = raw["flows"]
    sent = sum(f["packets_sent"] for f in flows)
    lost = sum(f["packets_lost"] for f in flows)
    p95 = [f["rtt"]["p95_ns"] / 1e6 for f in flows if f["rtt"]["samples"]]
    return (
        _steady(raw, warmup_ns, duration_ns),
        float(raw["jain_fairness"]),
        float(np.mean(p95)) if p95 else float("nan"),
        lost / sent if sent else 0.0,
    )


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Runner:
    """Runs probes (all seeds of several configurations at once) on a pool,
    remembering every result."""

    def __init__(self, setup: Setup, workers: int) -> None:
        self.setup = setup
        self.pool = ProcessPoolExecutor(max_workers=workers, initializer=_ignore_sigint)
        self.probes: dict[tuple[str, int], Probe] = {}
        self.runs = 0

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    def probe(self, wanted: list[tuple[str, int]]) -> None:
        todo = [w for w in dict.fromkeys(wanted) if w not in self.probes]
        s = self.setup
        jobs = [
            (s.scenario(k, v, seed), seed, s.warmup_ns, s.duration_ns)
            for k, v in todo
            for seed in s.seeds
        ]
        try:
            results = list(self.pool.map(_run, jobs))
        except KeyboardInterrupt:
            self.pool.shutdown(wait=False, cancel_futures=True)
            raise
        self.runs += len(jobs)
        n = len(s.seeds)
        for i, (k, v) in enumerate(todo):
            p = Probe(k, v)
            for g, j, r, loss in results[i * n : (i + 1) * n]:
                p.goodput_bps.append(g)
                p.jain.append(j)
                p.rtt_p95_ms.append(r)
                p.loss.append(loss)
            self.probes[(k, v)] = p

    def of(self, kind: str) -> list[Probe]:
        return sorted((p for (k, _), p in self.probes.items() if k == kind), key=lambda p: p.value)


class Search:
    """Smallest passing value above the largest failing one (module doc)."""

    def __init__(self, kind: str, runner: Runner, target_bps: float, floor: int, cap: int):
        self.kind, self.runner, self.target = kind, runner, target_bps
        self.floor, self.cap = floor, cap
        self.rounds = 0
        self.unreachable = False

    def passes(self, p: Probe) -> bool:
        return min(p.goodput_bps) >= self.target

    def state(self) -> tuple[int | None, int | None]:
        probes = self.runner.of(self.kind)
        fails = [p.value for p in probes if not self.passes(p)]
        top_fail = max(fails) if fails else None
        above = [
            p.value for p in probes if self.passes(p) and (top_fail is None or p.value > top_fail)
        ]
        return top_fail, (min(above) if above else None)

    def next(self) -> list[int]:
        """The next values to probe ([] when done)."""
        if self.unreachable or self.rounds >= MAX_PROBES:
            return []
        self.rounds += 1
        fail, best = self.state()
        if best is None:  # nothing passes yet: look higher
            top = max((p.value for p in self.runner.of(self.kind)), default=self.floor)
            if top >= self.cap:
                self.unreachable = True
                return []
            return [min(self.cap, top * 4)]
        lo = fail if fail is not None else self.floor
        if best <= self.floor or best / lo <= RESOLUTION:
            probed = {p.value for p in self.runner.of(self.kind)}
            check = [v for v in (int(best * 1.25), int(best * 1.5)) if v not in probed]
            return check  # a failure among them moves the bracket up
        return [round(math.sqrt(lo * best))]

    def answer(self) -> Probe | None:
        _, best = self.state()
        return None if best is None else self.runner.probes[(self.kind, best)]


@dataclass
class Advice:
    setup: Setup
    target_bps: float
    reference: Probe
    police: Probe | None
    shape: Probe | None
    rules: list[tuple[str, str, Probe]]
    verdict: str
    reasons: list[str]
    runs: int
    wall_s: float
    curves: dict[str, list[Probe]]


def advise(setup: Setup, goal: float, workers: int, curve: bool = False) -> Advice:
    """Runs the search (see the module doc)."""
    t0 = time.monotonic()
    s = setup
    bdp = max(MTU_BYTES, s.bdp_bytes)
    rules: list[tuple[str, str, int]] = [
        ("police", "Cisco police default: Bc = CIR/32", max(1500, s.rate_bps // 32)),
        ("police", "Juniper: burst = 5 ms x line rate", s.link_bps * 5 // 8000),
        ("police", "Juniper: burst = 10 x MTU", 10 * 1500),
        ("police", "burst = RTT x rate (BDP)", bdp),
        ("shape", "shaper queue = BDP", bdp),
    ]
    target = goal * s.rate_bps
    runner = Runner(s, workers)
    try:
        first = [(k, v) for k, _, v in rules]
        first += [("reference", 4 * bdp), ("police", 2 * MTU_BYTES), ("shape", MTU_BYTES)]
        first += [("police", 4 * bdp), ("shape", 4 * bdp)]
        if curve:  # a coarse grid for the figure, beside the search's own probes
            for v in np.geomspace(2 * MTU_BYTES, 4 * bdp, 6):
                first += [("police", int(v)), ("shape", int(v))]
        runner.probe(first)
        searches = [
            Search("police", runner, target, 2 * MTU_BYTES, 64 * bdp),
            Search("shape", runner, target, MTU_BYTES, 64 * bdp),
        ]
        while True:
            wanted = [(x.kind, v) for x in searches for v in x.next()]
            if not wanted:
                break
            runner.probe(wanted)
    finally:
        runner.close()
    ref = runner.probes[("reference", 4 * bdp)]
    police, shape = searches[0].answer(), searches[1].answer()
    verdict, reasons = _verdict(police, shape, s)
    return Advice(
        s,
        target,
        ref,
        police,
        shape,
        [(k, name, runner.probes[(k, v)]) for k, name, v in rules],
        verdict,
        reasons,
        runner.runs,
        time.monotonic() - t0,
        {"police": runner.of("police"), "shape": runner.of("shape")},
    )


def _verdict(police: Probe | None, shape: Probe | None, s: Setup) -> tuple[str, list[str]]:
    """Police when it reaches the goal with at most 1 % loss and fairness within
    0.05 of shaping's (it adds no delay); otherwise shape, whose cost is delay."""
    if police is None and shape is None:
        return "neither", ["neither reaches the goal within 64 x BDP of burst or queue"]
    if shape is None:
        return "police", ["no shaper queue up to 64 x BDP reaches the goal"]
    if police is None:
        return "shape", ["no policer Bc up to 64 x BDP reaches the goal"]
    p, q = police.summary(), shape.summary()
    added = q["rtt_p95_ms"] - s.rtt_ns / 1e6
    reasons = []
    ok_loss = p["loss_fraction"] <= 0.01
    ok_fair = p["jain_fairness"] >= q["jain_fairness"] - 0.05
    reasons.append(
        f"policing loses {p['loss_fraction'] * 100:.2f} % of packets (shaping "
        f"{q['loss_fraction'] * 100:.2f} %), Jain fairness {p['jain_fairness']:.3f} vs "
        f"{q['jain_fairness']:.3f}"
    )
    reasons.append(
        f"shaping adds {added:.1f} ms at the p95 RTT ({q['rtt_p95_ms']:.1f} vs "
        f"{p['rtt_p95_ms']:.1f} ms policed)"
    )
    return ("police" if ok_loss and ok_fair else "shape"), reasons


# --- output --------------------------------------------------------------------


def _b(n: float) -> str:
    return f"{n / 1000:.1f} kB" if n < 1e6 else f"{n / 1e6:.2f} MB"


def _mbit(bps: float) -> str:
    return f"{bps / 1e6:.2f} Mbit/s"


def _line(p: Probe, s: Setup, target: float) -> str:
    m = p.summary()
    ok = "meets" if min(p.goodput_bps) >= target else "misses"
    return (
        f"goodput {_mbit(m['goodput_bps_min'])}-{_mbit(m['goodput_bps_max'])} "
        f"({m['goodput_bps_min'] / s.rate_bps * 100:.1f}-"
        f"{m['goodput_bps_max'] / s.rate_bps * 100:.1f} "
        f"% of CIR: {ok} the goal), loss {m['loss_fraction'] * 100:.2f} %, "
        f"p95 RTT {m['rtt_p95_ms']:.1f} ms, Jain {m['jain_fairness']:.3f}"
    )


def render(a: Advice, goal: float) -> str:
    s = a.setup
    ms = s.rtt_ns / 1e6
    out = [
        f"qoslab advise: {_mbit(s.rate_bps)}, RTT {ms:g} ms, {s.flows} {s.cc} flows "
        f"({s.profile}); goal {goal * 100:g} % of CIR = {_mbit(a.target_bps)} on every seed",
        f"  {len(s.seeds)} seeds x {s.duration_ns / 1e9:g} s simulated, goodput after "
        f"{s.warmup_ns / 1e9:g} s; BDP = {_b(s.bdp_bytes)}; {a.runs} runs in {a.wall_s:.1f} s",
        f"  ceiling: a {_mbit(s.rate_bps)} link with a deep FIFO carries "
        f"{_mbit(a.reference.summary()['goodput_bps_mean'])} of goodput (headers)",
        "",
    ]
    if a.police:
        v = a.police.value
        out.append(
            f"Police: the smallest Bc reaching the goal is {_b(v)} "
            f"({v / max(1, s.bdp_bytes):.2f} x BDP, "
            f"{v * 8e3 / s.rate_bps:.1f} ms at CIR)."
        )
        out.append(f"  {_line(a.police, s, a.target_bps)}")
    else:
        out.append("Police: no Bc up to 64 x BDP reached the goal.")
    if a.shape:
        v = a.shape.value
        out.append(
            f"Shape (tbf, burst {_b(s.tbf_burst_bytes)}): the smallest queue reaching the goal is "
            f"{_b(v)} ({v * 8e3 / s.rate_bps:.1f} ms of queueing at most at the rate)."
        )
        out.append(f"  {_line(a.shape, s, a.target_bps)}")
    else:
        out.append("Shape: no tbf queue up to 64 x BDP reached the goal.")
    out.append("")
    out.append(f"Verdict: {a.verdict}. " + "; ".join(a.reasons) + ".")
    out.append("")
    out.append("Rules of thumb, simulated:")
    for _, name, p in a.rules:
        out.append(f"  {name:<36} {_b(p.value):>10}  {_line(p, s, a.target_bps)}")
    out.append(
        "Goodput is not monotonic in Bc across seeds for certain; the answers are the smallest "
        "probed values above the largest failing one, checked at 1.25x and 1.5x."
    )
    return "\n".join(out)


def to_json(a: Advice, goal: float) -> dict[str, Any]:
    s = a.setup
    return {
        "rate_bps": s.rate_bps,
        "rtt_ms": s.rtt_ns / 1e6,
        "flows": s.flows,
        "cc": s.cc,
        "profile": s.profile,
        "goal": goal,
        "target_goodput_bps": a.target_bps,
        "seeds": s.seeds,
        "duration_s": s.duration_ns / 1e9,
        "warmup_s": s.warmup_ns / 1e9,
        "bdp_bytes": s.bdp_bytes,
        "reference_goodput_bps": a.reference.summary()["goodput_bps_mean"],
        "police": None if a.police is None else {"bc_bytes": a.police.value, **a.police.summary()},
        "shape": None
        if a.shape is None
        else {
            "kind": "tbf",
            "burst_bytes": s.tbf_burst_bytes,
            "limit_bytes": a.shape.value,
            **a.shape.summary(),
            "added_p95_rtt_ms": a.shape.summary()["rtt_p95_ms"] - s.rtt_ns / 1e6,
        },
        "verdict": a.verdict,
        "reasons": a.reasons,
        "rules_of_thumb": [
            {
                "rule": name,
                "applies_to": k,
                **p.summary(),
                "meets_goal": min(p.goodput_bps) >= a.target_bps,
            }
            for k, name, p in a.rules
        ],
        "curves": {k: [p.summary() for p in ps] for k, ps in a.curves.items()},
        "runs": a.runs,
        "wall_s": round(a.wall_s, 2),
    }


def figure(a: Advice, out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    s = a.setup
    for ax, kind, label in (
        (axes[0], "police", "policer Bc"),
        (axes[1], "shape", "tbf queue limit"),
    ):
        ps = a.curves[kind]
        x = np.array([p.value for p in ps], dtype=float) / 1000
        mean = np.array([np.mean(p.goodput_bps) for p in ps]) / 1e6
        lo = np.array([min(p.goodput_bps) for p in ps]) / 1e6
        hi = np.array([max(p.goodput_bps) for p in ps]) / 1e6
        ax.plot(x, mean, marker="o", ms=3, label="goodput (mean; band: seeds' min-max)")
        ax.fill_between(x, lo, hi, alpha=0.25)
        ax.axhline(a.target_bps / 1e6, color="k", ls="--", lw=0.8, label="goal")
        best = a.police if kind == "police" else a.shape
        if best is not None:
            ax.axvline(best.value / 1000, color="g", lw=1, label=f"answer {_b(best.value)}")
        for k, name, p in a.rules:
            if k == kind:
                ax.axvline(p.value / 1000, color="grey", ls=":", lw=0.8)
                ax.annotate(
                    name.split(":")[0],
                    (p.value / 1000, 0.98),
                    xycoords=("data", "axes fraction"),
                    rotation=90,
                    fontsize=7,
                    va="top",
                    ha="right",
                    color="grey",
                )
        ax.set_xscale("log")
        ax.set_xlabel(f"{label} (kB)")
        ax.set_ylabel("steady-state goodput (Mbit/s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
        if kind == "shape":
            ax2 = ax.twinx()
            ax2.plot(
                x, [p.summary()["rtt_p95_ms"] for p in ps], color="tab:red", marker=".", lw=0.8
            )
            ax2.set_ylabel("p95 RTT (ms)", color="tab:red")
    fig.suptitle(
        f"{_mbit(s.rate_bps)}, RTT {s.rtt_ns / 1e6:g} ms, {s.flows} {s.cc} flows: police vs shape"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".tmp-{out.name}")
    fig.savefig(tmp, format=out.suffix[1:] or "png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, out)
    return out


# --- command line ------------------------------------------------------------------


def _parse(args: argparse.Namespace) -> Setup:
    def conv(fn: Any, text: str, opt: str) -> int:
        try:
            return int(fn(text))
        except ValueError as e:
            raise ValueError(f"{opt}: {getattr(e, 'message', e)}") from None

    rate = conv(_core.parse_rate, args.rate, "--rate")
    rtt = conv(_core.parse_time, args.rtt, "--rtt")
    dur = conv(_core.parse_time, args.duration, "--duration")
    warm = conv(_core.parse_time, args.warmup, "--warmup")
    if rate < 64_000:
        raise ValueError(f"--rate: at least 64kbit, got '{args.rate}'")
    if rtt < 2_000_000:
        raise ValueError(f"--rtt: at least 2ms (the access links take 1 ms), got '{args.rtt}'")
    if not 1 <= args.flows <= 1000:
        raise ValueError(f"--flows: 1 to 1000, got {args.flows}")
    if not 0 < args.goal < 1:
        raise ValueError(f"--goal: a fraction of the rate in (0, 1), got {args.goal}")
    if not 1 <= args.seeds <= 100:
        raise ValueError(f"--seeds: 1 to 100, got {args.seeds}")
    if not 0 <= warm < dur:
        raise ValueError("--warmup must be shorter than --duration")
    line = conv(_core.parse_rate, args.line_rate, "--line-rate") if args.line_rate else 0
    if line and line < rate:
        raise ValueError(f"--line-rate: at least --rate, got '{args.line_rate}'")
    seeds = list(range(1, args.seeds + 1))
    setup = Setup(rate, rtt, args.flows, args.cc, args.profile, seeds, dur, warm, line)
    _core.scenario_info(setup.scenario("police", 10_000), "<advise>")  # cc, profile
    return setup


def main(args: argparse.Namespace) -> int:
    try:
        setup = _parse(args)
    except _core.ScenarioError as e:
        raise ValueError(f"{e.path}: {e.message}") from None
    out = Path(args.out) if args.out else None
    if out is not None and out.exists() and not out.is_dir():
        raise ValueError(f"--out {out}: exists and is not a directory")
    workers = args.workers or default_workers()
    a = advise(setup, args.goal, workers, curve=out is not None)
    doc = to_json(a, args.goal)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        doc["figure"] = str(figure(a, out / "advise.png"))
        tmp = out / ".tmp-advise.json"
        tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, out / "advise.json")
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(render(a, args.goal))
        if out is not None:
            print(f"wrote {out / 'advise.json'} and {doc['figure']}")
    sys.stdout.flush()
    return 0
