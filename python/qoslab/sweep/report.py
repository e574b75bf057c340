"""The report page of a sweep: one self-contained HTML file (qoslab.report's
layout) with what was swept, the figures of the headline metrics against the
swept keys, and a table of every point (mean over its seeds, with the seeds'
range for goodput).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd

from qoslab.report import Report
from qoslab.sweep import figures, query

__all__ = ["swept_keys", "write_report"]

#: (column, heading, divisor) of the per-point table.
_COLUMNS = [
    ("sum_goodput_bps", "goodput Mbit/s", 1e6),
    ("jain_fairness", "Jain", 1.0),
    ("loss_fraction", "loss", 1.0),
    ("rtt_p95_ms_mean", "RTT p95 ms", 1.0),
    ("retransmits", "retransmits", 1.0),
    ("timeouts", "RTOs", 1.0),
]


def swept_keys(points: pd.DataFrame) -> list[str]:
    """The swept keys: the columns the store puts between ``mode`` and
    ``scenario``, without their base-unit twins (``KEY_bytes`` …)."""
    cols = list(points.columns)
    if "mode" not in cols or "scenario" not in cols:
        raise ValueError("not a sweep's points table (no 'mode' / 'scenario' columns)")
    keys = cols[cols.index("mode") + 1 : cols.index("scenario")]
    return [k for k in keys if not any(k == f"{o}_{s}" for o in keys for s in _SUFFIXES)]


_SUFFIXES = ("bytes", "bps", "ns")


def _image(report: Report, name: str, path: Path, caption: str) -> None:
    report.figure(name, path.read_bytes(), caption)


def write_report(root: Path, out: Path) -> Path:
    """Writes the report of the sweep in ``root`` to ``out`` (atomically)."""
    points = query.query(root, "SELECT * FROM points")
    if points.empty:
        raise ValueError(f"{root}: the sweep has no finished runs yet")
    keys = swept_keys(points)
    if keys:  # rows in the keys' numeric order (a unit's base-unit twin)
        order = [figures.numeric_column(points, k)[0] for k in keys]
        points = points.sort_values(order, kind="stable").reset_index(drop=True)
    scen = ", ".join(sorted(points["scenario"].astype(str).unique()))
    seeds = points["seed"].nunique()
    n_points = len(points.groupby(keys, dropna=False)) if keys else 1
    rep = Report(f"qoslab sweep: {scen}")
    rep.paragraph(
        f"{len(points)} runs: {n_points} points x {seeds} seed(s) of {scen}; "
        f"swept: {', '.join(keys) or 'nothing (seeds only)'}. Results: {root}."
    )
    if keys:
        rep.heading("Figures")
        x, by = keys[0], (keys[1] if len(keys) > 1 else None)
        with tempfile.TemporaryDirectory(prefix="qoslab-sweep-report-") as tmp:
            for metric, caption in (
                ("sum_goodput_bps", "goodput (sum over flows)"),
                ("loss_fraction", "loss fraction"),
                ("rtt_p95_ms_mean", "RTT p95 (mean over flows)"),
            ):
                png = Path(tmp) / f"{metric}.png"
                figures.line_plot(points, metric, x, by, png)
                band = " (line: mean over seeds, band: min-max)" if seeds > 1 else ""
                _image(rep, metric, png, f"{caption} vs {x}{band}")
            if by is not None:
                png = Path(tmp) / "heatmap.png"
                figures.heatmap(points, "jain_fairness", x, by, png)
                _image(rep, "jain_heatmap", png, f"Jain fairness over {x} x {by}")
    rep.heading("Points (mean over seeds)")
    cols = [c for c, _, _ in _COLUMNS if c in points.columns]
    if keys:
        g = points.groupby(keys, dropna=False, sort=False)
        mean = g[cols].mean().reset_index()
        lo = g["sum_goodput_bps"].min().to_numpy()
        hi = g["sum_goodput_bps"].max().to_numpy()
    else:
        mean = points[cols].mean().to_frame().T
        lo = [points["sum_goodput_bps"].min()]
        hi = [points["sum_goodput_bps"].max()]
    heads = [h for c, h, _ in _COLUMNS if c in cols]
    rows = []
    for i, r in mean.iterrows():
        row: list[object] = [str(r[k]) for k in keys]
        for c, _, div in _COLUMNS:
            if c in cols:
                row.append(round(float(r[c]) / div, 3))
        row.append(f"{lo[i] / 1e6:.3f}-{hi[i] / 1e6:.3f}")
        rows.append(row)
    rep.table([*keys, *heads, "goodput range"], rows, left=len(keys))
    return rep.write(out)
