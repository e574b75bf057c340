"""The ``qoslab reproduce`` command: its parser and ``main``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from qoslab import outputs
from qoslab.reproduce import registry, render
from qoslab.reproduce.registry import DEFAULT_SEEDS, Reproduction


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
