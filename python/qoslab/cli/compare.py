"""``qoslab compare``: its options and help; the runs and the report are
``qoslab.compare.main``, imported (with matplotlib) only when it runs."""

from __future__ import annotations

from typing import Any

import click

from qoslab.cli._click import PATH, Command, call, namespace

COMPARE_EPILOG = """\
--modes runs ONE scenario several ways: sim (the simulator), emu (real Linux TCP
through qoslab's conditioners, 'qoslab emulate'), kernel (real Linux TCP through the
kernel's own qdiscs, 'qoslab emulate --backend kernel'); emu and kernel need root.

examples:
  qoslab compare scenarios/isr4000-police.toml scenarios/isr4000-shape.toml
  qoslab compare scenarios/isr4000-shape.toml \\
      --vary traffic.0.flows=1,4 --report /tmp/ql.html
  qoslab compare scenarios/packetlife-police.toml scenarios/packetlife-shape.toml \\
      --json --report /tmp/pl.html --figures /tmp/figs
  sudo qoslab compare scenarios/trees/linux-htb-bfifo.toml --modes sim,emu,kernel
"""


@click.command(
    "compare",
    cls=Command,
    help="Run several scenarios, or one with --vary, and compare them.",
    epilog=COMPARE_EPILOG,
)
@click.argument(
    "scenarios",
    type=PATH,
    nargs=-1,
    required=True,
    metavar="SCENARIO...",
    help="scenario TOML files",
)
@click.option(
    "--modes",
    metavar="M1,M2",
    help="run one scenario several ways: sim, emu, kernel (e.g. sim,emu,kernel)",
)
@click.option(
    "--vary",
    multiple=True,
    metavar="KEY=V1,V2",
    help="vary a dotted key of one scenario (repeatable: every combination)",
)
@click.option(
    "--report",
    type=PATH,
    metavar="PATH",
    default="compare-report.html",
    help="where to write the HTML report (default: compare-report.html)",
)
@click.option(
    "--figures", type=PATH, metavar="DIR", help="also write each figure of the report as PNG here"
)
@click.option("--seed", metavar="N", type=int, help="override every scenario's seed")
@click.option("--json", is_flag=True, help="print the table and summaries as JSON")
def command(**params: Any) -> int:
    from qoslab import compare

    return call("compare", compare.main, namespace("compare", params), wrap_qoslab_errors=True)
