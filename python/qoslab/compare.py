"""``qoslab compare``: run several scenarios, or one scenario with a parameter
varied, and show them side by side — one table, overlaid plots, one report.

The canonical use is the same traffic through a policer and a shaper::

    qoslab compare scenarios/isr4000-police.toml scenarios/isr4000-shape.toml
    qoslab compare scenarios/isr4000-shape.toml \\
        --vary traffic.0.flows=1,4

``--vary KEY=V1,V2,...`` sets the dotted TOML key (tables by name, arrays of
tables by index: ``traffic.0.flows``) to each value in turn; several
``--vary`` options give every combination. A value is read as TOML when it
is a number or a boolean (``200``, ``0.5``, ``true``), otherwise it is a
string (``20mbit``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qoslab import outputs
from qoslab.progress import TimeBar
from qoslab.results import SimulationResult
from qoslab.run import simulate
from qoslab.scenario import ScenarioError, load_scenario

if TYPE_CHECKING:
    from qoslab.report import Report

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["compare", "comparison_table", "main", "vary"]


def _value(text: str) -> Any:
    """A ``--vary`` value: a TOML number or boolean, else the string itself."""
    t = text.strip()
    try:
        v = tomllib.loads(f"v = {t}")["v"]
    except tomllib.TOMLDecodeError:
        return t
    return v if isinstance(v, (bool, int, float)) else t


def _set(doc: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    node: Any = doc
    for i, part in enumerate(parts[:-1]):
        where = ".".join(parts[: i + 1])
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ValueError(f"--vary {key}: '{where}' needs an index below {len(node)}")
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node.setdefault(part, {})
        else:
            raise ValueError(f"--vary {key}: '{'.'.join(parts[:i])}' is a value, not a table")
        if not isinstance(node, (dict, list)):
            raise ValueError(f"--vary {key}: '{where}' is a value, not a table")
    if isinstance(node, list):
        raise ValueError(f"--vary {key}: the last part must name a key, not an index")
    node[parts[-1]] = value


def parse_vary(spec: str) -> tuple[str, list[Any]]:
    """``KEY=V1,V2`` → ``(KEY, [v1, v2])``."""
    key, eq, values = spec.partition("=")
    key = key.strip()
    vals = [v for v in values.split(",") if v.strip()]
    if not eq or not key or not vals:
        raise ValueError(f"--vary expects KEY=V1,V2,..., got '{spec}'")
    if any(not p for p in key.split(".")):
        raise ValueError(f"--vary {key}: empty part in the key")
    return key, [_value(v) for v in vals]


def vary(text: str, varies: Sequence[tuple[str, Sequence[Any]]]) -> dict[str, dict[str, Any]]:
    """One scenario document per combination of values, labelled
    ``"key=value key2=value2"`` (the last part of each key)."""
    base = tomllib.loads(text)
    out: dict[str, dict[str, Any]] = {}
    for combo in itertools.product(*(vals for _, vals in varies)):
        doc = tomllib.loads(text) if out else base
        labels = []
        for (key, _), v in zip(varies, combo, strict=True):
            _set(doc, key, v)
            labels.append(f"{key.split('.')[-1]}={v}")
        out[" ".join(labels)] = doc
    return out


def _toml_text(doc: Mapping[str, Any]) -> str:
    import tomli_w

    return tomli_w.dumps(dict(doc))


def compare(
    scenarios: Mapping[str, Any],
    seed: int | None = None,
    progress: Callable[[str, int, int], Any] | None = None,
) -> tuple[dict[str, SimulationResult], dict[str, str]]:
    """Runs each scenario (``label -> path, TOML text or dict``); returns the
    results and the scenario texts as run, both by label.
    ``progress(label, index, count)`` may return the progress callback of
    that run (see ``qoslab.simulate``); its ``close()``, if any, is called
    after the run."""
    results: dict[str, SimulationResult] = {}
    texts: dict[str, str] = {}
    for i, (label, spec) in enumerate(scenarios.items()):
        text = _toml_text(spec) if isinstance(spec, Mapping) else load_scenario(spec)[0]
        cb = progress(label, i, len(scenarios)) if progress is not None else None
        try:
            results[label] = simulate(spec, seed=seed, progress=cb)
        finally:
            if cb is not None and hasattr(cb, "close"):
                cb.close()
        texts[label] = text
    return results, texts


def _weighted_rtt(flows: Sequence[Mapping[str, Any]]) -> float | None:
    n = sum(f["rtt_ms"]["samples"] for f in flows)
    if not n:
        return None
    return round(sum(f["rtt_ms"]["mean"] * f["rtt_ms"]["samples"] for f in flows) / n, 3)


def comparison_table(results: Mapping[str, SimulationResult]) -> tuple[list[str], list[list[Any]]]:
    """Metrics down, runs across: ``(columns, rows)``."""
    summaries = {k: r.summary for k, r in results.items()}
    cols = ["metric", *summaries]
    data = {k: [f for f in s["flows"] if f["protocol"] != "ping"] for k, s in summaries.items()}
    pings = {k: [f for f in s["flows"] if f["protocol"] == "ping"] for k, s in summaries.items()}

    def row(name: str, fn: Any) -> list[Any]:
        return [name, *(fn(k, s) for k, s in summaries.items())]

    rows = [row("sum goodput Mbit/s", lambda k, s: round(s["sum_goodput_bps"] / 1e6, 3))]
    for i in range(max((len(v) for v in data.values()), default=0)):
        rows.append(
            row(
                f"flow {i} goodput Mbit/s",
                lambda k, s, i=i: (
                    round(data[k][i]["goodput_bps"] / 1e6, 3) if i < len(data[k]) else None
                ),
            )
        )
    rows += [
        row("Jain's fairness index", lambda k, s: round(s["jain_fairness"], 4)),
        row("retransmits", lambda k, s: sum(f["retransmits"] for f in data[k])),
        row(
            "retransmitted %",
            lambda k, s: round(
                100
                * sum(f["retransmits"] for f in data[k])
                / max(1, sum(f["packets_sent"] for f in data[k])),
                2,
            ),
        ),
        row("RTO timeouts", lambda k, s: sum(f["timeouts"] for f in data[k])),
        row("RTT mean ms", lambda k, s: _weighted_rtt(data[k])),
        row(
            "RTT max ms",
            lambda k, s: max(
                (f["rtt_ms"]["max"] for f in data[k] if f["rtt_ms"]["samples"]), default=None
            ),
        ),
        row("ping RTT mean ms", lambda k, s: _weighted_rtt(pings[k])),
        row(
            "ping RTT median ms",
            lambda k, s: round(pings[k][0]["rtt_ms"]["p50"], 3) if pings[k] else None,
        ),
        row(
            "policy drops (packets)", lambda k, s: sum(p["drops"]["packets"] for p in s["policies"])
        ),
        row(
            "max queue (packets)",
            lambda k, s: max((p["max_queue_packets"] for p in s["policies"]), default=None),
        ),
    ]
    return cols, rows


def render_table(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    width: int | None = None,
    color: bool = False,
) -> str:
    """The table as text (:func:`qoslab.table.rich_tables`), first column
    left-aligned; ``width``: squeezed/cut to it (a terminal's width)."""
    from qoslab.table import rich_tables

    cells = [
        ["-" if v is None else (f"{v:g}" if isinstance(v, float) else str(v)) for v in r]
        for r in rows
    ]
    cols = [(str(c), "left" if i == 0 else "right") for i, c in enumerate(columns)]
    return rich_tables([("", cols, cells)], width, color).lstrip("\n")


def compare_report(
    results: Mapping[str, SimulationResult], texts: Mapping[str, str], title: str
) -> Report:
    from qoslab.report import Report  # matplotlib: only when a report is drawn

    rep = Report(title)
    cols, rows = comparison_table(results)
    rep.heading("Side by side")
    rep.table(cols, rows)
    rep.heading("Figures")
    rep.paragraph(
        "Time series are small multiples: one panel per run, titled with its label and "
        "scaled on its own, so no run flattens another; CDFs overlay the runs.",
        "note",
    )
    rep.figures(results)
    rep.heading("Scenarios as run")
    for label, text in texts.items():
        rep.pre(text, label)
    return rep


# --- the `qoslab compare` command --------------------------------------------

#: ``--modes`` names → (label, how the run is made).
MODES = {
    "sim": "sim",
    "emu": "emu (userspace)",
    "kernel": "emu (kernel qdisc)",
}


def parse_modes(spec: str) -> list[str]:
    """``sim,emu,kernel`` → the modes, in order, each once."""
    modes = [m.strip() for m in spec.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if not modes or bad:
        raise ValueError(f"--modes expects a comma list of {', '.join(MODES)}, got '{spec}'")
    return list(dict.fromkeys(modes))


def compare_modes(
    path: str, modes: Sequence[str], seed: int | None = None
) -> tuple[dict[str, SimulationResult], dict[str, str]]:
    """Runs one scenario in each mode; results and texts by label."""
    results: dict[str, SimulationResult] = {}
    text = load_scenario(path)[0]
    for mode in modes:
        label = MODES[mode]
        if sys.stderr.isatty():
            print(f"[{label}] running", file=sys.stderr)
        if mode == "sim":
            results[label] = simulate(path, seed=seed)
        else:
            from qoslab.emulate import emulate

            backend = "kernel" if mode == "kernel" else "userspace"
            results[label] = emulate(path, seed=seed, backend=backend)
    return results, dict.fromkeys(results, text)


def _labels(paths: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in paths:
        text, _ = load_scenario(path)
        try:
            name = tomllib.loads(text).get("scenario", {}).get("name") or Path(path).stem
        except tomllib.TOMLDecodeError:
            name = Path(path).stem  # the Rust parser reports the error when it runs
        label = name if name not in out else f"{name} ({path})"
        out[label] = path
    return out


def _progress_bar(label: str, i: int, n: int) -> TimeBar:
    """On a terminal: which run is going, and how far it has got."""
    return TimeBar(f"[{i + 1}/{n}] {label}", delay_s=0.0)


def main(args: argparse.Namespace) -> int:
    """``qoslab compare``: returns the exit status; errors propagate."""
    # before the runs, not after them
    outputs.check_file(args.report, "--report", args.scenarios)
    if args.modes:
        modes = parse_modes(args.modes)
        if len(args.scenarios) != 1 or args.vary:
            raise ValueError("--modes works on exactly one scenario, without --vary")
        results, texts = compare_modes(args.scenarios[0], modes, seed=args.seed)
        return _finish(args, results, texts)
    if args.vary:
        if len(args.scenarios) != 1:
            raise ValueError("--vary works on exactly one scenario")
        text, filename = load_scenario(args.scenarios[0])
        try:
            specs: dict[str, Any] = vary(text, [parse_vary(v) for v in args.vary])
        except tomllib.TOMLDecodeError as e:
            raise ScenarioError(f"{filename}: {e}") from None
    else:
        if len(args.scenarios) < 2:
            raise ValueError("compare needs two scenarios or more, or one with --vary")
        specs = dict(_labels(args.scenarios))
    results, texts = compare(
        specs, seed=args.seed, progress=_progress_bar if sys.stderr.isatty() else None
    )
    return _finish(args, results, texts)


def _finish(
    args: argparse.Namespace, results: dict[str, SimulationResult], texts: dict[str, str]
) -> int:
    cols, rows = comparison_table(results)
    title = "qoslab compare: " + " vs ".join(results)
    rep = compare_report(results, texts, title)
    rep.write(args.report)
    if args.figures:  # the report's PNGs, not drawn a second time
        rep.write_figures(args.figures)
    if args.json:
        doc = {
            "runs": [{"label": k, "summary": r.summary} for k, r in results.items()],
            "table": {"columns": cols, "rows": rows},
            "report": str(args.report),
        }
        print(json.dumps(doc, indent=2))
    else:
        tty = sys.stdout.isatty()
        width = shutil.get_terminal_size().columns if tty else None
        print(render_table(cols, rows, width=width, color=tty))
        print(f"wrote {args.report}")
    return 0
