"""The ``qoslab reproduce`` command: its parser and ``main``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from qoslab import outputs
from qoslab.reproduce import registry, render
from qoslab.reproduce.registry import DEFAULT_SEEDS, Reproduction

REPRODUCE_EPILOG = (
    "experiments: "
    + ", ".join(registry.EXPERIMENTS)
    + f"""
rows: kind number (ours vs a published number), claim (a statement of the
source, judged over the seeds) or sanity (follows from our configuration,
never counted as a reproduction); verdict holds, off or fails. Each case
runs with seeds 1..N (--seeds, default {DEFAULT_SEEDS}); each assumption the
source leaves open is run again over its range, and a verdict holds only
over the whole range.
progress: a line per experiment as it starts and ends, and on a terminal a
progress bar per run, go to stderr (stdout stays the table or the JSON).
exit status: 0 when every experiment ran (whatever the verdicts); with
--strict, 1 when any row fails.

examples:
  qoslab reproduce --all
  qoslab reproduce isr4000 packetlife --json
  qoslab reproduce isr4000 --quick --seeds 2 --report /tmp/reproduce.html
  qoslab reproduce --all --markdown docs/reproductions.md
"""
)


def add_reproduce_parser(sub: Any, fmt: type[argparse.HelpFormatter]) -> None:
    p = sub.add_parser(
        "reproduce",
        help="run the published experiments and compare with their numbers",
        description="Run the published experiments and print ours beside theirs: "
        "numbers, claims and sanity checks, over seeds and the assumptions' ranges.",
        epilog=REPRODUCE_EPILOG,
        formatter_class=fmt,
        allow_abbrev=False,
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="experiments to run")
    p.add_argument("--all", action="store_true", help="run every experiment")
    p.add_argument("--json", action="store_true", help="print the rows as a JSON list")
    p.add_argument(
        "--report",
        nargs="?",
        const="reproduce-report.html",
        metavar="HTML",
        help="write an HTML report (default: reproduce-report.html)",
    )
    p.add_argument("--markdown", metavar="MD", help="write the tables and figures as Markdown")
    p.add_argument("--quick", action="store_true", help="shortened runs (for tests)")
    p.add_argument(
        "--seeds",
        type=int,
        default=DEFAULT_SEEDS,
        metavar="N",
        help=f"seeds per case, 1..N (default {DEFAULT_SEEDS})",
    )
    p.add_argument("--strict", action="store_true", help="exit 1 when any row fails")


def run_all(
    names: Sequence[str], quick: bool, log: TextIO, bar: bool = False, seeds: int = DEFAULT_SEEDS
) -> list[Reproduction]:
    """Reproduces each experiment in turn, saying on ``log`` which one starts
    and how it ended; with ``bar``, a progress bar per run (a terminal)."""
    from qoslab.progress import TimeBar

    reps = []
    for i, name in enumerate(names):
        head = f"reproduce [{i + 1}/{len(names)}] {name}"
        n = len(registry.EXPERIMENTS[name].cases)
        print(
            f"{head}: running {n} case{'s' * (n != 1)} x {seeds} seed{'s' * (seeds != 1)} "
            "+ assumption variants...",
            file=log,
            flush=True,
        )

        def case_bar(tag: str, j: int, m: int, name: str = name) -> TimeBar:
            return TimeBar(f"{name} [{j + 1}/{m}] {tag}", stream=log, delay_s=0.0, force=True)

        t0 = time.monotonic()
        rep = registry.reproduce(name, quick=quick, seeds=seeds, progress=case_bar if bar else None)
        took = time.monotonic() - t0
        print(
            f"{head}: done in {took:.1f} s ({rep.runs} runs): {render.summary_line(rep.rows)}",
            file=log,
            flush=True,
        )
        reps.append(rep)
    return reps


def main(args: argparse.Namespace) -> int:
    experiments = registry.EXPERIMENTS
    names = list(experiments) if args.all else list(args.names)
    if not names:
        raise ValueError(f"name experiments or give --all; experiments: {', '.join(experiments)}")
    unknown = [n for n in names if n not in experiments]
    if unknown:
        raise ValueError(
            f"unknown experiment '{unknown[0]}'; experiments: {', '.join(experiments)}"
        )
    if args.seeds < 1:
        raise ValueError(f"--seeds: expected a whole number >= 1, got {args.seeds}")
    # Bad output paths fail now, not after minutes of runs.
    if args.report is not None:
        outputs.check_file(args.report, "--report")
    if args.markdown is not None:
        render.check_markdown_path(Path(args.markdown))
    reps = run_all(names, args.quick, sys.stderr, bar=sys.stderr.isatty(), seeds=args.seeds)
    rows = [r for x in reps for r in x.rows]
    if args.report:
        render.report(reps, args.quick).write(args.report)
    if args.markdown:
        render.write_markdown(reps, Path(args.markdown), args.quick)
    if args.json:
        print(json.dumps(render.json_rows(reps), indent=2, ensure_ascii=False))
    else:
        print(render.render_text(reps))
        for path in (args.report, args.markdown):
            if path:
                print(f"wrote {path}")
    return 1 if args.strict and any(r.verdict == "fails" for r in rows) else 0
