"""A self-contained HTML report of one or more simulation runs.

``report.html`` is one file that needs nothing else: no scripts, no style
sheets or fonts fetched from anywhere. It is rendered from the Jinja2
template ``templates/report.html.j2`` (autoescaped; the style sheet
``templates/report.css`` inlined). Figures are drawn once, as PNG at screen
resolution (:func:`qoslab.plots.png_bytes`), and embedded as ``data:`` URIs,
each in its own ``<figure data-figure="NAME">``; the same bytes serve
``compare --figures``. A report holds a summary table, the figures, the
scenario text as run and the versions it was made with.

:class:`Report` is the builder (``qoslab compare``, ``qoslab reproduce`` and
``qoslab sweep`` add their own tables); :func:`run_report` makes the report
of ``qoslab run --report`` and ``qoslab analyze --report``.
"""

from __future__ import annotations

import base64
import functools
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qoslab.api import params_lines
from qoslab.results import SimulationResult

# matplotlib (and qoslab.plots, built on it) is imported where a figure is
# drawn, not here: `qoslab run --report` draws its figures in processes it
# started at its beginning (qoslab.cli._drawer), and the process writing the
# report then never pays matplotlib's import (about 0.5 s).
if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from qoslab import plots

__all__ = [
    "Report",
    "figure_jobs",
    "figure_uri",
    "flow_rows",
    "policy_rows",
    "run_report",
    "versions",
]

#: ``(name, caption, PNG bytes)`` of each figure drawn, in report order.
Drawn = list[tuple[str, str, bytes]]


@functools.cache
def versions() -> dict[str, str]:
    """The versions a report was made with."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    from qoslab import __version__

    def installed(dist: str) -> str:
        # A module already imported (numpy, matplotlib, jinja2 by the report)
        # says its version; else the distribution's metadata, which scans
        # site-packages (~10 ms each) but imports nothing (pandas takes 0.4 s).
        module = sys.modules.get(dist)
        if isinstance(getattr(module, "__version__", None), str):
            return str(module.__version__)  # type: ignore[union-attr]
        try:
            return version(dist)
        except PackageNotFoundError:
            return "not installed"

    return {
        "qoslab": __version__,
        "python": sys.version.split()[0],
        **{d: installed(d) for d in ("numpy", "pandas", "matplotlib", "jinja2")},
        "platform": platform.platform(),
    }


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e6 else f"{v:.0f}"
    return "" if v is None else str(v)


def figure_uri(fig: Figure | bytes) -> tuple[str, str]:
    """``(mime, data: URI)`` of a figure drawn once as PNG (or of PNG bytes
    already drawn)."""
    if isinstance(fig, bytes):
        data = fig
    else:
        from qoslab import plots

        data = plots.png_bytes(fig)
    return "image/png", "data:image/png;base64," + base64.b64encode(data).decode("ascii")


@functools.cache
def _template() -> Any:
    import jinja2  # only when a report is written: `qoslab run --help` stays fast

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("qoslab", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    return env.get_template("report.html.j2")


def _prepare() -> None:
    """What :meth:`Report.html` needs besides the figures, made while the
    figure processes draw: the compiled template, the versions."""
    _template()
    versions()


class Report:
    """An HTML report built section by section; :meth:`html` renders it.
    ``parts`` holds the blocks in order (a ``str`` is trusted raw HTML);
    ``pngs`` the figures drawn, by name, for writing them out as files."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.parts: list[dict[str, Any] | str] = []
        self.figure_names: list[str] = []
        self.pngs: dict[str, bytes] = {}

    def heading(self, text: str) -> Report:
        self.parts.append({"kind": "heading", "text": text})
        return self

    def paragraph(self, text: str, css: str = "") -> Report:
        self.parts.append({"kind": "paragraph", "text": text, "css": css})
        return self

    def table(
        self,
        columns: Sequence[str],
        rows: Iterable[Sequence[Any]],
        left: int = 1,
        row_classes: Sequence[str] | None = None,
    ) -> Report:
        """A table; the first ``left`` columns are left-aligned (text)."""
        self.parts.append(
            {
                "kind": "table",
                "columns": [str(c) for c in columns],
                "rows": [[_cell(v) for v in row] for row in rows],
                "left": left,
                "row_classes": list(row_classes or []),
            }
        )
        return self

    def figure(self, name: str, fig: Figure | bytes, caption: str = "") -> Report:
        """Embeds ``fig`` (a figure, drawn here once as PNG, or PNG bytes);
        ``name`` becomes its ``data-figure`` attribute."""
        if isinstance(fig, bytes):
            data = fig
        else:
            from qoslab import plots

            data = plots.png_bytes(fig)
        _, uri = figure_uri(data)
        self.parts.append({"kind": "figure", "name": name, "caption": caption, "uri": uri})
        self.figure_names.append(name)
        self.pngs[name] = data
        return self

    def figures(
        self,
        results: plots.Results,
        prefix: str = "",
        names: Sequence[str] | None = None,
        caption_prefix: str = "",
    ) -> Report:
        """Every figure of :data:`qoslab.plots.FIGURES` that has data (or of
        ``names``), each drawn once (:func:`qoslab.plots.render`: in two
        processes when a second CPU is there)."""
        from qoslab import plots

        for name, png in plots.render(results, names, meanwhile=_prepare).items():
            self.figure(prefix + name, png, caption_prefix + plots.FIGURES[name][0])
        return self

    def pre(self, text: str, title: str = "") -> Report:
        self.parts.append({"kind": "pre", "text": text, "title": title})
        return self

    def html(self) -> str:
        made = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        return _template().render(
            title=self.title, made=made, versions=dict(versions()), blocks=self.parts
        )

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Writes the report (atomically: a temporary file renamed into place)."""
        from qoslab.traceio import write_atomic

        out = Path(path)
        text = self.html()
        out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(out, lambda f: f.write(text))
        return out

    def write_figures(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Writes the figures already drawn as ``DIR/NAME.png`` (one unit,
        :func:`qoslab.outputs.commit`), without drawing them again."""
        from qoslab import outputs

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        files: dict[Path, tuple[outputs.Writer, bool]] = {
            outputs.check_file(d / f"{n}.png", "--figures"): (lambda f, b=b: f.write(b), True)
            for n, b in self.pngs.items()
        }
        outputs.commit(files)
        return list(files)


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


CLASS_COLUMNS = (
    "policy",
    "class",
    "kind",
    "parent",
    "packets in",
    "Mbit/s out",
    "dropped",
    "drop %",
    "max queue",
)


def class_rows(summary: Mapping[str, Any]) -> list[list[Any]]:
    """One row per class of every policy tree, by the user's class ids."""
    rows: list[list[Any]] = []
    dur = summary["duration_s"] or 1.0
    for p in summary["policies"]:
        for c in p.get("classes", []):
            n, d = c["packets_in"], c["drops"]["packets"]
            rows.append(
                [
                    p["name"],
                    c["name"],
                    c["kind"],
                    c["parent"] if c["parent"] is not None else "",
                    n,
                    round(c["bytes_out"] * 8 / dur / 1e6, 3),
                    d,
                    round(100 * d / n, 2) if n else None,
                    c["max_queue_packets"],
                ]
            )
    return rows


def figure_jobs(
    result: SimulationResult, extra: Mapping[str, SimulationResult] | None = None
) -> list[tuple[str, str, Callable[[], Figure | None]]]:
    """The figures of :func:`run_report`, in report order, as ``(name,
    caption, draw)``; ``draw()`` makes the figure (``None``: no data). Every
    figure of :data:`qoslab.plots.FIGURES`, then the time-sequence graph of
    each ``extra`` result (by caption). Imports matplotlib."""
    from qoslab import plots

    jobs: list[tuple[str, str, Callable[[], Figure | None]]] = [
        (name, title, functools.partial(fn, result)) for name, (title, fn) in plots.FIGURES.items()
    ]
    for i, (caption, other) in enumerate((extra or {}).items()):
        jobs.append(
            (f"time_sequence_capture{i}", caption, functools.partial(plots.time_sequence, other))
        )
    return jobs


def draw_here(
    result: SimulationResult, extra: Mapping[str, SimulationResult] | None = None
) -> Drawn:
    """The figures of :func:`run_report` drawn from this process: those of
    :data:`qoslab.plots.FIGURES` by :func:`qoslab.plots.render` (in two
    forked processes when a second CPU is there), the capture graphs here."""
    from qoslab import plots

    jobs = figure_jobs(result, extra)
    names = [n for n, _, _ in jobs if n in plots.FIGURES]
    pngs = plots.render(result, names, meanwhile=_prepare)
    out: Drawn = []
    for name, caption, draw in jobs:
        if name in plots.FIGURES:
            png = pngs.get(name)
        else:
            fig = draw()
            png = None if fig is None else plots.png_bytes(fig)
        if png is not None:
            out.append((name, caption, png))
    return out


def run_report(
    result: SimulationResult,
    scenario_text: str,
    title: str | None = None,
    extra: Mapping[str, SimulationResult] | None = None,
    draw: Callable[[SimulationResult, Mapping[str, SimulationResult]], Drawn] | None = None,
) -> Report:
    """The report of one run: summary tables, figures, scenario as run.
    ``extra`` adds the time-sequence graphs of other results (e.g. the
    analysis of a capture the run wrote), by caption. ``draw(result,
    extra)`` draws the figures (default :func:`draw_here`; ``qoslab run
    --report`` passes its figure processes' :meth:`~qoslab.cli._drawer.Drawer.draw`)."""
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
    classes = class_rows(s)
    if classes:
        rep.heading("Policy tree classes")
        rep.table(CLASS_COLUMNS, classes, left=4)
    rep.heading("Figures")
    for name, caption, png in (draw or draw_here)(result, extra or {}):
        rep.figure(name, png, caption)
    rep.heading("Scenario as run")
    rep.pre(scenario_text)
    return rep


def run_captures(args: Any) -> dict[str, SimulationResult]:
    """The captures a ``qoslab run`` wrote (``--capture`` or the scenario's
    ``[capture]`` table), analysed as ``qoslab analyze`` does, by caption:
    their ACK, receive-window and SACK lines complete the run's
    time-sequence graph (the simulator records the sends only)."""
    from qoslab.run import capture_plan
    from qoslab.scenario import load_scenario, scenario_info

    if args.scenario == "-":  # stdin was read by the run; a report from it has no capture graph
        return {}
    text, filename = load_scenario(args.scenario)
    info = scenario_info(text, filename)
    links = [(str(w), f) for w, f in info["capture"]["links"]]
    try:
        wanted, _ = capture_plan(args.capture, links, args.out)
    except ValueError:
        return {}
    out: dict[str, SimulationResult] = {}
    for where, path in wanted:
        if path is None:
            path = str(Path(args.out) / (where.replace("->", "-").replace(":", "-") + ".pcap"))
        if not Path(path).exists():
            continue
        from qoslab.analyze import analyze  # only for a capture: most runs have none

        ca = analyze(path, bin=int(info["record_interval_ns"]) or 100_000_000)
        if len(ca.result.segments):
            out[f"Time-sequence graph from the capture of {where} ({Path(path).name})"] = ca.result
    return out
