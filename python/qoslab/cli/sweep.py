"""``qoslab sweep``: its options and help; the sweep, its queries and
figures are ``qoslab.sweep.command.main``, imported only when it runs."""

from __future__ import annotations

from typing import Any

import click

from qoslab.cli._click import PATH, Checked, Command, call, namespace

#: Local workers (qoslab.sweep.execute.EXECUTORS; a test keeps them equal).
EXECUTORS = ("processes", "threads")

EPILOG = """\
A point is the scenario with each --grid KEY set to one of its values; every
point runs once per seed. KEY is a path into the scenario TOML:
policy.bottleneck.egress.police.bc, topology.bottleneck.delay,
traffic[0].flows, traffic[0].cc (every table on the way must exist).
VALUES: V1,V2,... or start:stop:steps[:log] with units kept (10kb:1mb:5:log,
5ms:50ms:4, 1:8:8). Every point is validated before anything runs.

Results go to --out DIR as Parquet tables 'points' (one row per point x seed:
each swept key, its value in base units as KEY_bytes/KEY_bps/KEY_ns, and the
summary figures), 'flows' (per flow) and 'scenarios' (each run's TOML), keyed
by 'hash' (the resolved scenario + seed). Rerunning into the same DIR skips
runs already there (resume after Ctrl-C; duplicates are never written).
--query runs SQL on them with DuckDB; --plot / --heatmap draw them;
--report writes one HTML page (the figures against the swept keys, every point).

Local runs use all cores as processes (measured faster than threads for
short runs: docs/performance.md); --dask ADDRESS uses a Dask scheduler,
--dask local starts a LocalCluster (pip install 'qoslab[dask]').

A sweep file holds the same: [sweep] scenario = "x.toml", seeds = 3,
random = 0, and [sweep.grid] "KEY" = "10kb:1mb:5:log" or [values].

examples:
  qoslab sweep scenarios/example.toml --grid policy.bottleneck.egress.police.bc=10kb:1mb:5:log \\
      --grid 'traffic[0].flows=1,2,4' --seeds 2 --out /tmp/sweep
  qoslab sweep examples/sweep-bc.toml --out /tmp/sweep-file --workers 2 --executor threads
  qoslab sweep scenarios/example.toml --grid topology.bottleneck.delay=1ms:40ms:8 \\
      --grid 'traffic[0].cc=cubic,reno' --random 6 --out /tmp/sweep-lhs --json
  qoslab sweep examples/sweep-results --query \\
      'SELECT seed, count(*) AS runs, avg(sum_goodput_bps) AS bps FROM points GROUP BY 1'
  qoslab sweep examples/sweep-results --json --query \\
      'SELECT "traffic[0].flows" AS flows, max(loss_fraction) AS loss FROM points GROUP BY 1'
  qoslab sweep examples/sweep-results --plot sum_goodput_bps \\
      --x policy.bottleneck.egress.police.bc \\
      --by 'traffic[0].flows' --figure /tmp/sweep-goodput.png
  qoslab sweep examples/sweep-results --heatmap jain_fairness \\
      --x policy.bottleneck.egress.police.bc --y 'traffic[0].flows' --figure /tmp/sweep-jain.svg
  qoslab sweep examples/sweep-results --report /tmp/sweep-report.html
"""


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"expected a whole number >= 1, got '{text}'")
    return n


POSITIVE = Checked("count", _positive)


@click.command(
    "sweep",
    cls=Command,
    help="Run a scenario over a grid (or a Latin hypercube) of key values and seeds, "
    "on all cores or a Dask cluster, into a resumable Parquet store; query it "
    "with SQL (DuckDB) and draw it.",
    epilog=EPILOG,
)
@click.argument(
    "target",
    type=PATH,
    metavar="SCENARIO|SWEEP|DIR",
    help="scenario TOML to sweep, a sweep file, or (with --query/--plot/--heatmap) a results DIR",
)
@click.option(
    "--grid",
    multiple=True,
    metavar="KEY=VALUES",
    help="a swept key: V1,V2,... or start:stop:steps[:log] (repeatable)",
)
@click.option("--seeds", metavar="N|LIST", help="seeds 1..N, or a list 1,5,9 (default 1)")
@click.option(
    "--random",
    type=POSITIVE,
    metavar="N",
    help="N points by Latin hypercube over the --grid ranges instead of the full grid",
)
@click.option(
    "--random-seed",
    type=int,
    default=0,
    metavar="S",
    help="the Latin hypercube's seed (default 0)",
)
@click.option(
    "--out", type=PATH, metavar="DIR", help="the results directory (created; reused to resume)"
)
@click.option(
    "--workers",
    type=POSITIVE,
    metavar="N",
    help="local workers or LocalCluster size (default: all cores)",
)
@click.option(
    "--executor",
    type=click.Choice(EXECUTORS),
    default="processes",
    help="local workers as processes (default) or threads",
)
@click.option(
    "--dask",
    metavar="ADDRESS",
    help="run on the Dask scheduler at ADDRESS, or 'local' for a LocalCluster",
)
@click.option(
    "--emulate",
    is_flag=True,
    help="run each point through 'qoslab emulate' (root), one at a time",
)
@click.option(
    "--batch",
    type=POSITIVE,
    default=1000,
    metavar="N",
    help="rows per Parquet part (default 1000; a part is also written every 10 s)",
)
@click.option("--dry-run", is_flag=True, help="validate and count the runs, run nothing")
@click.option("--query", metavar="SQL", help="SQL over the tables points, flows, scenarios")
@click.option("--plot", metavar="METRIC", help="line plot of METRIC against --x (by --by)")
@click.option("--heatmap", metavar="METRIC", help="heatmap of METRIC over --x and --y")
@click.option("--x", metavar="KEY", help="the swept key on the x axis")
@click.option("--y", metavar="KEY", help="the swept key on the y axis (--heatmap)")
@click.option("--by", metavar="KEY", help="one line per value of this key (--plot)")
@click.option(
    "--figure",
    type=PATH,
    metavar="FILE",
    help="where to write the figure (.png or .svg; default DIR/METRIC.png)",
)
@click.option(
    "--report",
    type=PATH,
    is_flag=False,
    flag_value="",
    default=None,
    metavar="HTML",
    help="write the report page of a results DIR (default DIR/report.html)",
)
@click.option("--json", is_flag=True, help="print the summary / query result as JSON")
@click.option("--quiet", is_flag=True, help="no progress bar")
def command(**params: Any) -> int:
    from qoslab.sweep import command as sweep_cmd

    return call("sweep", sweep_cmd.main, namespace("sweep", params))
