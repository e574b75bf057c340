"""``qoslab analyze``: its options and help; the analysis is
``qoslab.analyze.main``, imported (with NumPy) only when it runs."""

from __future__ import annotations

from typing import Any

import click

from qoslab.cli._click import PATH, Checked, Command, call, namespace

EPILOG = """\
CAPTURE: a pcap or pcapng file (optionally .xz), or '-' for standard input.
Flows are directions of TCP connections (a reused 4-tuple starts a new one)
and UDP 4-tuples; times are seconds from the capture's first record.

examples:
  qoslab analyze examples/policed-1.5mbit.pcap.xz
  qoslab analyze examples/policed-1.5mbit.pcap.xz --port 10047 --policing --json
  qoslab analyze examples/policed-1.5mbit.pcap.xz --bin 1s --out /tmp/capture-results --report
  qoslab analyze examples/policed-1.5mbit.pcap.xz --port 10047 --policing --format flach-csv
  xz -dc examples/policed-1.5mbit.pcap.xz | qoslab analyze - --port 10047 --policing
"""


def _port(s: str) -> int:
    try:
        v = int(s, 10)
    except ValueError:
        raise ValueError(f"expected a port number, got '{s}'") from None
    if not 0 <= v <= 65535:
        raise ValueError(f"expected a port in 0..65535, got {v}")
    return v


def _bin(s: str) -> int:
    from qoslab import _core

    try:
        v = int(_core.parse_time(s))
    except _core.ConfigError as e:
        raise ValueError(f"expected a time like 100ms, got '{s}' ({e})") from None
    if v <= 0:
        raise ValueError(f"the bin must be > 0, got '{s}'")
    return v


@click.command(
    "analyze",
    cls=Command,
    help="Read a capture and print an iperf3-style table per flow with its loss and RTT "
    "analysis; detect traffic policing (Flach et al., SIGCOMM 2016).",
    epilog=EPILOG,
)
@click.argument(
    "capture",
    type=PATH,
    metavar="CAPTURE",
    help="pcap/pcapng file (.xz too), '-' for stdin",
)
@click.option(
    "--port", type=Checked("port", _port), metavar="PORT", help="keep connections with this port"
)
@click.option(
    "--bin", type=Checked("time", _bin), default=100_000_000, metavar="TIME", help="IO-graph bin"
)
@click.option("--policing", is_flag=True, help="run the policing detector")
@click.option(
    "--format",
    type=click.Choice(("table", "flach-csv")),
    default="table",
    help="flach-csv: the policing detector's published CSV rows (needs --policing)",
)
@click.option(
    "--direction",
    type=click.Choice(("a2b", "b2a", "both")),
    help="policing rows to show (default: b2a for flach-csv as published, else both)",
)
@click.option("--json", is_flag=True, help="print the summary as JSON")
@click.option("--out", type=PATH, metavar="DIR", help="write results.json and the series here")
@click.option(
    "--report",
    type=PATH,
    is_flag=False,
    flag_value="",
    default=None,
    metavar="HTML",
    help="write an HTML report (default: DIR/report.html with --out, else report.html)",
)
def command(**params: Any) -> int:
    from qoslab import analyze

    return call("analyze", analyze.main, namespace("analyze", params), wrap_qoslab_errors=True)
