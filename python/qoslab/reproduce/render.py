"""Output of ``qoslab reproduce``: the text table, the summary line, the
assumptions table, the JSON rows, the HTML report and docs/reproductions.md."""

from __future__ import annotations

import errno
import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from qoslab.reproduce.checks import RULES
from qoslab.reproduce.model import Experiment, Row
from qoslab.reproduce.registry import Reproduction

COLUMNS = ("case", "kind", "metric", "published", "ours", "diff", "verdict")
KINDS = ("number", "claim", "sanity")


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.0f}" if abs(v) >= 1000 else f"{v:.4g}"
    return str(v)


def _short(text: Any, n: int = 70) -> str:
    s = _fmt(text)
    return s if len(s) <= n else s[: n - 1] + "…"


def table_rows(rows: Sequence[Row], width: int | None = 70) -> list[list[str]]:
    cut = (lambda x: _short(x, width)) if width else _fmt
    return [
        [
            r.case,
            r.kind,
            r.metric,
            cut(r.published),
            cut(r.ours),
            "-" if r.rel_diff is None else f"{r.rel_diff:+.1%}",
            r.verdict,
        ]
        for r in rows
    ]


def counts(rows: Sequence[Row]) -> dict[str, dict[str, int]]:
    return {
        k: {
            v: sum(1 for r in rows if r.kind == k and r.verdict == v)
            for v in ("holds", "off", "fails")
        }
        for k in KINDS
    }


def summary_line(rows: Sequence[Row]) -> str:
    """``N numbers: a hold, b off, c fail; M claims: ...; S sanity: ...``."""
    n = counts(rows)

    def part(kind: str, plural: str) -> str:
        c = n[kind]
        total = sum(c.values())
        if kind == "sanity":
            return f"{total} sanity: {c['holds']} hold, {c['fails']} fail"
        return f"{total} {plural}: {c['holds']} hold, {c['off']} off, {c['fails']} fail"

    return "; ".join((part("number", "numbers"), part("claim", "claims"), part("sanity", "")))


def run_line(reps: Sequence[Reproduction]) -> str:
    if not reps:
        return ""
    seeds = reps[0].seeds
    q = " (--quick: shortened runs)" if reps[0].quick else ""
    return (
        f"seeds {seeds[0]}..{seeds[-1]} ({len(seeds)} per case){q}; "
        f"{sum(x.runs for x in reps)} simulations in {sum(x.elapsed_s for x in reps) / 60:.1f} min"
    )


def assumption_rows(exp: Experiment) -> list[list[str]]:
    out = []
    for a in exp.assumptions:
        tried = ", ".join(v.label for v in a.variants) if a.variants else f"none: {a.no_run}"
        out.append([a.name, a.chosen, a.why, a.range, tried])
    return out


ASSUMPTION_COLUMNS = ("assumption", "chosen", "why", "plausible range", "also run")


def not_reproduced(rows: Sequence[Row]) -> list[Row]:
    return [r for r in rows if r.kind != "sanity" and r.verdict != "holds"]


def render_text(reps: Sequence[Reproduction]) -> str:
    from qoslab.compare import render_table

    out = []
    for rep in reps:
        out.append(f"== {rep.experiment.title}")
        out.append(render_table(COLUMNS, table_rows(rep.rows)))
        notes = [(r.case, r.metric, r.note) for r in rep.rows if r.note and r.verdict != "holds"]
        for case, metric, note in notes:
            out.append(f"  note ({case}: {metric}): {note}")
        if rep.experiment.assumptions:
            out.append("  assumptions (the source does not state them; verdicts cover the range):")
            for a in rep.experiment.assumptions:
                tried = (
                    "also run: " + ", ".join(v.label for v in a.variants)
                    if a.variants
                    else f"not varied: {a.no_run}"
                )
                out.append(f"  - {a.name}: {a.chosen} ({a.why}); range {a.range}; {tried}")
        out.append("")
    rows = [r for rep in reps for r in rep.rows]
    out.append(f"rules: {RULES}")
    out.append(run_line(reps))
    out.append(summary_line(rows))
    return "\n".join(out)


def json_rows(reps: Sequence[Reproduction]) -> list[dict[str, Any]]:
    return [r.to_json() for x in reps for r in x.rows]


KEY_FIGURES = (
    "overview",
    "io_graph",
    "rtt_cdf",
    "queue",
    "ping",
    "time_sequence",
    "colors",
    "classes",
)


def report(reps: Sequence[Reproduction], quick: bool) -> Any:
    """The HTML report: tables, assumptions, key figures (seed 1, chosen
    values), scenarios as run."""
    from qoslab.report import Report

    rep = Report("qoslab reproduce" + (" (--quick)" if quick else ""))
    rep.paragraph(summary_line([r for x in reps for r in x.rows]))
    rep.paragraph(run_line(reps))
    rep.paragraph("Rules: " + RULES)
    for x in reps:
        rep.heading(x.experiment.title)
        classes = [{"holds": "ok", "fails": "bad"}.get(r.verdict, "") for r in x.rows]
        rep.table(
            [*COLUMNS, "source", "note"],
            [
                [*t, r.source or "-", r.note]
                for t, r in zip(table_rows(x.rows, None), x.rows, strict=True)
            ],
            left=3,
            row_classes=classes,
        )
        if x.experiment.assumptions:
            rep.table(list(ASSUMPTION_COLUMNS), assumption_rows(x.experiment), left=5)
        rep.figures(x.results, f"{x.experiment.name}-", KEY_FIGURES, f"{x.experiment.name}: ")
        for case, text in x.texts.items():
            rep.pre(text, f"{x.experiment.name} / {case}: scenario as run (seed 1)")
    return rep


#: The figures of ``--markdown`` (PNG, small: they are committed under docs/).
MARKDOWN_FIGURES = ("io_graph", "rtt_cdf", "ping")
MARKDOWN_DPI = 80


def _cell(s: Any) -> str:
    return _fmt(s).replace("|", "\\|").replace("\n", " ")


def _opening(reps: Sequence[Reproduction]) -> list[str]:
    rows = [r for x in reps for r in x.rows]
    held = [r for r in rows if r.kind != "sanity" and r.verdict == "holds"]
    missed = not_reproduced(rows)
    lines = [
        "**What reproduces:** "
        + (", ".join(f"{r.experiment} {r.case}: {r.metric}" for r in held) if held else "nothing")
        + ".",
        "",
        "**What does not** (off: right direction or within ±50 %, wrong size; fails: "
        "worse, or not on a clear majority of seeds, or not over the whole assumption range):",
        "",
    ]
    lines += [f"- {r.verdict}: {r.experiment} {r.case}: {r.metric}" for r in missed]
    return [*lines, ""]


def markdown(
    reps: Sequence[Reproduction], figures_dir: Path, md_path: Path, quick: bool
) -> tuple[str, dict[Path, Any]]:
    """``docs/reproductions.md``: its text, and its key figures by the PNG
    path (in ``figures_dir``) the text links to. Writes nothing."""
    from qoslab import plots

    rows = [r for x in reps for r in x.rows]
    lines = [
        "# Reproductions of published experiments",
        "",
        "<!-- generated: do not edit by hand -->",
        f"**Summary:** {summary_line(rows)} — {run_line(reps)}.",
        "",
        *_opening(reps),
        "Regenerate with (from any directory; the published values and scenarios ship in the",
        "package, `qoslab/data/`):",
        "",
        "    qoslab reproduce --all --markdown docs/reproductions.md",
        "",
        "Every row has a kind: *number* (ours beside a number the source printed, at the",
        "location given), *claim* (a statement the source makes, quoted with its location,",
        "judged over the seeds) or *sanity* (follows from our own configuration: shown,",
        "never counted as a reproduction). Rules: " + RULES + ".",
        "Every scenario choice the source does not state is listed under its experiment as",
        "an assumption, with the other values of its range that were also run; a verdict",
        "holds only if it holds over the whole range.",
        "",
    ]
    figures: dict[Path, Any] = {}
    for x in reps:
        exp = x.experiment
        from qoslab.reproduce.model import Reference

        lines += [f"## {exp.title}", "", f"Source: {Reference.load(exp.reference).citation}", ""]
        for case in exp.cases:
            with_ = "; ".join(f"{k.split('.')[-1]} = {v}" for k, v in case.set)
            lines.append(
                f"- {case.name}: `qoslab/data/scenarios/reproduce/{case.scenario}`"
                + (f" *with* {with_}" if with_ else "")
            )
        lines.append("")
        if exp.assumptions:
            lines.append("| " + " | ".join(ASSUMPTION_COLUMNS) + " |")
            lines.append("|" + "---|" * len(ASSUMPTION_COLUMNS))
            for a in assumption_rows(exp):
                lines.append("| " + " | ".join(_cell(c) for c in a) + " |")
            lines.append("")
        cols = [*COLUMNS, "source", "note"]
        lines.append("| " + " | ".join(cols) + " |")
        lines.append("|" + "---|" * len(cols))
        for t, r in zip(table_rows(x.rows, None), x.rows, strict=True):
            cells = [*t, r.source or "-", r.note]
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        lines.append("")
        figs = plots.figures(x.results, MARKDOWN_FIGURES)
        for name in MARKDOWN_FIGURES:
            if name in figs:
                png = figures_dir / f"{exp.name}-{name}.png"
                figures[png] = figs[name]
                rel = os.path.relpath(png, md_path.parent)
                lines += [f"![{exp.name}: {plots.FIGURES[name][0]} (seed 1)]({rel})", ""]
    return "\n".join(lines), figures


def markdown_figures_dir(md_path: Path) -> Path:
    """Where ``--markdown DIR/NAME.md`` puts its figures: ``DIR/NAME/``."""
    return md_path.parent / md_path.stem


def check_markdown_path(md_path: Path) -> None:
    """Refuses a ``--markdown`` path that cannot be written, before the runs."""
    from qoslab import outputs

    outputs.check_file(md_path, "--markdown")
    figdir = markdown_figures_dir(md_path)
    if figdir.exists() and not figdir.is_dir():
        raise NotADirectoryError(
            errno.ENOTDIR, "is not a directory (--markdown puts its figures there)", figdir
        )


def write_markdown(reps: Sequence[Reproduction], md_path: Path, quick: bool) -> None:
    """Writes the Markdown and its figures as one unit
    (:func:`qoslab.outputs.commit`): every figure is drawn and every file
    written to a temporary before any is renamed into place, the Markdown
    last; a failure or Ctrl-C leaves the previous document and figures as
    they were, never a new figure beside the old text."""
    from qoslab import outputs

    figdir = markdown_figures_dir(md_path)
    text, figures = markdown(reps, figdir, md_path, quick)
    pngs: dict[Path, bytes] = {}
    for path, fig in figures.items():
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=MARKDOWN_DPI)
        pngs[path] = buf.getvalue()
    figdir.mkdir(parents=True, exist_ok=True)
    md_target = outputs.check_file(md_path, "--markdown")
    files: dict[Path, tuple[outputs.Writer, bool]] = {
        outputs.check_file(p, "--markdown"): (lambda f, d=d: f.write(d), True)
        for p, d in pngs.items()
    }
    files[md_target] = (lambda f: f.write(text + "\n"), False)
    outputs.commit(files, order_last=md_target)
