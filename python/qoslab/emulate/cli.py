"""``qoslab emulate``: the command line of the emulator."""

from __future__ import annotations

import argparse
import errno
import json
import sys
from pathlib import Path

from qoslab import outputs
from qoslab.emulate import rt
from qoslab.emulate.netns import cleanup_stale
from qoslab.emulate.run import emulate, emulation_plan, stderr_progress
from qoslab.results import write_results
from qoslab.scenario import with_seed


def _captures(specs: list[str]) -> list[tuple[str, str, str]]:
    """``LINK[:ingress|egress]=FILE`` → capture points; without a side, both
    directions of the link in one file: LINK before its policy and the reverse
    direction after its transmitter — what tcpdump on the upstream router's port
    would see (the data before the policer, the ACKs coming back)."""
    out = []
    for spec in specs:
        where, eq, path = spec.partition("=")
        if not eq or not where or not path:
            raise ValueError(f"--capture expects LINK[:ingress|egress]=FILE, got '{spec}'")
        link, _, side = where.partition(":")
        parent = Path(path).resolve().parent
        if not parent.is_dir():
            raise FileNotFoundError(errno.ENOENT, "directory does not exist", str(parent))
        if not side:
            a, arrow, b = link.partition("->")
            if not arrow or not a or not b:
                raise ValueError(f"--capture {spec}: LINK is 'A->B', e.g. r1->r2")
            out += [(link, "ingress", path), (f"{b}->{a}", "egress", path)]
            continue
        if side not in ("ingress", "egress"):
            raise ValueError(f"--capture {spec}: side must be ingress or egress, got '{side}'")
        out.append((link, side, path))
    return out


def main(args: argparse.Namespace) -> int:
    """``qoslab emulate``: returns the exit status; errors propagate to the CLI."""
    if args.cleanup:
        gone = cleanup_stale(all_runs=args.all)
        restored = rt.restore_stale()
        if args.json:
            print(json.dumps({"removed": gone, "rt_runtime_us_restored": restored}))
        elif not args.quiet:
            print(f"removed {len(gone)} namespace(s)" + (": " + " ".join(gone) if gone else ""))
            if restored is not None:
                print(f"restored kernel.sched_rt_runtime_us = {restored}")
        return 0
    if not args.scenario:
        raise ValueError("SCENARIO is required (or --cleanup)")
    plan, text, _ = emulation_plan(args.scenario, args.seed)
    if args.plan:
        print(json.dumps(plan, indent=2))
        return 0
    captures = _captures(args.capture)
    report_path = outputs.check_run_outputs(args.out, args.report, [args.scenario])
    result = emulate(
        args.scenario,
        seed=args.seed,
        backend=args.backend,
        capture=captures,
        progress=stderr_progress(args.quiet or args.json),
        offload=args.offload == "on",
        threads=args.threads,
        gro=args.gro == "on",
        rt_unthrottle=args.rt_unthrottle,
        busy_poll=args.busy_poll,
        idle_poll=args.idle_poll,
    )
    if sys.stderr.isatty() and not (args.quiet or args.json):
        sys.stderr.write("\r\x1b[K")
    as_run = text if args.seed is None else with_seed(text, args.seed)
    if args.out is not None:
        write_results(args.out, result, as_run)
    if report_path is not None:
        from qoslab import report

        report.run_report(result, as_run).write(report_path)
    if args.json:
        print(result.to_json())
    elif not args.quiet:
        from qoslab.run import render_table

        print(render_table(result))
        for note in result.raw["emulation"]["notes"]:
            print(f"note: {note}")
        if args.out:
            print(f"wrote {args.out}")
        if report_path is not None:
            print(f"wrote {report_path}")
    return 0
