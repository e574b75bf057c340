"""``qoslab emulate``: the command line of the emulator."""

from __future__ import annotations

import argparse
import errno
import json
import sys
from pathlib import Path
from typing import Any

from qoslab import outputs
from qoslab.emulate.netns import cleanup_stale
from qoslab.emulate.run import BACKENDS, emulate, emulation_plan, stderr_progress
from qoslab.results import write_results
from qoslab.scenario import with_seed

EMULATE_EPILOG = """\
Real Linux TCP (iperf3) and ping run between network namespaces, one per host of the
scenario; every router and link of the scenario is emulated in userspace by qoslab's
forwarder, whose conditioners are the very code 'qoslab run' simulates (rate,
propagation delay and loss per link direction; police, shape, fifo or a policy tree).
Frames are wire-sized (TSO/GSO/GRO off); with --offload on the hosts send TSO
super-packets, which the forwarder splits into their wire segments before any
conditioner (as Linux tbf's tbf_segment), so policies still count wire frames.
Needs root and iperf3, iproute2, ethtool,
ping (bash scripts/setup.sh installs them). Every namespace and process is removed at
the end, on an error, on Ctrl-C and on SIGTERM; after a SIGKILL, run --cleanup.

--backend kernel runs each policy in the kernel's own qdisc instead (tc tbf, htb,
pfifo, bfifo on a veth inside the emulated router), for a three-way comparison:
  qoslab compare SCENARIO --modes sim,emu,kernel
--capture LINK[:ingress|egress]=FILE.pcap writes what the forwarder sees there
(LINK as in the results, e.g. r1->r2); without a side, both directions in one
file as tcpdump on the upstream router's port would see them (LINK before its
policy, the reverse direction after its transmitter), ready for
'qoslab analyze FILE --policing'.
--plan prints what would run (hosts, flows, policies with their tc form; no root
needed); --cleanup removes what a killed run left.

examples:
  sudo qoslab emulate scenarios/example.toml
  sudo qoslab emulate scenarios/isr4000-police.toml --out /tmp/emu --json
  sudo qoslab emulate scenarios/trees/linux-htb-pfifo.toml --backend kernel
  sudo qoslab emulate scenarios/example.toml --capture 'r1->r2=/tmp/r1r2.pcap'
  sudo qoslab emulate scenarios/example.toml --offload on
  qoslab emulate scenarios/example.toml --plan
  sudo qoslab emulate --cleanup
"""


def add_emulate_parser(sub: Any, fmt: type[argparse.HelpFormatter]) -> None:
    p = sub.add_parser(
        "emulate",
        help="run a scenario with real Linux TCP through qoslab's conditioners",
        description="Emulate a scenario: real iperf3 and ping between namespaces, through"
        " qoslab's own conditioners in a userspace forwarder (or the kernel's qdiscs).",
        epilog=EMULATE_EPILOG,
        formatter_class=fmt,
        allow_abbrev=False,
    )
    p.add_argument("scenario", nargs="?", metavar="SCENARIO", help="the scenario TOML file")
    p.add_argument("--backend", choices=BACKENDS, default="userspace", help="where policies run")
    p.add_argument(
        "--offload",
        choices=("on", "off"),
        default="off",
        help="on: hosts send GSO super-packets, split into wire segments by the forwarder",
    )
    p.add_argument("--out", metavar="DIR", help="write results.json, series CSV/Parquet here")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument(
        "--report",
        nargs="?",
        const="",
        metavar="HTML",
        help="write an HTML report (default: DIR/report.html with --out, else report.html)",
    )
    p.add_argument("--seed", metavar="N", type=int, help="override the scenario's seed")
    p.add_argument(
        "--capture",
        action="append",
        default=[],
        metavar="LINK[:DIR]=PCAP",
        help="write a pcap of a link direction's policy ingress or egress (repeatable)",
    )
    p.add_argument("--plan", action="store_true", help="print what would run, and stop")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    p.add_argument(
        "--cleanup",
        action="store_true",
        help="remove namespaces and processes left by killed runs, and stop",
    )
    p.add_argument(
        "--all", action="store_true", help="with --cleanup: also those of runs still going"
    )


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
        if args.json:
            print(json.dumps({"removed": gone}))
        elif not args.quiet:
            print(f"removed {len(gone)} namespace(s)" + (": " + " ".join(gone) if gone else ""))
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
