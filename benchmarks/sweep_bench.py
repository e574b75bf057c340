"""`qoslab sweep` throughput: 10,000 short runs of scenarios/example.toml (2 s
simulated, a 10 Mbit/s policer) over Bc (50 log-spaced values, 8 kB to 1 MB)
x traffic[0].flows (1-4) x 50 seeds, through the command itself (a
subprocess per configuration, a fresh results directory each time):

- 1 and 2 local workers, as processes and as threads;
- a 2-worker Dask LocalCluster (its start-up timed apart, not in runs/s).

Prints a table and, with --write FILE, puts it into FILE between the markers
``<!-- sweep-bench:begin -->`` and ``<!-- sweep-bench:end -->`` with the
machine's load average before and after each configuration.

    python benchmarks/sweep_bench.py --write docs/performance.md
    python benchmarks/sweep_bench.py --runs 2000        # quicker, 2,000 runs
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- sweep-bench:begin -->", "<!-- sweep-bench:end -->"


def sweep(runs: int, out: Path, extra: list[str]) -> dict:
    seeds = max(1, runs // 200)
    argv = [
        sys.executable, "-m", "qoslab.cli", "sweep", str(ROOT / "scenarios" / "example.toml"),
        "--grid", "policy.bottleneck.egress.police.bc=8kb:1mb:50:log",
        "--grid", "traffic[0].flows=1,2,3,4",
        "--seeds", str(seeds), "--out", str(out), "--json", *extra,
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10_000, help="runs per configuration (x200)")
    ap.add_argument("--write", metavar="FILE", help="put the table into FILE between markers")
    ap.add_argument("--no-dask", action="store_true", help="skip the LocalCluster row")
    args = ap.parse_args()
    configs = [
        ("local processes", 1, ["--workers", "1", "--executor", "processes"]),
        ("local processes", 2, ["--workers", "2", "--executor", "processes"]),
        ("local threads", 1, ["--workers", "1", "--executor", "threads"]),
        ("local threads", 2, ["--workers", "2", "--executor", "threads"]),
    ]
    if not args.no_dask:
        configs.append(("Dask LocalCluster", 2, ["--dask", "local", "--workers", "2"]))
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="sweep-bench-"))
    try:
        for name, workers, extra in configs:
            load0 = os.getloadavg()[0]
            s = sweep(args.runs, tmp / f"{name.replace(' ', '-')}-{workers}", extra)
            load1 = os.getloadavg()[0]
            rows.append((name, workers, s, load0, load1))
            print(
                f"{name:<18} {workers}  {s['ran']:>6} runs  {s['runs_per_s']:>8.1f} runs/s  "
                f"(wall {s['wall_s']:.1f} s, cluster start {s['cluster_ready_s']:.1f} s, "
                f"load {load0:.1f} -> {load1:.1f})",
                flush=True,
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    one = {n: s["runs_per_s"] for n, w, s, _, _ in rows if w == 1}
    lines = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on "
        f"{platform.machine()} with {os.cpu_count()} cores, shared with other jobs "
        "(the load average before -> after each row is given: above 2 means the row had less "
        "than its cores). Command: `python benchmarks/sweep_bench.py --write docs/performance.md`.",
        "",
        "| executor | workers | runs | runs/s | scaling efficiency | cluster start | load avg |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, w, s, l0, l1 in rows:
        base = one.get(name) or one.get("local processes")
        eff = f"{s['runs_per_s'] / (w * base) * 100:.0f} %" if base and w > 1 else "-"
        start = f"{s['cluster_ready_s']:.1f} s" if s["cluster_ready_s"] else "-"
        lines.append(
            f"| {name} | {w} | {s['ran']} | {s['runs_per_s']:.0f} | {eff} | {start} | "
            f"{l0:.1f} -> {l1:.1f} |"
        )
    table = "\n".join(lines)
    print(table)
    if args.write:
        path = Path(args.write)
        text = path.read_text(encoding="utf-8")
        block = f"{BEGIN}\n{table}\n{END}"
        if BEGIN in text:
            text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), block, text, flags=re.S)
        else:
            text = text.rstrip("\n") + "\n\n" + block + "\n"
        tmpf = path.with_name(f".{path.name}.tmp")
        tmpf.write_text(text, encoding="utf-8")
        os.replace(tmpf, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
