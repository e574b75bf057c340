"""``qoslab reproduce``: its options and help; the experiments are
``qoslab.reproduce.main``, imported only when it runs."""

from __future__ import annotations

from typing import Any

import click

from qoslab.cli._click import PATH, Command, call, namespace

#: Seeds per case unless --seeds (qoslab.reproduce.registry.DEFAULT_SEEDS; tested equal).
DEFAULT_SEEDS = 8


def epilog() -> str:
    """The help's epilog: it names the experiments, so it loads the registry
    (only for ``qoslab reproduce --help``)."""
    from qoslab.reproduce import registry

    return (
        "experiments: "
        + ", ".join(registry.EXPERIMENTS)
        + f"""
rows: kind number (ours vs a published number), claim (a statement of the
source, judged over the seeds) or sanity (follows from our configuration,
never counted as a reproduction); verdict holds, off or fails. Each case
runs with seeds 1..N (--seeds, default {registry.DEFAULT_SEEDS}); each assumption the
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


@click.command(
    "reproduce",
    cls=Command,
    help="Run the published experiments and print ours beside theirs: "
    "numbers, claims and sanity checks, over seeds and the assumptions' ranges.",
    epilog=epilog,
)
@click.argument("names", nargs=-1, metavar="[NAME]...", help="experiments to run")
@click.option("--all", is_flag=True, help="run every experiment")
@click.option("--json", is_flag=True, help="print the rows as a JSON list")
@click.option(
    "--report",
    type=PATH,
    is_flag=False,
    flag_value="reproduce-report.html",
    default=None,
    metavar="HTML",
    help="write an HTML report (default: reproduce-report.html)",
)
@click.option(
    "--markdown", type=PATH, metavar="MD", help="write the tables and figures as Markdown"
)
@click.option("--quick", is_flag=True, help="shortened runs (for tests)")
@click.option(
    "--seeds",
    type=int,
    default=DEFAULT_SEEDS,
    metavar="N",
    help=f"seeds per case, 1..N (default {DEFAULT_SEEDS})",
)
@click.option("--strict", is_flag=True, help="exit 1 when any row fails")
def command(**params: Any) -> int:
    from qoslab import reproduce

    args = namespace("reproduce", params)
    return call("reproduce", reproduce.main, args, wrap_qoslab_errors=True)
