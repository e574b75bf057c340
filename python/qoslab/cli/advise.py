"""``qoslab advise``: its options and help; the search is
``qoslab.sweep.advise.main``, imported only when it runs."""

from __future__ import annotations

from typing import Any

import click

from qoslab.cli._click import PATH, Command, call, namespace

EPILOG = """\
Simulates N TCP bulk flows over a path of --rtt through a policer (police cir
bc) and through a tbf shaper (rate burst limit) on a faster link, and finds
by bisection over seeds the smallest Bc, and the smallest tbf queue, whose
steady-state goodput reaches --goal x --rate on every seed; then compares
police and shape (goodput, Jain fairness, p95 RTT, loss) and simulates the
rules of thumb: Cisco's police default Bc = CIR/32, Juniper's burst = 5 ms x
the interface's line rate (--line-rate) and 10 x MTU, burst = RTT x rate, a BDP-sized shaper queue.
--out DIR writes advise.json and the curves (advise.png).

examples:
  qoslab advise --rate 10mbit --rtt 20ms --flows 2 --seeds 2 --duration 8s --warmup 2s
  qoslab advise --rate 20mbit --rtt 10ms --flows 4 --cc reno --seeds 2 --duration 6s \\
      --warmup 2s --json
  qoslab advise --rate 50mbit --rtt 30ms --flows 8 --cc cubic --goal 0.95 --out /tmp/advice
"""


@click.command(
    "advise",
    cls=Command,
    help="Answer 'which Bc, which queue, police or shape?' for a rate, RTT and number of "
    "TCP flows with a targeted search of simulations, beside the rules of thumb.",
    epilog=EPILOG,
)
@click.option("--rate", required=True, metavar="RATE", help="the CIR / shaping rate (50mbit)")
@click.option("--rtt", required=True, metavar="TIME", help="the path's base RTT (30ms)")
@click.option("--flows", required=True, type=int, metavar="N", help="TCP bulk flows")
@click.option("--cc", default="cubic", metavar="CC", help="congestion control (default cubic)")
@click.option("--profile", default="linux", metavar="PROFILE", help="TCP profile (default linux)")
@click.option(
    "--goal", type=float, default=0.95, metavar="GOAL", help="goodput / CIR to reach (default 0.95)"
)
@click.option("--seeds", type=int, default=3, metavar="N", help="seeds per probe (default 3)")
@click.option("--duration", default="25s", metavar="TIME", help="simulated per run (25s)")
@click.option("--warmup", default="5s", metavar="TIME", help="not counted in goodput (5s)")
@click.option(
    "--line-rate",
    metavar="RATE",
    help="the policed interface's rate (default 1gbit, or 10 x --rate if faster)",
)
@click.option("--workers", type=int, metavar="N", help="processes (default: all cores)")
@click.option(
    "--out", type=PATH, metavar="DIR", help="write advise.json and advise.png (the curves)"
)
@click.option("--json", is_flag=True, help="print the advice as JSON")
def command(**params: Any) -> int:
    from qoslab.sweep import advise

    return call("advise", advise.main, namespace("advise", params))
