"""One run of a sweep -> its ``points`` row and ``flows`` rows.

Module-level functions only, so threads, processes and Dask workers all run
the same code on the same inputs: a run's numbers do not depend on where it
ran (the simulator is deterministic given scenario and seed).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from qoslab import _core
from qoslab.sweep.resolve import Run

__all__ = ["Outcome", "check_memory", "run_batch", "run_one", "summarise"]


_LIMIT: list[int] = []


def check_memory(text: str, filename: str, seed: int) -> None:
    """Refuses one run whose estimated peak memory (``_core.estimate_toml``)
    is over the limit ``qoslab run`` applies by default (half of physical
    RAM), before anything of it is allocated: ``qoslab.ResourceError``
    naming the estimate and the limit, as ``qoslab run`` does."""
    from qoslab.run import check_memory as check
    from qoslab.run import default_memory_limit

    if not _LIMIT:
        _LIMIT.append(default_memory_limit())
    check(
        _core.estimate_toml(text, filename, seed),
        _LIMIT[0],
        "the limit (a sweep uses qoslab run's default, half of RAM)",
    )


@dataclass
class Outcome:
    """What one run gave: rows, or the one-line error it failed with."""

    hash: str
    point: dict[str, Any]
    seed: int
    row: dict[str, Any] | None = None
    flows: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def summarise(raw: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The summary figures of a result dict (``_core.simulate_toml`` or the
    emulator's, same schema) as one row, and one row per flow."""
    flows = list(raw["flows"])
    tcp = [f for f in flows if f["protocol"] == "tcp"]
    sent = sum(int(f["packets_sent"]) for f in flows)
    lost = sum(int(f["packets_lost"]) for f in flows)
    sampled = [f for f in flows if int(f["rtt"]["samples"]) > 0]
    pols = list(raw["policies"])
    pin = sum(int(p["packets_in"]) for p in pols)
    pdrop = sum(int(p["packets_dropped"]) for p in pols)
    row: dict[str, Any] = {
        "scenario": raw["name"],
        "duration_s": raw["duration_ns"] / 1e9,
        "sum_goodput_bps": float(raw["sum_goodput_bps"]),
        "min_flow_goodput_bps": min((float(f["goodput_bps"]) for f in flows), default=None),
        "jain_fairness": float(raw["jain_fairness"]),
        "n_flows": len(flows),
        "n_tcp_flows": len(tcp),
        "packets_sent": sent,
        "packets_lost": lost,
        "loss_fraction": lost / sent if sent else 0.0,
        "retransmits": sum(int(f["retransmits"]) for f in flows),
        "timeouts": sum(int(f["timeouts"]) for f in flows),
        "fast_recoveries": sum(int(f["fast_recoveries"]) for f in flows),
        "rtt_p50_ms_mean": _mean([f["rtt"]["p50_ns"] / 1e6 for f in sampled]),
        "rtt_p95_ms_mean": _mean([f["rtt"]["p95_ns"] / 1e6 for f in sampled]),
        "rtt_p95_ms_max": max((f["rtt"]["p95_ns"] / 1e6 for f in sampled), default=None),
        "policy_packets_in": pin,
        "policy_packets_dropped": pdrop,
        "policy_drop_fraction": pdrop / pin if pin else 0.0,
        "policy_max_queue_bytes": max((int(p["max_queue_bytes"]) for p in pols), default=0),
        "events": int(raw["events"]),
    }
    frows = [
        {
            "flow": int(f["id"]),
            "label": str(f["label"]),
            "protocol": str(f["protocol"]),
            "src": str(f["from"]),
            "dst": str(f["to"]),
            "goodput_bps": float(f["goodput_bps"]),
            "bytes": int(f["bytes_delivered"]),
            "packets_sent": int(f["packets_sent"]),
            "retransmits": int(f["retransmits"]),
            "packets_lost": int(f["packets_lost"]),
            "timeouts": int(f["timeouts"]),
            "fast_recoveries": int(f["fast_recoveries"]),
            "rtt_samples": int(f["rtt"]["samples"]),
            "rtt_min_ms": f["rtt"]["min_ns"] / 1e6,
            "rtt_mean_ms": f["rtt"]["mean_ns"] / 1e6,
            "rtt_p50_ms": f["rtt"]["p50_ns"] / 1e6,
            "rtt_p95_ms": f["rtt"]["p95_ns"] / 1e6,
            "rtt_max_ms": f["rtt"]["max_ns"] / 1e6,
        }
        for f in flows
    ]
    return row, frows


def run_one(run: Run, stop: threading.Event | None = None) -> Outcome:
    """Simulates one run; a failure becomes the outcome's ``error``. ``stop``
    set (Ctrl-C in the main thread) cancels a simulation in progress."""
    out = Outcome(run.hash, run.point, run.seed)
    progress = None if stop is None else (lambda *_: not stop.is_set())
    try:
        check_memory(run.text, run.filename, run.seed)
        raw = _core.simulate_toml(run.text, run.filename, run.seed, progress)
    except _core.Cancelled:
        out.error = "cancelled"
        return out
    except (ValueError, RuntimeError, MemoryError) as e:
        out.error = " ".join(str(e).split())
        return out
    out.row, out.flows = summarise(raw)
    return out


def run_batch(runs: list[Run]) -> list[Outcome]:
    """Several runs in one task (processes and Dask: fewer, larger messages)."""
    return [run_one(r) for r in runs]
