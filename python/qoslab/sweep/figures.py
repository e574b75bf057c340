"""Sweep figures: a metric against one key (a line per value of another key,
the seeds' spread as a band: min to max, the line their mean), or a heatmap
of its mean over two keys. PNG or SVG by the file's suffix. matplotlib is
imported only here, when a figure is drawn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from qoslab.sweep.spec import UNITS

__all__ = ["heatmap", "line_plot", "numeric_column"]

_SCALE = {"bytes": (1024.0, "KiB"), "bps": (1e6, "Mbit/s"), "ns": (1e6, "ms")}


def numeric_column(df: pd.DataFrame, key: str) -> tuple[str, str, float]:
    """The column to plot ``key`` by (its base-unit twin when it has units),
    its axis label, and the divisor into the label's unit."""
    if key not in df.columns:
        keys = [c for c in df.columns if "." in c or "[" in c]
        raise ValueError(
            f"no column '{key}' in the sweep (swept keys: {', '.join(keys) or 'none'})"
        )
    for _, _, suffix in UNITS.values():
        twin = f"{key}_{suffix}"
        if twin in df.columns:
            div, unit = _SCALE[suffix]
            return twin, f"{key} ({unit})", div
    return key, key, 1.0


def _metric(df: pd.DataFrame, metric: str) -> tuple[str, float]:
    if metric not in df.columns:
        nums = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c])]
        raise ValueError(f"no metric '{metric}' (numeric columns: {', '.join(nums)})")
    if metric.endswith("_bps"):
        return f"{metric[:-4]} (Mbit/s)", 1e6
    return metric, 1.0


def _save(fig: Any, out: Path) -> Path:
    from qoslab.outputs import replacing

    suffix = out.suffix.lower()
    if suffix not in (".png", ".svg"):
        raise ValueError(f"{out}: a figure is .png or .svg")
    out.parent.mkdir(parents=True, exist_ok=True)
    with replacing(out, binary=True) as f:  # atomic: temp file + rename
        fig.savefig(f, format=suffix[1:], dpi=130, bbox_inches="tight")
    return out


def _figure(size: tuple[float, float]) -> tuple[Any, Any]:
    """A figure and its axes from the object API: no pyplot, no global
    state (figures are not kept alive by a pyplot registry)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=size)
    return fig, fig.add_subplot()


def line_plot(df: pd.DataFrame, metric: str, x: str, by: str | None, out: Path) -> Path:
    """The metric's mean over seeds against ``x`` (band: min to max), a line
    per value of ``by``; a log y-axis when the lines' values span more than
    10x, so a group of large values does not flatten the others."""
    xcol, xlabel, xdiv = numeric_column(df, x)
    ylabel, ydiv = _metric(df, metric)
    groups: list[tuple[Any, pd.DataFrame]]
    if by:
        bcol, _, _ = numeric_column(df, by)
        groups = [(k, g) for k, g in df.groupby(by, sort=False)]
        groups.sort(key=lambda kg: kg[1][bcol].iloc[0])
    else:
        groups = [(None, df)]
    fig, ax = _figure((7, 4.2))
    lows: list[float] = []
    for k, g in groups:
        s = g.groupby(xcol)[metric].agg(["mean", "min", "max"]).sort_index()
        xs = s.index.to_numpy(dtype=float) / xdiv
        line = ax.plot(
            xs, s["mean"] / ydiv, marker="o", ms=3, label=None if k is None else f"{by}={k}"
        )
        ax.fill_between(xs, s["min"] / ydiv, s["max"] / ydiv, alpha=0.2, color=line[0].get_color())
        lows += [float(v) for v in s["mean"] / ydiv]
    pos = [v for v in lows if np.isfinite(v) and v > 0]
    if pos and max(pos) > 10 * min(pos) and len(pos) == len(lows):
        ax.set_yscale("log")
    vals = df[xcol].to_numpy(dtype=float)
    if len(vals) and vals.min() > 0 and vals.max() / vals.min() >= 20:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    seeds = df["seed"].nunique() if "seed" in df else 1
    ax.set_title(f"{ylabel} vs {x}" + (f" (band: min-max over {seeds} seeds)" if seeds > 1 else ""))
    ax.grid(alpha=0.3)
    if by:
        ax.legend(fontsize=8)
    return _save(fig, out)


def heatmap(df: pd.DataFrame, metric: str, x: str, y: str, out: Path) -> Path:
    xcol, xlabel, xdiv = numeric_column(df, x)
    ycol, ylabel, ydiv = numeric_column(df, y)
    mlabel, mdiv = _metric(df, metric)
    table = df.pivot_table(index=ycol, columns=xcol, values=metric, aggfunc="mean").sort_index()
    table = table.reindex(sorted(table.columns), axis=1)
    fig, ax = _figure((7, 4.8))
    data = table.to_numpy(dtype=float) / mdiv
    im = ax.imshow(data, aspect="auto", origin="lower", cmap="viridis")
    ax.set_xticks(range(len(table.columns)))
    ax.set_xticklabels([_tick(v, xdiv) for v in table.columns], rotation=45, ha="right")
    ax.set_yticks(range(len(table.index)))
    ax.set_yticklabels([_tick(v, ydiv) for v in table.index])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if data.size <= 150:
        for (i, j), v in np.ndenumerate(data):
            if np.isfinite(v):
                ax.text(j, i, _fmt(v), ha="center", va="center", fontsize=7, color="w")
    fig.colorbar(im, ax=ax, label=f"{mlabel} (mean over seeds)")
    return _save(fig, out)


def _fmt(v: Any) -> str:
    if isinstance(v, (int, float, np.floating, np.integer)):
        return f"{float(v):.3g}"
    return str(v)


def _tick(v: Any, div: float) -> str:
    return _fmt(float(v) / div) if isinstance(v, (int, float, np.number)) else str(v)
