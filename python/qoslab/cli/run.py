"""``qoslab run``: its options and help; the run itself is ``qoslab.run.main``
(and, with ``--report``, ``qoslab.report``), imported only when it runs."""

from __future__ import annotations

from typing import Any

import click

from qoslab.cli._click import PATH, Checked, Command, call, int_in, namespace, report_option

#: ``--format``: what stdout carries (qoslab.run.FORMATS; a test keeps them equal).
FORMATS = ("table", "json", "iperf3")
#: Flows up to which the table is per flow (qoslab.table.SUMMARY_FLOWS; tested equal).
SUMMARY_FLOWS = 16

RUN_EPILOG = """\
The scenario file is TOML (see scenarios/ and crates/qoslab-scenario):
  [scenario]  duration = "20s", seed = 1
  [topology]  senders = 4, access = { rate = "1gbit", delay = "1ms" },
              bottleneck = { rate = "1gbit", delay = "0.5ms" }
  [policy.bottleneck.egress]  police = { cir = "20mbit", bc = "625000B" }
  [[traffic]] kind = "tcp-bulk", flows = 4, profile = "windows10"
  [[traffic]] kind = "tcp-fetch", chunks = 5, chunk_size = "2000000B", pause = "1s"
              (per-chunk results in the JSON: flows[].chunks)
The table prints the run's policies with their effective parameters (what
the conditioner uses: cir = "50Mbps" is tc's bytes per second, shown as
400mbit, and warned about), a line per flow per second and [SUM] lines as
iperf3 does; flows in both directions get iperf3 --bidir's [Role] column
(TX-C upload, RX-C download) and a [SUM] per direction. Above 16 flows
only totals per direction and traffic label are printed (--per-flow: all).
--format iperf3 prints iperf3 -J's JSON (start/intervals/end, sum_sent,
sum_received, streams...) so iperf3 tooling reads a simulated run.
'-' is stdin for SCENARIO, and stdout for --report and --capture ...=FILE
(stdout then carries only that file): cat x.toml | qoslab run - | head

--out DIR writes results.json, each recorded series as CSV and Parquet and
the scenario as run, all at once (DIR is complete or untouched).
A progress bar shows on a terminal (stderr) once a run takes over a second.

--capture LINK[:ingress|egress][=FILE] writes a pcap of what passes there
(LINK as in the results, e.g. r1->r2), with real Ethernet/IPv4/TCP headers
(options, SACK blocks, timestamps), simulated time stamps and headers only
(--snaplen N keeps N bytes). Without a side, both directions go in one file
as tcpdump on the upstream router's port would see them (LINK before its
policy, the reverse direction after its transmitter) — the spelling and the
points of 'qoslab emulate --capture'. Without =FILE the file goes in --out
(r1-r2.pcap). A scenario's [capture] table (links = [...], snaplen = N)
asks for the same; --capture replaces its links. Read one back with
'qoslab analyze FILE --policing'.

examples:
  qoslab run scenarios/example.toml
  qoslab run scenarios/isr4000-police.toml --seed 2 --out /tmp/police --json
  qoslab run scenarios/example.toml --capture 'r1->r2' --out /tmp/ex
  qoslab run scenarios/example.toml --capture 'r1->r2:egress=/tmp/after.pcap' --quiet
  qoslab run scenarios/fetch-policed.toml --json
  qoslab run scenarios/isr4000-police.toml --format iperf3
  qoslab run scenarios/isr4000-police.toml --summary
  qoslab run scenarios/example.toml --report - --quiet
  qoslab run scenarios/example.toml --dry-run
  qoslab run scenarios/example.toml --memory-limit 2GB
"""


def _size(s: str) -> int:
    from qoslab.run import _limit_bytes

    try:
        return _limit_bytes(s, "--memory-limit")
    except ValueError as e:
        raise ValueError(str(e).removeprefix("--memory-limit: ")) from None


SEED = Checked("seed", int_in(0, 2**64 - 1, "a non-negative integer", "an integer in 0..2**64-1"))
SNAPLEN = Checked("snaplen", int_in(0, 262144, "a byte count", "0..262144 (0: headers only)"))
SIZE = Checked("size", _size)


@click.command(
    "run",
    cls=Command,
    help="Simulate a scenario file and print an iperf3-style table.",
    epilog=RUN_EPILOG,
)
@click.argument(
    "scenario",
    type=PATH,
    metavar="SCENARIO",
    help="the scenario TOML file ('-': stdin)",
)
@click.option("--out", type=PATH, metavar="DIR", help="write results.json, series CSV/Parquet here")
@click.option(
    "--format",
    type=click.Choice(FORMATS),
    default=None,
    help="what to print: the iperf3-style table (default), json (the summary, as "
    "results.json), or iperf3 (iperf3 -J's layout, one stream per TCP/UDP flow)",
)
@click.option("--json", is_flag=True, help="print the summary as JSON (--format json)")
@click.option(
    "--per-flow",
    is_flag=True,
    help=f"print every flow and second (default up to {SUMMARY_FLOWS} flows)",
)
@click.option("--summary", is_flag=True, help="print totals only: per direction and traffic label")
@click.option("--seed", metavar="N", type=SEED, help="override the scenario's seed")
@click.option("--quiet", is_flag=True, help="print nothing but errors")
@click.option(
    "--progress", is_flag=True, help="show a progress bar even when stderr is not a terminal"
)
@click.option(
    "--capture",
    metavar="LINK[:SIDE][=FILE]",
    multiple=True,
    help="write a pcap of link direction LINK (repeatable; see below)",
)
@click.option(
    "--snaplen",
    metavar="N",
    type=SNAPLEN,
    help="bytes kept of each captured frame (default: headers only)",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="validate, print the estimate (events, series rows, peak memory); run nothing",
)
@click.option(
    "--memory-limit",
    metavar="SIZE",
    type=SIZE,
    help="refuse a run estimated to need more memory (default: half of physical RAM)",
)
@report_option(
    "write an HTML report (default: DIR/report.html with --out, else report.html; '-': stdout)"
)
def command(**params: Any) -> int:
    """The options as the namespace ``qoslab.run.main`` reads; ``--report`` adds the report."""
    per_flow, summary = params.pop("per_flow"), params.pop("summary")
    if per_flow and summary:
        raise click.UsageError("--per-flow and --summary exclude each other; give one")
    # None: the table's own choice by the number of flows.
    params["per_flow"] = True if per_flow else False if summary else None
    args = namespace("run", params)
    if args.report is None:
        from qoslab import run as run_cmd

        return call("run", run_cmd.main, args)
    return call("run", _with_report, args)


def _with_report(args: Any) -> int:
    """``run --report``: the run, then its HTML report (at DIR/report.html
    with ``--out``, else report.html; '-' is stdout). The figure processes
    start first (qoslab.cli._drawer): they import matplotlib while this
    process simulates (and imports NumPy for the report)."""
    from qoslab.cli import _drawer

    # Started by qoslab.cli.main before click's import, or here when the
    # command was called otherwise.
    tried, drawer = _drawer.take_early()
    if not tried and not args.dry_run:
        drawer = _drawer.Drawer.start()
    try:
        from pathlib import Path

        from qoslab import outputs, report
        from qoslab import run as run_cmd

        path = args.report or str(Path(args.out or ".") / "report.html")

        def write(result: Any, text: str) -> None:
            extra = report.run_captures(args)
            draw = None if drawer is None else drawer.draw
            report.run_report(result, text, extra=extra, draw=draw).write(path)
            if not args.quiet and not args.json and path != outputs.STDOUT:
                print(f"wrote {path}")

        return run_cmd.main(args, on_result=write)
    finally:
        if drawer is not None:
            drawer.close()
