"""Figures of simulation results (matplotlib, no display needed).

Every function takes one :class:`~qoslab.results.SimulationResult`, several
(a list, or a dict ``label -> result``) for an overlay, and returns a
:class:`matplotlib.figure.Figure` — or ``None`` when the scenario did not
record the series the figure needs (``[record] series``), so callers can
skip it. Figures are built with the object API (no ``pyplot``, no global
state), so they render with the Agg backend anywhere, also without a display.

The figures follow what engineers look at in Wireshark and tc:

- :func:`io_graph` — throughput per flow and their sum over time (IO graph);
- :func:`time_sequence` — the time-sequence (Stevens) graph of one flow,
  retransmitted segments marked;
- :func:`rtt_time`, :func:`cwnd`, :func:`queue` (queue length and bucket
  tokens), :func:`colors` (stacked per-colour rates), :func:`ping`
  (ping RTT under load), :func:`rtt_cdf`, :func:`goodput_cdf`.

:func:`figures` makes every figure that has data; :func:`save` writes one
as PNG and SVG.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from qoslab.results import SimulationResult

__all__ = [
    "FIGURES",
    "Results",
    "colors",
    "cwnd",
    "figures",
    "goodput_cdf",
    "io_graph",
    "ping",
    "queue",
    "rtt_cdf",
    "rtt_time",
    "save",
    "time_sequence",
]

#: One result, a sequence of results, or ``label -> result``.
Results = SimulationResult | Sequence[SimulationResult] | Mapping[str, SimulationResult]

_SIZE = (8.0, 4.0)
_COLOUR_FILL = {"green": "#2ca02c", "yellow": "#e6b800", "red": "#d62728"}


def labelled(results: Results) -> list[tuple[str, SimulationResult]]:
    """``(label, result)`` pairs; labels are the scenario names, made unique."""
    if isinstance(results, SimulationResult):
        return [(results.summary["scenario"], results)]
    if isinstance(results, Mapping):
        return [(str(k), v) for k, v in results.items()]
    out: list[tuple[str, SimulationResult]] = []
    seen: dict[str, int] = {}
    for r in results:
        name = r.summary["scenario"]
        seen[name] = seen.get(name, 0) + 1
        out.append((name if seen[name] == 1 else f"{name} ({seen[name]})", r))
    return out


def _figure(rows: int = 1, height: float | None = None) -> tuple[Figure, list[Axes]]:
    fig = Figure(figsize=(_SIZE[0], height or _SIZE[1] * (1 if rows == 1 else 0.7 * rows)))
    axes = fig.subplots(rows, 1, sharex=True, squeeze=False)[:, 0].tolist()
    return fig, axes


def _finish(fig: Figure, ax: Axes, title: str, legend: bool = True) -> Figure:
    ax.set_title(title)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small", loc="best")
    for a in fig.axes:
        a.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def _has(r: SimulationResult, series: str) -> bool:
    table = "queue" if series == "tokens" else series  # tokens live in the queue table
    return series in r.recorded and len(getattr(r, table)) > 0


def _data_flows(r: SimulationResult) -> list[int]:
    f = r.flows
    if not len(f):
        return []
    return [int(i) for i in f.loc[f["protocol"] != "ping", "id"]]


def _flow_label(r: SimulationResult, flow: int) -> str:
    f = r.flows
    row = f.loc[f["id"] == flow]
    if not len(row):
        return f"flow {flow}"
    row = row.iloc[0]
    return f"flow {flow} ({row['protocol']} {row['from']}->{row['to']})"


def _pick(results: Results, series: str) -> list[tuple[str, SimulationResult]]:
    return [(label, r) for label, r in labelled(results) if _has(r, series)]


def io_graph(results: Results) -> Figure | None:
    """Goodput per flow and the sum over time, in Mbit/s (Wireshark's IO
    graph). Overlays draw each run's sum bold and its flows thin."""
    runs = _pick(results, "goodput")
    if not runs:
        return None
    fig, (ax,) = _figure()
    single = len(runs) == 1
    for i, (label, r) in enumerate(runs):
        g = r.goodput
        data = set(_data_flows(r))
        g = g[g["flow"].isin(data)] if data else g
        colour = None if single else f"C{i}"
        for flow, part in g.groupby("flow", sort=True):
            ax.plot(
                part["time_s"],
                part["goodput_bps"] / 1e6,
                lw=0.8 if single else 0.5,
                alpha=0.9 if single else 0.35,
                color=colour,
                label=_flow_label(r, int(flow)) if single else None,
            )
        total = g.groupby("time_s", sort=True)["goodput_bps"].sum()
        ax.plot(
            total.index,
            total.to_numpy() / 1e6,
            lw=2.0,
            color="black" if single else colour,
            label="sum" if single else f"{label}: sum",
        )
    ax.set_xlabel("time (s)")
    ax.set_ylabel("goodput (Mbit/s)")
    ax.set_ylim(bottom=0)
    return _finish(fig, ax, "IO graph: goodput per flow and sum")


def time_sequence(result: SimulationResult, flow: int | None = None) -> Figure | None:
    """Time-sequence (Stevens) graph of ``flow`` (default: the first data
    flow): each segment sent at its sequence number, retransmissions in red.
    A policed flow shows the staircase of bursts and RTO pauses."""
    if not _has(result, "segments"):
        return None
    seg = result.segments
    if flow is None:
        flows = [f for f in _data_flows(result) if f in set(seg["flow"].tolist())]
        flow = flows[0] if flows else int(seg["flow"].iloc[0])
    s = seg[seg["flow"] == flow]
    if not len(s):
        return None
    fig, (ax,) = _figure()
    retx = s["retransmit"].to_numpy(dtype=bool)
    seq = s["seq"].to_numpy(dtype=np.float64)
    ax.plot(s["time_s"][~retx], seq[~retx] / 1e6, ".", ms=1.5, color="C0", label="sent")
    if retx.any():
        ax.plot(s["time_s"][retx], seq[retx] / 1e6, "x", ms=4, color="C3", label="retransmitted")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("sequence number (MB)")
    return _finish(fig, ax, f"Time-sequence graph: {_flow_label(result, flow)}")


def rtt_time(results: Results) -> Figure | None:
    """RTT samples over time (ms), per flow; overlays colour by run."""
    runs = _pick(results, "rtt")
    if not runs:
        return None
    fig, (ax,) = _figure()
    single = len(runs) == 1
    for i, (label, r) in enumerate(runs):
        for j, (flow, part) in enumerate(r.rtt.groupby("flow", sort=True)):
            ax.plot(
                part["time_s"],
                part["rtt_ms"],
                ".",
                ms=1.5,
                color=None if single else f"C{i}",
                label=_flow_label(r, int(flow)) if single else (label if j == 0 else None),
            )
    ax.set_xlabel("time (s)")
    ax.set_ylabel("RTT (ms)")
    ax.set_ylim(bottom=0)
    return _finish(fig, ax, "RTT over time")


def cwnd(results: Results, flow: int | None = None) -> Figure | None:
    """Congestion window (solid) and ssthresh (dashed) over time, in KB, of
    every flow or of ``flow``. A huge initial ssthresh is clipped from view."""
    runs = _pick(results, "cwnd")
    if not runs:
        return None
    fig, (ax,) = _figure()
    single = len(runs) == 1
    top = 0.0
    for i, (label, r) in enumerate(runs):
        c = r.cwnd if flow is None else r.cwnd[r.cwnd["flow"] == flow]
        for j, (fl, part) in enumerate(c.groupby("flow", sort=True)):
            colour = f"C{j}" if single else f"C{i}"
            name = _flow_label(r, int(fl)) if single else (label if j == 0 else None)
            kb = part["cwnd_bytes"].to_numpy(dtype=np.float64) / 1e3
            top = max(top, float(kb.max(initial=0.0)))
            ax.plot(part["time_s"], kb, lw=1.0, color=colour, label=name)
            ax.plot(part["time_s"], part["ssthresh_bytes"] / 1e3, "--", lw=0.8, color=colour)
    ax.set_ylim(0, top * 1.3 + 1.0)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("KB (solid cwnd, dashed ssthresh)")
    return _finish(fig, ax, "Congestion window and ssthresh")


def queue(results: Results) -> Figure | None:
    """Queue length (packets) of each policy and, when recorded, its bucket
    tokens (bytes) below."""
    runs = [(lb, r) for lb, r in labelled(results) if _has(r, "queue") or _has(r, "tokens")]
    if not runs:
        return None
    with_q = any("queue" in r.recorded for _, r in runs)
    with_t = any("tokens" in r.recorded for _, r in runs)
    fig, axes = _figure(int(with_q) + int(with_t))
    single = len(runs) == 1
    for i, (label, r) in enumerate(runs):
        names = dict(zip(r.policies.get("name", []), range(len(r.policies)), strict=False))
        inv = {v: k for k, v in names.items()}
        for j, (pol, part) in enumerate(r.queue.groupby("policy", sort=True)):
            colour = f"C{j}" if single else f"C{i}"
            name = inv.get(int(pol), f"policy {pol}")
            name = name if single else f"{label}: {name}"
            k = 0
            if with_q:
                if "queue" in r.recorded:
                    axes[0].step(part["time_s"], part["packets"], where="post", color=colour)
                    axes[0].plot([], [], color=colour, label=name)
                k = 1
            if with_t and "tokens" in r.recorded:
                axes[k].step(part["time_s"], part["tokens_bytes"] / 1e3, where="post", color=colour)
                if not with_q:
                    axes[k].plot([], [], color=colour, label=name)
    if with_q:
        axes[0].set_ylabel("queue (packets)")
    if with_t:
        axes[-1].set_ylabel("tokens (KB)")
    axes[-1].set_xlabel("time (s)")
    for a in axes:
        a.set_ylim(bottom=0)
    return _finish(fig, axes[0], "Queue length and bucket tokens")


def colors(results: Results) -> Figure | None:
    """Rates per colour stacked (green, yellow, red bytes offered to each
    metered policy per interval), drops as a black line; one panel per run."""
    runs = _pick(results, "colors")
    if not runs:
        return None
    fig, axes = _figure(len(runs))
    for ax, (label, r) in zip(axes, runs, strict=True):
        c = r.colors
        step = r.raw["record_interval_ns"] / 1e9
        per = c.groupby("time_s", sort=True)[
            ["green_bytes", "yellow_bytes", "red_bytes", "dropped_bytes"]
        ].sum()
        mbps = per.to_numpy(dtype=np.float64) * 8 / step / 1e6
        ax.stackplot(
            per.index,
            mbps[:, 0],
            mbps[:, 1],
            mbps[:, 2],
            colors=list(_COLOUR_FILL.values()),
            labels=list(_COLOUR_FILL),
            step="pre",
            alpha=0.8,
        )
        ax.step(per.index, mbps[:, 3], where="pre", color="black", lw=0.8, label="dropped")
        ax.set_ylabel("Mbit/s")
        if len(runs) > 1:
            ax.set_title(label, fontsize="small")
        ax.legend(fontsize="small", loc="upper right")
    axes[-1].set_xlabel("time (s)")
    fig.suptitle("Per-colour rates (stacked) and drops")
    for a in axes:
        a.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def ping(results: Results) -> Figure | None:
    """Ping RTT under load (ms) against time, one line per run."""
    runs = _pick(results, "ping")
    if not runs:
        return None
    fig, (ax,) = _figure()
    for i, (label, r) in enumerate(runs):
        p = r.ping
        ax.plot(p["time_s"], p["rtt_ms"], "o-", ms=3, lw=0.8, color=f"C{i}", label=label)
    ax.set_xlabel("time sent (s)")
    ax.set_ylabel("ping RTT (ms)")
    # Runs compared side by side can differ by orders of magnitude (a full
    # 1000-packet queue at 180 kbit/s against a short one): a linear axis
    # would flatten all but the slowest to zero.
    rtts = np.concatenate([r.ping["rtt_ms"].to_numpy(dtype=np.float64) for _, r in runs])
    rtts = rtts[np.isfinite(rtts) & (rtts > 0)]
    if len(rtts) and rtts.max() > 100 * rtts.min():
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    return _finish(fig, ax, "Ping RTT under load")


def _cdf(ax: Axes, values: np.ndarray, **kw: Any) -> None:
    v = np.sort(values[np.isfinite(values)])
    if len(v):
        ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", **kw)


def rtt_cdf(results: Results) -> Figure | None:
    """CDF of the RTT samples: per flow for one run, pooled per run otherwise."""
    runs = _pick(results, "rtt")
    if not runs:
        return None
    fig, (ax,) = _figure()
    if len(runs) == 1:
        r = runs[0][1]
        for flow, part in r.rtt.groupby("flow", sort=True):
            _cdf(ax, part["rtt_ms"].to_numpy(dtype=np.float64), label=_flow_label(r, int(flow)))
    else:
        for label, r in runs:
            _cdf(ax, r.rtt["rtt_ms"].to_numpy(dtype=np.float64), label=label)
    ax.set_xlabel("RTT (ms)")
    ax.set_ylabel("fraction of samples")
    ax.set_ylim(0, 1.02)
    return _finish(fig, ax, "CDF of RTT")


def goodput_cdf(results: Results) -> Figure | None:
    """CDF of per-flow goodput per recording interval (Mbit/s): per flow for
    one run, all flows pooled per run otherwise."""
    runs = _pick(results, "goodput")
    if not runs:
        return None
    fig, (ax,) = _figure()
    for label, r in runs:
        data = set(_data_flows(r))
        g = r.goodput[r.goodput["flow"].isin(data)] if data else r.goodput
        if len(runs) == 1:
            for flow, part in g.groupby("flow", sort=True):
                _cdf(ax, part["goodput_bps"].to_numpy() / 1e6, label=_flow_label(r, int(flow)))
        else:
            _cdf(ax, g["goodput_bps"].to_numpy() / 1e6, label=label)
    ax.set_xlabel("goodput per interval (Mbit/s)")
    ax.set_ylabel("fraction of intervals")
    ax.set_ylim(0, 1.02)
    return _finish(fig, ax, "CDF of per-flow goodput")


def _time_sequence_first(results: Results) -> Figure | None:
    runs = _pick(results, "segments")
    return time_sequence(runs[0][1]) if runs else None


#: ``name -> (title, function)`` in report order; each takes ``Results``.
FIGURES: dict[str, tuple[str, Callable[[Results], Figure | None]]] = {
    "io_graph": ("Throughput (IO graph)", io_graph),
    "time_sequence": ("Time-sequence graph", _time_sequence_first),
    "rtt": ("RTT over time", rtt_time),
    "cwnd": ("cwnd and ssthresh", cwnd),
    "queue": ("Queue and tokens", queue),
    "colors": ("Per-colour rates", colors),
    "ping": ("Ping under load", ping),
    "rtt_cdf": ("RTT CDF", rtt_cdf),
    "goodput_cdf": ("Goodput CDF", goodput_cdf),
}


def figures(results: Results) -> dict[str, Figure]:
    """Every figure of :data:`FIGURES` that has data, by name."""
    out: dict[str, Figure] = {}
    for name, (_, fn) in FIGURES.items():
        fig = fn(results)
        if fig is not None:
            out[name] = fig
    return out


def save(fig: Figure, stem: str | os.PathLike[str]) -> list[Path]:
    """Writes ``stem.png`` (100 dpi) and ``stem.svg``; returns both paths."""
    from qoslab.traceio import replacing

    base = Path(stem)
    base.parent.mkdir(parents=True, exist_ok=True)
    paths = [base.with_suffix(".png"), base.with_suffix(".svg")]
    for path, fmt, dpi in ((paths[0], "png", 100), (paths[1], "svg", None)):
        with replacing(path, binary=True) as f:  # never a half-written figure
            fig.savefig(f, format=fmt, dpi=dpi)
    return paths
