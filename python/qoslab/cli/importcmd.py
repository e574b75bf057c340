"""``qoslab import``: its options and help; the translation is
``qoslab.importcmd.main``, imported only when it runs."""

from __future__ import annotations

from typing import Any

import click

from qoslab.cli._click import PATH, Command, call, namespace

EPILOG = """\
The output is the [policy.LINK.DIR] table of a scenario (paste it into one). A
scenario can also embed the text itself, errors located at their line in the file:
  [policy.bottleneck.egress]
  tc = \"\"\"tc qdisc add dev eth0 root tbf rate 1mbit burst 3000 limit 30000\"\"\"
What maps to what: docs/import.md. From a live system:
  tc -s -d qdisc show dev eth1; tc -s -d class show dev eth1   (pipe into 'import tc -')

examples:
  qoslab import tc examples/import/tbf.sh
  qoslab import tc examples/import/htb-sfq.sh --json
  qoslab import cisco --platform ios-xe examples/import/isr4000-shaper.cfg
  qoslab import cisco --platform ios examples/import/llq.cfg --interface Serial0/0
  qoslab import tc examples/import/tbf.sh --link r1-r2
"""


@click.command(
    "import",
    cls=Command,
    help="Read a Linux tc script (or tc -s -d qdisc/class show output) or a Cisco "
    "IOS / IOS XE MQC configuration and print the equivalent [policy.LINK.DIR] "
    "table, every derived default (Bc, Tc, limit, quantum, queue-limit) written "
    "out as a comment.",
    epilog=EPILOG,
)
@click.argument(
    "source",
    type=click.Choice(("tc", "cisco")),
    metavar="{tc|cisco}",
    help="the configuration language",
)
@click.argument("file", type=PATH, metavar="FILE", help="the configuration file, '-' for stdin")
@click.option(
    "--platform",
    type=click.Choice(("ios", "ios-xe")),
    default="ios-xe",
    help="cisco: whose defaults apply (classic IOS or IOS XE; default ios-xe)",
)
@click.option(
    "--direction",
    type=click.Choice(("egress", "ingress")),
    default="egress",
    help="which policy (tc root / ingress; MQC service-policy output / input)",
)
@click.option(
    "--interface",
    "--dev",
    "attach",
    metavar="NAME",
    help="the device or interface, when the text configures several",
)
@click.option(
    "--link",
    metavar="LINK",
    help="the scenario link for the table header (default: bottleneck; access for ingress)",
)
@click.option("--json", is_flag=True, help="print the spec, derived values, warnings")
def command(**params: Any) -> int:
    from qoslab import importcmd

    return call("import", importcmd.main, namespace("import", params), wrap_qoslab_errors=True)
