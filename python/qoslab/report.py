"""A self-contained HTML report of one or more simulation runs.

``report.html`` is one file that needs nothing else: no scripts, no style
sheets or fonts fetched from anywhere. Figures are embedded as ``data:``
URIs (SVG, or PNG when the SVG would be large, e.g. many thousand RTT
points), each in its own ``<figure data-figure="NAME">``, so identifiers
inside one SVG cannot clash with another's. A report holds a summary table,
the figures, the scenario text as run and the versions it was made with.

:class:`Report` is the builder (``qoslab compare`` and ``qoslab reproduce``
add their own tables); :func:`run_report` makes the report of ``qoslab run
--report``.
"""

from __future__ import annotations

import base64
import html
import io
import os
import platform
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from qoslab import plots
from qoslab.api import params_lines
from qoslab.results import SimulationResult

__all__ = ["Report", "flow_rows", "policy_rows", "run_report", "versions"]

#: An SVG above this size is embedded as PNG instead.
SVG_MAX_BYTES = 1_500_000

_CSS = """
body { font-family: sans-serif; margin: 1.5em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.6em; text-align: right; }
th { background: #eee; } td.l, th.l { text-align: left; }
tr.bad td { background: #fde2e1; } tr.ok td { background: #e6f4e6; }
tr.skip td { color: #777; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 0.9em; color: #444; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
p.note { font-size: 0.9em; color: #444; }
"""


def versions() -> dict[str, str]:
    """The versions a report was made with."""
    import matplotlib
    import numpy
    import pandas

    from qoslab import __version__

    return {
        "qoslab": __version__,
        "python": sys.version.split()[0],
        "numpy": numpy.__version__,
        "pandas": pandas.__version__,
        "matplotlib": matplotlib.__version__,
        "platform": platform.platform(),
    }


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e6 else f"{v:.0f}"
    return "" if v is None else str(v)


def figure_uri(fig: Figure | bytes) -> tuple[str, str]:
    """``(mime, data: URI)`` of a figure drawn once as PNG (or PNG bytes
    already drawn, e.g. for ``--figures`` too)."""
    data = fig if isinstance(fig, bytes) else plots.png_bytes(fig)
    return "image/png", "data:image/png;base64," + base64.b64encode(data).decode("ascii")


class Report:
    """An HTML report built section by section; :meth:`html` renders it."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.parts: list[str] = []
        self.figure_names: list[str] = []

    def heading(self, text: str) -> Report:
        self.parts.append(f"<h2>{html.escape(text)}</h2>")
        return self

    def paragraph(self, text: str, css: str = "") -> Report:
        cls = f' class="{css}"' if css else ""
        self.parts.append(f"<p{cls}>{html.escape(text)}</p>")
        return self

    def table(
        self,
        columns: Sequence[str],
        rows: Iterable[Sequence[Any]],
        left: int = 1,
        row_classes: Sequence[str] | None = None,
    ) -> Report:
        """A table; the first ``left`` columns are left-aligned (text)."""
        out = ["<table><thead><tr>"]
        for i, c in enumerate(columns):
            out.append(f"<th{' class=l' if i < left else ''}>{html.escape(c)}</th>")
        out.append("</tr></thead><tbody>")
        for k, row in enumerate(rows):
            cls = row_classes[k] if row_classes and row_classes[k] else ""
            out.append(f'<tr class="{cls}">' if cls else "<tr>")
            for i, v in enumerate(row):
                out.append(f"<td{' class=l' if i < left else ''}>{html.escape(_cell(v))}</td>")
            out.append("</tr>")
        out.append("</tbody></table>")
        self.parts.append("".join(out))
        return self

    def figure(self, name: str, fig: Figure, caption: str = "") -> Report:
        """Embeds ``fig``; ``name`` becomes its ``data-figure`` attribute."""
        _, uri = figure_uri(fig)
        alt = html.escape(caption or name)
        cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
        self.parts.append(
            f'<figure data-figure="{html.escape(name)}"><img alt="{alt}" src="{uri}">{cap}</figure>'
        )
        self.figure_names.append(name)
        return self

    def figures(self, results: plots.Results, prefix: str = "") -> Report:
        """Every figure of :data:`qoslab.plots.FIGURES` that has data."""
        for name, fig in plots.figures(results).items():
            self.figure(prefix + name, fig, plots.FIGURES[name][0])
        return self

    def pre(self, text: str, title: str = "") -> Report:
        if title:
            self.parts.append(f"<h3>{html.escape(title)}</h3>")
        self.parts.append(f"<pre>{html.escape(text)}</pre>")
        return self

    def html(self) -> str:
        made = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        ver = versions()
        ver_rows = "".join(
            f"<tr><td class=l>{html.escape(k)}</td><td class=l>{html.escape(v)}</td></tr>"
            for k, v in ver.items()
        )
        return (
            "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
            '<meta name=viewport content="width=device-width, initial-scale=1">'
            # A data: favicon stops browsers from requesting /favicon.ico.
            '<link rel=icon href="data:,">'
            f"<title>{html.escape(self.title)}</title><style>{_CSS}</style></head><body>"
            f"<h1>{html.escape(self.title)}</h1>"
            f'<p class="note">made by qoslab {html.escape(ver["qoslab"])}, {made}</p>'
            + "\n".join(self.parts)
            + f"<h2>Versions</h2><table><tbody>{ver_rows}</tbody></table>"
            + "</body></html>\n"
        )

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Writes the report (atomically: a temporary file renamed into place)."""
        from qoslab.traceio import write_atomic

        out = Path(path)
        text = self.html()
        out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(out, lambda f: f.write(text))
        return out


def _mbps(bps: float) -> float:
    return round(bps / 1e6, 3)


FLOW_COLUMNS = (
    "flow",
    "protocol",
    "path",
    "goodput Mbit/s",
    "retransmits",
    "retx %",
    "timeouts",
    "RTT mean ms",
    "RTT p95 ms",
    "RTT max ms",
)


def flow_rows(summary: Mapping[str, Any]) -> list[list[Any]]:
    """One row per flow and a sum row, for :data:`FLOW_COLUMNS`."""
    rows: list[list[Any]] = []
    for f in summary["flows"]:
        sent = f["packets_sent"]
        m = f["rtt_ms"]
        rows.append(
            [
                f"{f['id']} {f['label']}".strip(),
                f["protocol"],
                f"{f['from']}->{f['to']}",
                _mbps(f["goodput_bps"]),
                f["retransmits"],
                round(100 * f["retransmits"] / sent, 2) if sent else None,
                f["timeouts"],
                m["mean"] if m["samples"] else None,
                m["p95"] if m["samples"] else None,
                m["max"] if m["samples"] else None,
            ]
        )
    rows.append(
        [
            "sum",
            "",
            f"Jain {summary['jain_fairness']:.3f}",
            _mbps(summary["sum_goodput_bps"]),
            sum(f["retransmits"] for f in summary["flows"]),
            None,
            sum(f["timeouts"] for f in summary["flows"]),
            None,
            None,
            None,
        ]
    )
    return rows


POLICY_COLUMNS = ("policy", "kind", "parameters", "packets", "dropped", "drop %", "max queue")


def policy_rows(summary: Mapping[str, Any]) -> list[list[Any]]:
    rows = []
    for p in summary["policies"]:
        n, d = p["packets_in"], p["drops"]["packets"]
        params = "; ".join(x for x in params_lines(p["params"]) if x)
        pct = round(100 * d / n, 2) if n else None
        rows.append([p["name"], p["kind"], params, n, d, pct, p["max_queue_packets"]])
    return rows


def run_report(result: SimulationResult, scenario_text: str, title: str | None = None) -> Report:
    """The report of one run: summary tables, figures, scenario as run."""
    s = result.summary
    rep = Report(title or f"qoslab run: {s['scenario']}")
    if s["description"]:
        rep.paragraph(s["description"])
    rep.paragraph(
        f"seed {s['seed']}, {s['duration_s']:g} s simulated, {s['events']} events"
        + (f"; source: {s['source']}" if s["source"] else ""),
        "note",
    )
    rep.heading("Summary")
    rep.table(FLOW_COLUMNS, flow_rows(s), left=3)
    if s["policies"]:
        rep.table(POLICY_COLUMNS, policy_rows(s), left=3)
    rep.heading("Figures")
    rep.figures(result)
    rep.heading("Scenario as run")
    rep.pre(scenario_text)
    return rep
