"""Figures of simulation results (matplotlib, no display needed).

Every function takes one :class:`~qoslab.results.SimulationResult`, several
(a list, or a dict ``label -> result``) for a comparison, and returns a
:class:`matplotlib.figure.Figure` — or ``None`` when the scenario did not
record the series the figure needs (``[record] series``), so callers can
skip it. Figures are built with the object API (no ``pyplot``, no global
state), so they render with the Agg backend anywhere, also without a display.

The figures follow what engineers look at in Wireshark, tcptrace, tc and Flent:

- :func:`io_graph` — goodput per flow, their sum and the wire rate at the
  bottleneck policy (or, for a capture, on the wire) per bin, the bin printed;
- :func:`time_sequence` — the time-sequence (Stevens) graph of one flow as
  tcptrace draws it: segments sent, retransmissions in red, and, when the
  result has them (a capture analysed by ``qoslab analyze``), the ACK line,
  the receive-window line and SACK blocks; a second panel zooms on the first
  retransmission;
- :func:`rtt_time`, :func:`cwnd`, :func:`queue` (queue length of queues and
  shapers, bucket tokens of policers), :func:`colors` (one panel per colour,
  one shared y-scale), :func:`ping`, :func:`rtt_cdf`, :func:`goodput_cdf`;
- :func:`policy_classes` — per-class throughput, drops and peak queue of a
  policy tree, by the user's class ids;
- :func:`overview` — the Flent-like page of a comparison: totals, per-flow
  box plots, ping CDF.

A comparison never lets one run flatten the others: time-series figures of
several runs are small multiples (one panel per run, each titled with its
label and scaled on its own), CDFs of values spanning more than 10x are on
a log x-axis. RTT and ping panels whose largest samples (RTO-inflated) would
flatten the body get a log y-axis, the samples above 4x the p95
marked in red with their count and maximum.

Everything is decimated to screen resolution before it is drawn: a line
keeps the minimum and maximum of each pixel column (:func:`decimate_line`),
a scatter one point per pixel cell (:func:`decimate_points`), a CDF one step
per pixel — so a figure draws a few thousand points whatever the run length.

:func:`figures` makes every figure that has data; :func:`save` writes one
(PNG by default).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from qoslab.results import SimulationResult

__all__ = [
    "DPI",
    "FIGURES",
    "PIXELS",
    "Results",
    "colors",
    "cwnd",
    "decimate_line",
    "decimate_points",
    "figures",
    "goodput_cdf",
    "io_graph",
    "overview",
    "ping",
    "policy_classes",
    "queue",
    "render",
    "render_jobs",
    "rtt_cdf",
    "rtt_time",
    "save",
    "time_sequence",
]

#: One result, a sequence of results, or ``label -> result``.
Results = SimulationResult | Sequence[SimulationResult] | Mapping[str, SimulationResult]

#: Resolution figures are drawn (and decimated) for.
DPI = 100
_WIDTH = 8.0
#: Pixel columns of a full-width figure: lines keep at most 2 points per column.
PIXELS = int(_WIDTH * DPI)
_COLOUR_FILL = {"green": "#2ca02c", "yellow": "#e6b800", "red": "#d62728", "dropped": "#333333"}
#: A body is "flattened" when the largest sample is this many times its p99.
_OUTLIER_FACTOR = 4.0
#: A CDF's x-axis is logarithmic when its positive values span more than this.
_LOG_SPAN = 10.0


# --- decimation -------------------------------------------------------------


def decimate_line(
    x: np.ndarray, y: np.ndarray, pixels: int = PIXELS
) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)`` cut down to the minimum and maximum ``y`` of each of
    ``pixels`` columns of ``x`` (and the first and last point), in their
    original order: the drawn line is the same at that width, peaks kept.
    At most ``2 * pixels + 2`` points."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = len(x)
    if n <= 2 * pixels + 2:
        return x, y
    lo, hi = float(x.min()), float(x.max())
    col = np.zeros(n, dtype=np.int64)
    if hi > lo:
        col = np.minimum(((x - lo) / (hi - lo) * pixels).astype(np.int64), pixels - 1)
    order = np.lexsort((y, col))
    cs = col[order]
    starts = np.flatnonzero(np.r_[True, cs[1:] != cs[:-1]])
    ends = np.r_[starts[1:] - 1, n - 1]
    keep = np.unique(np.concatenate([order[starts], order[ends], [0, n - 1]]))
    return x[keep], y[keep]


def decimate_points(
    x: np.ndarray,
    y: np.ndarray,
    xlim: tuple[float, float],
    ylim: tuple[float, float],
    size_px: tuple[int, int] = (PIXELS, 400),
) -> np.ndarray:
    """Indices of the points to draw: the first in each pixel cell of an
    axes ``size_px`` (width, height) wide showing ``xlim`` x ``ylim``; so a
    scatter never draws more than one marker per pixel."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w, h = size_px
    if len(x) <= 2 * w:
        return np.arange(len(x))
    sx = (xlim[1] - xlim[0]) or 1.0
    sy = (ylim[1] - ylim[0]) or 1.0
    cx = np.clip(((x - xlim[0]) / sx * w).astype(np.int64), -1, w)
    cy = np.clip(((y - ylim[0]) / sy * h).astype(np.int64), -1, h)
    _, first = np.unique(cx * (h + 2) + cy, return_index=True)
    return np.sort(first)


def _cdf_points(values: np.ndarray, pixels: int = PIXELS) -> tuple[np.ndarray, np.ndarray]:
    v = np.sort(values[np.isfinite(values)])
    n = len(v)
    if not n:
        return v, v
    frac = np.arange(1, n + 1) / n
    if n > 2 * pixels:
        # One step per pixel row of the fraction axis, plus the extremes.
        idx = np.unique(np.r_[np.linspace(0, n - 1, 2 * pixels).astype(np.int64), n - 1])
        return v[idx], frac[idx]
    return v, frac


# --- layout -----------------------------------------------------------------


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


def _grid(n: int, rows_per: int = 1, height: float = 2.4) -> tuple[Figure, list[list[Axes]], int]:
    """A figure of ``n`` small multiples, each ``rows_per`` stacked axes
    sharing x; returns the figure, the axes per multiple, and the pixel
    width of one panel (what its data are decimated to)."""
    cols = 1 if n <= 3 else 2
    rows = math.ceil(n / cols)
    width = _WIDTH if cols == 1 else 11.0
    fig = Figure(figsize=(width, max(3.2, height * rows * rows_per + 0.7)), dpi=DPI)
    gs = fig.add_gridspec(rows * rows_per, cols)
    panels: list[list[Axes]] = []
    for i in range(n):
        r, c = divmod(i, cols)
        first = fig.add_subplot(gs[r * rows_per, c])
        axes = [first]
        for k in range(1, rows_per):
            axes.append(fig.add_subplot(gs[r * rows_per + k, c], sharex=first))
        panels.append(axes)
    return fig, panels, int(width / cols * DPI * 0.85)


def _single(
    rows: int = 1, height: float | None = None, sharex: bool = True
) -> tuple[Figure, list[Axes]]:
    fig = Figure(figsize=(_WIDTH, height or (4.0 if rows == 1 else 2.6 * rows)), dpi=DPI)
    axes = fig.subplots(rows, 1, sharex=sharex, squeeze=False)[:, 0].tolist()
    return fig, axes


def _panels(n: int, many: bool, height: float | None = None) -> tuple[Figure, list[Axes], int]:
    """``n`` axes: small multiples when several runs are compared, else ``n``
    stacked in one figure (``height`` inches); with the pixel width the data
    are decimated to."""
    if many:
        fig, panels, px = _grid(n)
        return fig, [a for (a,) in panels], px
    fig, axes = _single(n, height=height)
    return fig, axes, PIXELS


def _finish(
    fig: Figure, title: str, legend_axes: Sequence[Axes] = (), left_in: float = 0.8
) -> Figure:
    """Legends, grid, the title, and margins set in inches from the grid's
    shape: ``tight_layout`` would draw the whole figure once more to measure
    it (half of a figure's drawing time)."""
    from matplotlib.ticker import (
        AutoLocator,
        FormatStrFormatter,
        LogLocator,
        MaxNLocator,
        NullLocator,
    )

    for ax in legend_axes:
        if ax.get_legend_handles_labels()[0]:
            # a fixed corner: "best" tests every drawn point against each spot
            ax.legend(fontsize="x-small", loc="upper right")
    titled = False
    for a in fig.axes:
        a.grid(True, alpha=0.3)
        a.tick_params(labelsize="small")
        titled = titled or bool(a.get_title())
        for axis, scale in ((a.xaxis, a.get_xscale()), (a.yaxis, a.get_yscale())):
            # Only the default locators are replaced (a figure's own ticks,
            # e.g. class names at fixed places, are kept).
            default = type(axis.get_major_locator()) in (AutoLocator, LogLocator)
            if scale == "linear" and default:
                # At most 6 labelled steps of 1, 2, 2.5 or 5 (0, 5, 10 s), not
                # the up to 10 matplotlib's automatic locator fits: every tick
                # is a set of artists made and drawn (a third of a figure's
                # drawing time went to ticks), and a label every 2.5 s adds
                # nothing a reader of a 20 s run needs.
                axis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]))
            elif scale == "log" and default:
                # Labelled steps (5, 10, 20, 50 ms over up to 2 decades; 10,
                # 30, 100 up to 4; decades beyond) and no minor ticks: a value
                # is read off a label, and the 8 unlabelled minor ticks per
                # decade cost a third of a log panel's drawing. Plain numbers:
                # no mathtext to lay out.
                lo, hi = axis.get_view_interval()
                span = hi / lo if lo > 0 else math.inf
                subs = (1.0, 2.0, 5.0) if span <= 100 else (1.0, 3.0) if span <= 1e4 else (1.0,)
                axis.set_major_locator(LogLocator(subs=subs))
                axis.set_major_formatter(FormatStrFormatter("%g"))
                axis.set_minor_locator(NullLocator())
    fig.suptitle(title, fontsize="medium")
    w, h = fig.get_size_inches()
    spec = fig.axes[0].get_subplotspec()
    assert spec is not None  # every axes of ours comes from a grid
    rows, cols = spec.get_gridspec().get_geometry()
    top_in = 0.78 if titled else 0.55
    left, right, top, bottom = left_in / w, 1 - 0.25 / w, 1 - top_in / h, 0.55 / h
    gap_h = 0.62 if titled else 0.3
    gap_w = 0.85
    ax_h = (h * (top - bottom) - (rows - 1) * gap_h) / rows
    ax_w = (w * (right - left) - (cols - 1) * gap_w) / cols
    fig.subplots_adjust(
        left=left,
        right=right,
        top=top,
        bottom=bottom,
        hspace=gap_h / max(ax_h, 0.1),
        wspace=gap_w / max(ax_w, 0.1),
    )
    return fig


def _panel_title(ax: Axes, label: str, many: bool) -> None:
    if many:
        ax.set_title(label, fontsize="small")


# --- helpers on results -----------------------------------------------------


# The figures read the results' NumPy columns (``SimulationResult.arrays``)
# and summary dicts, never its DataFrames: a report then never imports pandas
# (0.4-0.9 s, a third of `qoslab run --report`).

Columns = dict[str, np.ndarray]


def _has(r: SimulationResult, series: str) -> bool:
    table = "queue" if series == "tokens" else series  # tokens live in the queue table
    return series in r.recorded and r.rows(table) > 0


def _data_flows(r: SimulationResult) -> list[int]:
    return [int(f["id"]) for f in r.summary["flows"] if f["protocol"] != "ping"]


def _flow_label(r: SimulationResult, flow: int) -> str:
    row = next((f for f in r.summary["flows"] if f["id"] == flow), None)
    if row is None:
        return f"flow {flow}"
    return f"flow {flow} ({row['protocol']} {row['from']}->{row['to']})"


def _policy_names(r: SimulationResult, key: str = "name") -> list[str]:
    return [str(p.get(key, "")) for p in r.summary["policies"]]


def _take(cols: Columns, sel: np.ndarray) -> Columns:
    """The rows ``sel`` (a mask or indices) of every column."""
    return {k: v[sel] for k, v in cols.items()}


def _groups(keys: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """``(key, row indices)`` per distinct key, keys ascending, rows in their
    order (pandas' ``groupby(sort=True)``)."""
    uniq, inv = np.unique(keys, return_inverse=True)
    order = np.argsort(inv, kind="stable")
    bounds = np.cumsum(np.bincount(inv, minlength=len(uniq)))[:-1]
    return list(zip(uniq.tolist(), np.split(order, bounds), strict=False))


def _sum_by(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ``keys`` ascending and the sum of ``values`` (rows, or rows
    of a matrix) per key, in the values' integer type (exact)."""
    uniq, inv = np.unique(keys, return_inverse=True)
    out = np.zeros((len(uniq), *values.shape[1:]), dtype=values.dtype)
    np.add.at(out, inv, values)
    return uniq, out


def _pick(results: Results, series: str) -> list[tuple[str, SimulationResult]]:
    return [(label, r) for label, r in labelled(results) if _has(r, series)]


def _extra(r: SimulationResult, name: str) -> dict[str, np.ndarray] | None:
    """A capture-only table (``io``, ``acks``, ``sacks``) a result from
    ``qoslab analyze`` carries in its raw series, as NumPy columns."""
    t = r.raw.get("series", {}).get(name)
    if not t or not len(t.get("time_ns", ())):
        return None
    return {k: np.asarray(v) for k, v in t.items()}


def _bin_text(ns: int) -> str:
    if ns % 1_000_000_000 == 0:
        return f"{ns // 1_000_000_000} s"
    if ns % 1_000_000 == 0:
        return f"{ns // 1_000_000} ms"
    return f"{ns / 1e6:g} ms"


def _outlier_scale(ax: Axes, xs: np.ndarray, ys: np.ndarray, unit: str = "ms") -> float | None:
    """When the largest of ``ys`` is over 4x their 95th percentile (RTO-
    inflated samples that would flatten the body on a linear axis), puts
    the y-axis on a log scale and marks the samples above 4x the p95 in red,
    labelled with their count and maximum; returns that threshold, else
    ``None`` (the caller starts the linear axis at 0 once its data are drawn)."""
    v = ys[np.isfinite(ys) & (ys > 0)]
    if len(v) < 20:
        return None
    p95 = float(np.percentile(v, 95))
    top = float(v.max())
    if p95 <= 0 or top <= _OUTLIER_FACTOR * p95:
        return None
    limit = _OUTLIER_FACTOR * p95
    ax.set_yscale("log")
    ax.set_ylim(float(v.min()) * 0.8, top * 1.25)
    above = np.flatnonzero(ys > limit)
    ax.plot(
        xs[above][: 4 * PIXELS],
        ys[above][: 4 * PIXELS],
        "^",
        ms=3.5,
        color="C3",
        label=f"{len(above)} above 4x p95 = {limit:.3g} {unit} (max {top:.4g}); log scale",
        zorder=5,
    )
    return limit


def _log_if_wide(ax: Axes, values: np.ndarray, axis: str = "x") -> bool:
    v = values[np.isfinite(values) & (values > 0)]
    if len(v) and float(v.max()) > _LOG_SPAN * float(v.min()):
        (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
        return True
    return False


# --- IO graph ---------------------------------------------------------------


def _wire(r: SimulationResult) -> tuple[np.ndarray, np.ndarray, str] | None:
    """The wire rate per bin (time s, Mbit/s, label): a capture's frame bytes
    on the wire; a simulation's bytes its busiest metered policy passed
    (offered minus dropped, from the ``colors`` series)."""
    step_ns = int(r.raw["record_interval_ns"])
    if step_ns <= 0:
        return None
    io = _extra(r, "io")
    if io is not None:
        t = io["time_ns"].astype(np.int64)
        times, inv = np.unique(t, return_inverse=True)
        tot = np.zeros(len(times))
        np.add.at(tot, inv, io["wire_bytes"].astype(np.float64))
        return times / 1e9, tot * 8e9 / step_ns / 1e6, "wire rate (frames on the wire)"
    if not _has(r, "colors"):
        return None
    c = r.arrays("colors")
    # The bottleneck: the metered policy that saw the most bytes (the
    # aggregate, not one of several edge meters).
    pols, offered = _sum_by(c["policy"], c["green_bytes"] + c["yellow_bytes"] + c["red_bytes"])
    first = int(pols[int(np.argmax(offered))])
    c = _take(c, c["policy"] == first)
    passed = (
        c["green_bytes"].astype(np.float64)
        + c["yellow_bytes"].astype(np.float64)
        + c["red_bytes"].astype(np.float64)
        - c["dropped_bytes"].astype(np.float64)
    )
    names = _policy_names(r)
    name = names[first] if first < len(names) else f"policy {first}"
    return c["time_s"], passed * 8e9 / step_ns / 1e6, f"wire rate after {name}"


#: Flows drawn one by one in an IO graph (the busiest); the rest are in the sum.
MAX_FLOW_LINES = 8


def _io_panel(ax: Axes, r: SimulationResult, pixels: int, flows_legend: bool) -> None:
    g = r.arrays("goodput")
    data = _data_flows(r)
    g = _take(g, np.isin(g["flow"], data)) if data else g
    groups = _groups(g["flow"])
    sent = [(flow, int(g["bytes"][idx].sum())) for flow, idx in groups]
    sent = [(flow, b) for flow, b in sent if b > 0]
    # the busiest flows; a stable sort keeps the lower flow id on a tie
    busiest = {flow for flow, _ in sorted(sent, key=lambda fb: -fb[1])[:MAX_FLOW_LINES]}
    for flow, idx in groups:
        if flow in busiest:
            x, y = decimate_line(g["time_s"][idx], g["goodput_bps"][idx] / 1e6, pixels)
            ax.plot(x, y, lw=0.7, alpha=0.8, label=_flow_label(r, flow) if flows_legend else None)
    # the sum per bin from the integer bytes, as each flow's rate is computed
    times, total = _sum_by(g["time_s"], g["bytes"])
    total_bps = total.astype(np.float64) * 8e9 / int(r.raw["record_interval_ns"])
    x, y = decimate_line(times, total_bps / 1e6, pixels)
    n = len(sent)
    rest = f" ({len(busiest)} busiest of {n} flows drawn)" if n > len(busiest) else ""
    ax.plot(x, y, lw=1.8, color="black", label=f"goodput, sum{rest}")
    wire = _wire(r)
    if wire is not None:
        x, y = decimate_line(wire[0], wire[1], pixels)
        ax.plot(x, y, "--", lw=1.2, color="C7", label=wire[2])
    ax.set_ylim(bottom=0)
    ax.set_ylabel("Mbit/s")


def io_graph(results: Results) -> Figure | None:
    """Goodput per flow and their sum over time, in Mbit/s per recording bin
    (Wireshark's IO graph), with the wire rate at the bottleneck; several
    runs: one panel per run, each on its own scale."""
    runs = _pick(results, "goodput")
    if not runs:
        return None
    bins = sorted({int(r.raw["record_interval_ns"]) for _, r in runs})
    bin_text = ", ".join(_bin_text(b) for b in bins)
    if len(runs) == 1:
        fig, (ax,) = _single()
        _io_panel(ax, runs[0][1], PIXELS, True)
        ax.set_xlabel("time (s)")
        return _finish(fig, f"IO graph: goodput and wire rate (bin {bin_text})", [ax])
    fig, panels, px = _grid(len(runs))
    for (label, r), (ax,) in zip(runs, panels, strict=True):
        _io_panel(ax, r, px, False)
        _panel_title(ax, label, True)
    for axes in panels[-2:]:
        axes[-1].set_xlabel("time (s)")
    panels[0][0].legend(fontsize="x-small", loc="upper right")
    return _finish(fig, f"IO graph per run: goodput sum and wire rate (bin {bin_text})")


# --- time-sequence (Stevens) graph -------------------------------------------


def _ts_draw(
    ax: Axes,
    t: np.ndarray,
    seq: np.ndarray,
    length: np.ndarray,
    retx: np.ndarray,
    acks: dict[str, np.ndarray] | None,
    sacks: dict[str, np.ndarray] | None,
    window: tuple[float, float],
    size_px: tuple[int, int],
    beams: bool,
) -> None:
    t0, t1 = window
    inw = (t >= t0) & (t <= t1)
    ylo = float(seq[inw].min()) if inw.any() else 0.0
    yhi = float((seq + length)[inw].max()) if inw.any() else 1.0
    if acks is not None:
        aw = (acks["t"] >= t0) & (acks["t"] <= t1)
        if aw.any():
            yhi = max(yhi, float((acks["ack"] + acks["rwnd"])[aw].max()))
    ylim = (ylo, yhi + 1.0)
    scale = 1e6 if yhi - ylo > 5e6 else 1e3
    # Drawn bottom to top: ACK and window lines, retransmissions (red, larger
    # markers), then the sends over them, so a retransmission shows around a
    # send at the same place instead of hiding it.
    for sel, colour, label, z in (
        (inw & retx, "C3", "retransmitted", 2),
        (inw & ~retx, "C0", "sent", 3),
    ):
        idx = np.flatnonzero(sel)
        idx = idx[decimate_points(t[idx], seq[idx], window, ylim, size_px)]
        if not len(idx):
            continue
        if beams:  # tcptrace's I-beam: the segment's byte range at its send time
            segs = np.stack(
                [
                    np.column_stack([t[idx], seq[idx] / scale]),
                    np.column_stack([t[idx], (seq[idx] + length[idx]) / scale]),
                ],
                axis=1,
            )
            ax.add_collection(LineCollection(list(segs), colors=colour, linewidths=1.2, zorder=z))
            ax.plot(t[idx], seq[idx] / scale, "_", ms=3, color=colour, label=label, zorder=z)
        else:
            ax.plot(
                t[idx],
                seq[idx] / scale,
                "." if z == 3 else "x",
                ms=1.5 if z == 3 else 3.5,
                mew=0.8,
                color=colour,
                label=label,
                zorder=z,
            )
    if acks is not None:
        aw = (acks["t"] >= t0) & (acks["t"] <= t1)
        x, y = decimate_line(acks["t"][aw], acks["ack"][aw] / scale, size_px[0])
        ax.step(x, y, where="post", lw=1.0, color="C2", label="ACK", zorder=1)
        x, y = decimate_line(
            acks["t"][aw], (acks["ack"][aw] + acks["rwnd"][aw]) / scale, size_px[0]
        )
        ax.step(x, y, where="post", lw=0.9, color="#b8a000", label="receive window", zorder=1)
    if sacks is not None:
        sw = (sacks["t"] >= t0) & (sacks["t"] <= t1)
        idx = np.flatnonzero(sw)
        idx = idx[decimate_points(sacks["t"][idx], sacks["left"][idx], window, ylim, size_px)]
        if len(idx):
            segs = np.stack(
                [
                    np.column_stack([sacks["t"][idx], sacks["left"][idx] / scale]),
                    np.column_stack([sacks["t"][idx], sacks["right"][idx] / scale]),
                ],
                axis=1,
            )
            ax.add_collection(
                LineCollection(list(segs), colors="#9467bd", linewidths=1.5, zorder=1.5)
            )
            ax.plot([], [], color="#9467bd", lw=1.5, label="SACK block")
    ax.set_xlim(t0, t1)
    ax.set_ylim(ylim[0] / scale, ylim[1] / scale)
    ax.set_ylabel(f"sequence ({'MB' if scale == 1e6 else 'KB'} from ISN)")


def time_sequence(result: SimulationResult, flow: int | None = None) -> Figure | None:
    """Time-sequence (Stevens) graph of ``flow`` (default: the first data
    flow with a retransmission, else the first data flow), as tcptrace and
    Wireshark draw it: each segment at its send time and sequence number,
    retransmissions in red drawn over the sends; for a capture analysed by
    ``qoslab analyze`` also the ACK line, the receive-window line (ACK +
    advertised window) and SACK blocks. The lower panel zooms on the first
    retransmission, where segments are drawn as I-beams. Sequence numbers are
    bytes from the flow's first segment."""
    if not _has(result, "segments"):
        return None
    seg = result.arrays("segments")
    if flow is None:
        present = set(seg["flow"].tolist())
        flows = [f for f in _data_flows(result) if f in present] or sorted(present)
        with_retx = set(seg["flow"][seg["retransmit"].astype(bool)].tolist())
        flow = next((f for f in flows if f in with_retx), flows[0])
    s = _take(seg, seg["flow"] == flow)
    if not len(s["flow"]):
        return None
    t = s["time_s"].astype(np.float64)
    base = int(s["seq"].min())
    seq = (s["seq"].astype(np.int64) - base).astype(np.float64)
    length = s["len"].astype(np.float64) if "len" in s else np.zeros(len(t))
    retx = s["retransmit"].astype(bool)
    acks = sacks = None
    a = _extra(result, "acks")
    if a is not None:
        m = a["flow"] == flow
        if m.any():
            acks = {
                "t": a["time_ns"][m] / 1e9,
                "ack": a["ack"][m].astype(np.int64) - base,
                "rwnd": a["rwnd_bytes"][m].astype(np.float64),
            }
            acks["ack"] = acks["ack"].astype(np.float64)
    sk = _extra(result, "sacks")
    if sk is not None:
        m = sk["flow"] == flow
        if m.any():
            sacks = {
                "t": sk["time_ns"][m] / 1e9,
                "left": (sk["left"][m].astype(np.int64) - base).astype(np.float64),
                "right": (sk["right"][m].astype(np.int64) - base).astype(np.float64),
            }
    full = (float(t.min()), float(t.max()) or 1.0)
    zoom = None
    if retx.any():
        tr = float(t[retx][0])
        w = max(0.02, min(0.5, (full[1] - full[0]) / 40))
        zoom = (max(full[0], tr - 0.3 * w), min(full[1], tr + 0.7 * w))
    fig, axes = _single(2 if zoom else 1, height=7.0 if zoom else 4.2, sharex=False)
    _ts_draw(axes[0], t, seq, length, retx, acks, sacks, full, (PIXELS, 300), False)
    if zoom:
        _ts_draw(axes[1], t, seq, length, retx, acks, sacks, zoom, (PIXELS, 300), True)
        axes[1].set_title(
            f"zoom: {zoom[0]:.3f}-{zoom[1]:.3f} s, around the first retransmission",
            fontsize="small",
        )
        axes[0].axvspan(*zoom, color="0.85", zorder=0)
    axes[-1].set_xlabel("time (s)")
    note = "" if acks is not None else " (ACK/window lines: capture the link, `qoslab analyze` it)"
    return _finish(
        fig,
        f"Time-sequence graph: {_flow_label(result, flow)}{note}",
        [axes[-1] if zoom else axes[0]],
    )


def _time_sequence_first(results: Results) -> Figure | None:
    runs = _pick(results, "segments")
    return time_sequence(runs[0][1]) if runs else None


# --- RTT, cwnd, ping ----------------------------------------------------------


def _rtt_panel(ax: Axes, r: SimulationResult, px: int, legend: bool) -> None:
    rtt = r.arrays("rtt")
    xs = rtt["time_s"]
    ys = rtt["rtt_ms"]
    limit = _outlier_scale(ax, xs, ys)
    xlim = (float(xs.min()), float(xs.max()) or 1.0)
    for flow, rows in _groups(rtt["flow"])[:16]:
        x = xs[rows]
        y = ys[rows]
        idx = np.flatnonzero(np.isfinite(y) if limit is None else y <= limit)
        # decimated on the scale drawn: one marker per pixel cell
        yd = np.log10(np.maximum(y[idx], 1e-9)) if limit is not None else y[idx]
        lim = (float(yd.min()), float(yd.max())) if len(yd) else (0.0, 1.0)
        idx = idx[decimate_points(x[idx], yd, xlim, lim, (px, 300))]
        ax.plot(x[idx], y[idx], ".", ms=1.5, label=_flow_label(r, flow) if legend else None)
    if limit is None:
        ax.set_ylim(bottom=0)
    ax.set_ylabel("RTT (ms)")


def rtt_time(results: Results) -> Figure | None:
    """RTT samples over time (ms), per flow; several runs: one panel each.
    RTO-inflated samples that would flatten the body are clipped and marked."""
    runs = _pick(results, "rtt")
    if not runs:
        return None
    if len(runs) == 1:
        fig, (ax,) = _single()
        _rtt_panel(ax, runs[0][1], PIXELS, True)
        ax.set_xlabel("time (s)")
        return _finish(fig, "RTT over time", [ax])
    fig, panels, px = _grid(len(runs))
    for (label, r), (ax,) in zip(runs, panels, strict=True):
        _rtt_panel(ax, r, px, False)
        _panel_title(ax, label, True)
    for axes in panels[-2:]:
        axes[-1].set_xlabel("time (s)")
    return _finish(fig, "RTT over time per run", [a for (a,) in panels])


def cwnd(results: Results, flow: int | None = None) -> Figure | None:
    """Congestion window (solid) and ssthresh (dashed) over time, in KB, of
    every flow or of ``flow``; several runs: one panel each. A huge initial
    ssthresh is clipped from view."""
    runs = _pick(results, "cwnd")
    if not runs:
        return None
    many = len(runs) > 1
    fig, axes, px = _panels(len(runs), many)
    for ax, (label, r) in zip(axes, runs, strict=True):
        c = r.arrays("cwnd")
        if flow is not None:
            c = _take(c, c["flow"] == flow)
        top = 0.0
        for j, (fl, rows) in enumerate(_groups(c["flow"])):
            colour = f"C{j % 10}"
            t = c["time_s"][rows]
            kb = c["cwnd_bytes"][rows].astype(np.float64) / 1e3
            top = max(top, float(kb.max(initial=0.0)))
            x, y = decimate_line(t, kb, px)
            ax.plot(x, y, lw=0.9, color=colour, label=None if many else _flow_label(r, fl))
            x, y = decimate_line(t, c["ssthresh_bytes"][rows].astype(np.float64) / 1e3, px)
            ax.plot(x, y, "--", lw=0.7, color=colour)
        ax.set_ylim(0, top * 1.3 + 1.0)
        ax.set_ylabel("KB")
        _panel_title(ax, label, many)
    axes[-1].set_xlabel("time (s)")
    return _finish(
        fig, "Congestion window (solid) and ssthresh (dashed)", [] if many else [axes[0]]
    )


def _ping_panel(ax: Axes, r: SimulationResult, colour: str) -> None:
    p = r.arrays("ping")
    xs = p["time_s"]
    ys = p["rtt_ms"]
    limit = _outlier_scale(ax, xs, ys)
    x, y = decimate_line(xs, ys)
    ax.plot(x, y, "o-", ms=2.5, lw=0.7, color=colour, zorder=3)
    if limit is None:
        ax.set_ylim(bottom=0)
    ax.set_ylabel("ping RTT (ms)")


def ping(results: Results) -> Figure | None:
    """Ping RTT under load (ms) against the time sent; several runs: one
    panel each (a full 1000-packet queue at 180 kbit/s beside a short one
    would otherwise flatten the short one)."""
    runs = _pick(results, "ping")
    if not runs:
        return None
    if len(runs) == 1:
        fig, (ax,) = _single()
        _ping_panel(ax, runs[0][1], "C0")
        ax.set_xlabel("time sent (s)")
        return _finish(fig, "Ping RTT under load", [ax])
    fig, panels, _ = _grid(len(runs))
    for i, ((label, r), (ax,)) in enumerate(zip(runs, panels, strict=True)):
        _ping_panel(ax, r, f"C{i % 10}")
        _panel_title(ax, label, True)
    for axes in panels[-2:]:
        axes[-1].set_xlabel("time sent (s)")
    return _finish(fig, "Ping RTT under load per run", [a for (a,) in panels])


# --- CDFs -------------------------------------------------------------------


def _cdf(ax: Axes, values: np.ndarray, **kw: Any) -> None:
    x, y = _cdf_points(np.asarray(values, dtype=np.float64))
    if len(x):
        ax.step(x, y, where="post", **kw)


def rtt_cdf(results: Results) -> Figure | None:
    """CDF of the RTT samples: per flow for one run, pooled per run
    otherwise; a log x-axis when the samples span more than 10x."""
    runs = _pick(results, "rtt")
    if not runs:
        return None
    fig, (ax,) = _single()
    allv = []
    if len(runs) == 1:
        r = runs[0][1]
        rtt = r.arrays("rtt")
        for flow, rows in _groups(rtt["flow"]):
            v = rtt["rtt_ms"][rows]
            allv.append(v)
            _cdf(ax, v, label=_flow_label(r, flow))
    else:
        for label, r in runs:
            v = r.arrays("rtt")["rtt_ms"]
            allv.append(v)
            _cdf(ax, v, label=label)
    log = _log_if_wide(ax, np.concatenate(allv))
    ax.set_xlabel("RTT (ms)" + (", log scale" if log else ""))
    ax.set_ylabel("fraction of samples")
    ax.set_ylim(0, 1.02)
    return _finish(fig, "CDF of RTT", [ax])


def goodput_cdf(results: Results) -> Figure | None:
    """CDF of per-flow goodput per recording interval (Mbit/s): per flow for
    one run, all flows pooled per run otherwise; log x when it spans > 10x."""
    runs = _pick(results, "goodput")
    if not runs:
        return None
    fig, (ax,) = _single()
    allv = []
    for label, r in runs:
        data = _data_flows(r)
        g = r.arrays("goodput")
        g = _take(g, np.isin(g["flow"], data)) if data else g
        if len(runs) == 1:
            for flow, rows in _groups(g["flow"])[:16]:
                v = g["goodput_bps"][rows] / 1e6
                allv.append(v)
                _cdf(ax, v, label=_flow_label(r, flow))
        else:
            v = g["goodput_bps"] / 1e6
            allv.append(v)
            _cdf(ax, v, label=label)
    log = _log_if_wide(ax, np.concatenate(allv)) if allv else False
    ax.set_xlabel("goodput per interval (Mbit/s)" + (", log scale" if log else ""))
    ax.set_ylabel("fraction of intervals")
    ax.set_ylim(0, 1.02)
    return _finish(fig, "CDF of per-flow goodput", [ax])


# --- queue, tokens, colours ---------------------------------------------------


def _meter_kinds() -> set[str]:
    from qoslab import _core

    return {k for k, _, _ in _core.meter_kinds()} | {"police"}


def _policy_rows(r: SimulationResult) -> list[tuple[int, str, bool]]:
    """``(index, name, is_policer)`` of each policy of the queue series."""
    meters = _meter_kinds()
    names = _policy_names(r)
    kinds = _policy_names(r, "kind")
    out = []
    for pol in sorted(set(r.arrays("queue")["policy"].tolist())):
        i = int(pol)
        name = names[i] if i < len(names) else f"policy {i}"
        kind = kinds[i] if i < len(kinds) else ""
        out.append((i, name, kind in meters))
    return out


def queue(results: Results) -> Figure | None:
    """Per run: the queue length (packets) of each queueing policy (shaper,
    queue, scheduler) and the bucket tokens (KB) when recorded. A policer
    has no queue: it gets no queue line, only its tokens."""
    runs = [(lb, r) for lb, r in labelled(results) if _has(r, "queue") or _has(r, "tokens")]
    if not runs:
        return None
    kinds: list[tuple[str, SimulationResult, str]] = []  # (label, result, "queue"|"tokens")
    for label, r in runs:
        rows = _policy_rows(r)
        if "queue" in r.recorded and any(not m for _, _, m in rows):
            kinds.append((label, r, "queue"))
        if (
            "tokens" in r.recorded
            and r.rows("queue")
            and r.arrays("queue")["tokens_bytes"].max() > 0
        ):
            kinds.append((label, r, "tokens"))
    if not kinds:
        return None
    many = len(runs) > 1
    fig, axes, px = _panels(len(kinds), many, height=3.2 * len(kinds) + 0.4)
    for ax, (label, r, what) in zip(axes, kinds, strict=True):
        for i, name, policer in _policy_rows(r):
            if what == "queue" and policer:
                continue
            q = r.arrays("queue")
            part = _take(q, q["policy"] == i)
            col = "packets" if what == "queue" else "tokens_bytes"
            y = part[col].astype(np.float64) / (1 if what == "queue" else 1e3)
            if what == "tokens" and not y.any():
                continue
            x, y = decimate_line(part["time_s"], y, px)
            ax.step(x, y, where="post", lw=0.9, label=name + (" (policer)" if policer else ""))
        ax.set_ylim(bottom=0)
        ax.set_ylabel("queue (packets)" if what == "queue" else "tokens (KB)")
        _panel_title(ax, f"{label}: {'queue' if what == 'queue' else 'bucket tokens'}", many)
    axes[-1].set_xlabel("time (s)")
    return _finish(fig, "Queue length (queues, shapers) and bucket tokens", axes)


def colors(results: Results) -> Figure | None:
    """Rates per colour (green, yellow, red bytes offered to each metered
    policy per interval) and dropped, one panel per colour (rows) and run
    (columns), all on one shared y-scale so the panels compare by eye."""
    runs = _pick(results, "colors")
    if not runs:
        return None
    per_run = []
    for label, r in runs:
        c = r.arrays("colors")
        step = r.raw["record_interval_ns"] / 1e9
        cols = ("green_bytes", "yellow_bytes", "red_bytes", "dropped_bytes")
        times, per = _sum_by(c["time_s"], np.column_stack([c[k] for k in cols]))
        per_run.append((label, times, per.astype(np.float64) * 8 / step / 1e6))
    shown = [i for i in range(4) if any(m[:, i].any() for _, _, m in per_run)] or [0]
    names = list(_COLOUR_FILL)
    ncols = len(per_run)
    fig = Figure(figsize=(_WIDTH if ncols == 1 else min(14.0, 4.2 * ncols), 1.9 * len(shown) + 0.8))
    axes = fig.subplots(len(shown), ncols, sharex="col", sharey=True, squeeze=False)
    px = int(PIXELS / ncols)
    for j, (label, t, m) in enumerate(per_run):
        for k, i in enumerate(shown):
            ax = axes[k, j]
            x, y = decimate_line(t, m[:, i], px)
            ax.fill_between(x, y, step="pre", color=_COLOUR_FILL[names[i]], alpha=0.8)
            ax.step(x, y, where="pre", lw=0.6, color=_COLOUR_FILL[names[i]])
            if j == 0:
                ax.set_ylabel(f"{names[i]}\nMbit/s", fontsize="small")
            if k == 0 and ncols > 1:
                ax.set_title(label, fontsize="small")
        axes[-1, j].set_xlabel("time (s)")
    axes[0, 0].set_ylim(bottom=0)
    return _finish(fig, "Per-colour rates and drops (one y-scale for all panels)")


# --- policy trees -------------------------------------------------------------


def policy_classes(results: Results) -> Figure | None:
    """Per-class figure of every policy tree: throughput out (Mbit/s over
    the run), drops (packets) and peak queue (packets) of each class, named
    by the user's class ids; one row per (run, tree)."""
    trees = []
    runs = labelled(results)
    for label, r in runs:
        for p in r.summary["policies"]:
            if len(p.get("classes", [])) > 1:  # a root alone is the policy's own row
                trees.append((label, r, p))
    if not trees:
        return None
    many = len(runs) > 1 or len(trees) > 1
    fig = Figure(figsize=(11.0, 2.8 * len(trees) + 0.6))
    axes = fig.subplots(len(trees), 3, squeeze=False)
    for row, (label, r, p) in enumerate(trees):
        dur = r.summary["duration_s"] or 1.0
        classes = p["classes"]
        names = [str(c["name"]) for c in classes]
        y = np.arange(len(classes))
        vals = (
            ([c["bytes_out"] * 8 / dur / 1e6 for c in classes], "throughput out (Mbit/s)", "C0"),
            ([c["drops"]["packets"] for c in classes], "drops (packets)", "C3"),
            ([c["max_queue_packets"] for c in classes], "peak queue (packets)", "C1"),
        )
        for k, (v, title, colour) in enumerate(vals):
            ax = axes[row, k]
            ax.barh(y, v, color=colour)
            ax.set_yticks(y, names if k == 0 else [""] * len(y), fontsize="small")
            ax.invert_yaxis()
            ax.set_title(f"{label} {p['name']}: {title}" if many else title, fontsize="small")
            for yy, vv in zip(y, v, strict=True):
                ax.annotate(
                    f"{vv:.3g}" if isinstance(vv, float) else str(vv),
                    (vv, yy),
                    xytext=(2, 0),
                    textcoords="offset points",
                    va="center",
                    fontsize="x-small",
                )
            ax.margins(x=0.2)
            ax.set_xlim(left=0, right=max(1.0, float(max(v, default=0)) * 1.25))
    head = trees[0][2]["name"] if len(trees) == 1 else "policy trees"
    width = max(len(str(c["name"])) for _, _, p in trees for c in p["classes"])
    return _finish(
        fig, f"Per-class throughput, drops and queue: {head}", left_in=0.3 + 0.08 * width
    )


# --- comparison overview ----------------------------------------------------------


def overview(results: Results) -> Figure | None:
    """The Flent-like overview of a comparison: totals (sum goodput per
    run), per-flow box plots of the goodput per interval, and the ping CDF
    (the RTT CDF when no run pinged). ``None`` for fewer than two runs."""
    runs = labelled(results)
    if len(runs) < 2:
        return None
    fig = Figure(figsize=(11.0, 4.0 + 0.18 * len(runs)))
    gs = fig.add_gridspec(1, 3, width_ratios=[1.0, 1.6, 1.2])
    ax_tot = fig.add_subplot(gs[0])
    ax_box = fig.add_subplot(gs[1])
    ax_cdf = fig.add_subplot(gs[2])
    labels = [lb for lb, _ in runs]
    y = np.arange(len(runs))
    totals = [r.summary["sum_goodput_bps"] / 1e6 for _, r in runs]
    ax_tot.barh(y, totals, color=[f"C{i % 10}" for i in range(len(runs))])
    ax_tot.set_yticks(y, [f"{i + 1} {lb}"[:28] for i, lb in enumerate(labels)], fontsize="x-small")
    ax_tot.invert_yaxis()
    for yy, v in zip(y, totals, strict=True):
        ax_tot.annotate(
            f"{v:.3g}",
            (v, yy),
            xytext=(2, 0),
            textcoords="offset points",
            va="center",
            fontsize="x-small",
        )
    _log_if_wide(ax_tot, np.asarray(totals))
    ax_tot.set_xlabel("sum goodput (Mbit/s)")
    ax_tot.set_title("totals", fontsize="small")
    ax_tot.margins(x=0.25)
    # per-flow box plots, grouped by run
    data, pos, colours, ticks = [], [], [], []
    x = 0.0
    for i, (_, r) in enumerate(runs):
        if not _has(r, "goodput"):
            x += 1.0
            ticks.append(x - 0.5)
            continue
        g = r.arrays("goodput")
        flows = _data_flows(r) or sorted(set(g["flow"].tolist()))
        start = x
        for fl in flows[:12]:
            v = g["goodput_bps"][g["flow"] == fl] / 1e6
            data.append(v)
            pos.append(x)
            colours.append(f"C{i % 10}")
            x += 1.0
        ticks.append((start + x - 1.0) / 2)
        x += 1.0
    if data:
        bp = ax_box.boxplot(data, positions=pos, widths=0.7, showfliers=False, patch_artist=True)
        for patch, c in zip(bp["boxes"], colours, strict=True):
            patch.set_facecolor(c)
            patch.set_alpha(0.6)
        _log_if_wide(ax_box, np.concatenate(data), "y")
    ax_box.set_xticks(ticks, [str(i + 1) for i in range(len(runs))], fontsize="x-small")
    ax_box.set_xlabel("run (numbered as in the totals, top = 1); a box per flow")
    ax_box.set_ylabel("goodput per interval (Mbit/s)")
    ax_box.set_title("per-flow goodput", fontsize="small")
    pinged = [(lb, r) for lb, r in runs if _has(r, "ping")]
    if pinged:
        src, col, what = pinged, "ping", "ping RTT"
    else:
        src, col, what = [(lb, r) for lb, r in runs if _has(r, "rtt")], "rtt", "RTT"
    allv = []
    for lb, r in src:
        v = r.arrays(col)["rtt_ms"]
        allv.append(v)
        i = labels.index(lb)
        _cdf(ax_cdf, v, color=f"C{i % 10}", label=str(i + 1))
    if allv:
        log = _log_if_wide(ax_cdf, np.concatenate(allv))
        ax_cdf.set_xlabel(f"{what} (ms)" + (", log scale" if log else ""))
        ax_cdf.legend(fontsize="x-small", title="run", title_fontsize="x-small")
    ax_cdf.set_ylim(0, 1.02)
    ax_cdf.set_ylabel("fraction")
    ax_cdf.set_title(f"{what} CDF", fontsize="small")
    width = max(len(f"{i + 1} {lb}"[:28]) for i, lb in enumerate(labels))
    return _finish(fig, "Overview: totals, per-flow goodput, latency", left_in=0.3 + 0.065 * width)


#: ``name -> (title, function)`` in report order; each takes ``Results``.
FIGURES: dict[str, tuple[str, Callable[[Results], Figure | None]]] = {
    "overview": ("Overview (totals, per-flow goodput, latency)", overview),
    "io_graph": ("Throughput (IO graph)", io_graph),
    "time_sequence": ("Time-sequence graph", _time_sequence_first),
    "rtt": ("RTT over time", rtt_time),
    "cwnd": ("cwnd and ssthresh", cwnd),
    "queue": ("Queue and tokens", queue),
    "colors": ("Per-colour rates", colors),
    "classes": ("Policy tree classes", policy_classes),
    "ping": ("Ping under load", ping),
    "rtt_cdf": ("RTT CDF", rtt_cdf),
    "goodput_cdf": ("Goodput CDF", goodput_cdf),
}


def figures(results: Results, names: Sequence[str] | None = None) -> dict[str, Figure]:
    """Every figure of :data:`FIGURES` that has data (or of ``names``), by name."""
    out: dict[str, Figure] = {}
    for name, (_, fn) in FIGURES.items():
        if names is not None and name not in names:
            continue
        fig = fn(results)
        if fig is not None:
            out[name] = fig
    return out


#: The results a forked renderer draws (set just before the fork).
_FORKED: Any = None


def _render_one(name: str) -> tuple[str, bytes | None]:
    fig = FIGURES[name][1](_FORKED)
    return name, None if fig is None else png_bytes(fig)


def render_jobs() -> int:
    """Processes :func:`render` may use: up to 2 of the CPUs this process
    may run on, on Linux, and only while no other Python thread runs (one
    could hold a lock across the fork). Native thread pools (OpenBLAS,
    jemalloc's background thread) register ``pthread_atfork`` handlers."""
    import threading

    if not sys.platform.startswith("linux") or threading.active_count() != 1:
        return 1
    try:
        return max(1, min(2, len(os.sched_getaffinity(0))))
    except OSError:
        return 1


def _warm(results: Results) -> None:
    """Everything the figures load lazily, loaded once before the fork: the
    NumPy columns of each result and the Agg canvas with its font, so the
    processes only draw."""
    _warm_drawing()
    _warm_arrays(results)


def _warm_drawing() -> None:
    """The Agg canvas ``savefig`` loads and the default font, loaded."""
    import matplotlib.backends.backend_agg  # noqa: F401 -- the canvas savefig loads
    from matplotlib.font_manager import FontProperties, findfont, get_font

    get_font(findfont(FontProperties()))


def _warm_arrays(results: Results) -> None:
    """The NumPy columns of each result's non-empty series, built."""
    for _, r in labelled(results):
        for name in r.raw["series"]:
            if r.rows(name):
                r.arrays(name)  # built here once, shared by the fork


def render(
    results: Results,
    names: Sequence[str] | None = None,
    jobs: int | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> dict[str, bytes]:
    """PNG bytes of every figure of :data:`FIGURES` that has data (or of
    ``names``), by name in report order, each drawn once. With ``jobs`` > 1
    (default :func:`render_jobs`) the figures are drawn in that many forked
    processes: matplotlib is single-threaded and a report's figures are
    independent, so this divides a report's drawing time on a free core.
    ``meanwhile`` is called while the processes draw (the report's template
    is compiled then, instead of after them), or first when drawing here."""
    global _FORKED
    wanted = [n for n in FIGURES if names is None or n in names]
    jobs = render_jobs() if jobs is None else jobs
    if jobs <= 1 or len(wanted) < 3:
        if meanwhile is not None:
            meanwhile()
        return {n: png_bytes(f) for n, f in figures(results, wanted).items()}
    import multiprocessing

    _warm(results)
    _FORKED = results
    try:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            pending = pool.map_async(_render_one, wanted, chunksize=1)
            if meanwhile is not None:
                meanwhile()
            done = dict(pending.get())
    finally:
        _FORKED = None
    return {n: b for n in wanted if (b := done.get(n)) is not None}


def png_bytes(fig: Figure, dpi: int = DPI) -> bytes:
    """The figure as PNG bytes (Agg, ``dpi``)."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def save(
    fig: Figure, stem: str | os.PathLike[str], formats: Sequence[str] = ("png",)
) -> list[Path]:
    """Writes ``stem.png`` (100 dpi; ``formats`` may add ``"svg"``, drawn
    from the same decimated data); returns the paths written."""
    from qoslab.outputs import replacing

    base = Path(stem)
    base.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        path = base.with_suffix(f".{fmt}")
        with replacing(path, binary=True) as f:  # never a half-written figure
            fig.savefig(f, format=fmt, dpi=DPI if fmt == "png" else None)
        paths.append(path)
    return paths
