"""Measures on a simulation result, shared by the experiments."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from qoslab.results import SimulationResult


def data_flows(r: SimulationResult) -> list[dict[str, Any]]:
    return [f for f in r.summary["flows"] if f["protocol"] not in ("ping",)]


def goodputs(r: SimulationResult, scale: float) -> list[float]:
    return [f["goodput_bps"] / scale for f in data_flows(r) if f["protocol"] == "tcp"]


def jain(values: Sequence[float]) -> float:
    v = np.asarray(values, dtype=np.float64)
    return float(v.sum() ** 2 / (len(v) * (v**2).sum())) if len(v) and (v**2).sum() else 0.0


def retx_pct(r: SimulationResult) -> float:
    fl = [f for f in data_flows(r) if f["protocol"] == "tcp"]
    sent = sum(f["packets_sent"] for f in fl)
    return 100.0 * sum(f["retransmits"] for f in fl) / sent if sent else 0.0


def rtt_mean_ms(r: SimulationResult, protocol: str = "tcp") -> float | None:
    fl = [f for f in r.summary["flows"] if f["protocol"] == protocol and f["rtt_ms"]["samples"]]
    n = sum(f["rtt_ms"]["samples"] for f in fl)
    return sum(f["rtt_ms"]["mean"] * f["rtt_ms"]["samples"] for f in fl) / n if n else None


def rtt_stat_ms(r: SimulationResult, key: str, agg: Callable[..., float]) -> float | None:
    vals = [f["rtt_ms"][key] for f in data_flows(r) if f["rtt_ms"]["samples"]]
    return agg(vals) if vals else None


def drops(r: SimulationResult) -> int:
    return sum(p["drops"]["packets"] for p in r.summary["policies"])


def mean_queue_bytes(r: SimulationResult) -> float | None:
    q = r.queue
    if not len(q) or "queue" not in r.recorded:
        return None
    return float(q["bytes"].to_numpy(dtype=np.float64).mean())


def interval_sums_bps(r: SimulationResult) -> np.ndarray:
    g = r.goodput
    return g.groupby("time_ns", sort=True)["goodput_bps"].sum().to_numpy(dtype=np.float64)


def longest_gap_ms(r: SimulationResult, after_s: float = 1.0) -> float | None:
    """The longest pause in any flow's packet timeline (segments sent)
    after ``after_s``: the "pauses" of the source's packet-time graphs."""
    seg = r.segments
    if not len(seg):
        return None
    seg = seg[seg["time_ns"] >= after_s * 1e9]
    gaps = [
        float(np.diff(np.sort(d["time_ns"].to_numpy(dtype=np.float64))).max(initial=0.0))
        for _, d in seg.groupby("flow")
    ]
    return max(gaps) / 1e6 if gaps else None


def curve_spread(r: SimulationResult, after_s: float = 1.0) -> float | None:
    """How far apart the per-flow IO-graph curves are: the largest
    (max - min) / mean over the recording intervals after ``after_s``."""
    g = r.goodput
    g = g[g["time_ns"] >= after_s * 1e9]
    if not len(g):
        return None
    p = g.pivot_table(index="time_ns", columns="flow", values="goodput_bps")
    mean = p.mean(axis=1)
    spread = (p.max(axis=1) - p.min(axis=1))[mean > 0] / mean[mean > 0]
    return float(spread.max()) if len(spread) else None


def ping_stats(r: SimulationResult) -> tuple[float | None, int, int]:
    """Median ping RTT (ms) of the pings that came back, how many came
    back, how many were sent."""
    p = r.ping
    sent = sum(f["packets_sent"] for f in r.summary["flows"] if f["protocol"] == "ping")
    med = float(p["rtt_ms"].median()) if len(p) else None
    return med, len(p), sent


def rel(a: float, b: float) -> float:
    """(a - b) / b: the relative gain of ``a`` over ``b``."""
    return (a - b) / b if b else float("inf")
