"""Do `qoslab.simulate` calls in threads run in parallel (GIL released)?

Runs the same scenario N times one after another, then the same N runs in a
pool of T threads, and reports wall time, process CPU time and the speed-up.
With the GIL released during the simulation, T threads on T free cores give a
speed-up near T, and CPU time / wall time (cores busy) near T; if the GIL were
held, the speed-up would stay near 1. The part of each run that builds the
Python result (NumPy arrays, dicts) holds the GIL, so the speed-up also shows
how much of a run that is.

    python benchmarks/simulate_threads.py                       # defaults
    python benchmarks/simulate_threads.py --scenario scenarios/packetlife-police.toml \
        --runs 8 --threads 2

Timings depend on the machine's load: say so when quoting them.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import qoslab

ROOT = Path(__file__).resolve().parent.parent


def run_batch(scenario: str, seeds: list[int], threads: int) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of running every seed."""
    w0, c0 = time.perf_counter(), time.process_time()
    if threads == 1:
        for s in seeds:
            qoslab.simulate(scenario, seed=s)
    else:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            list(pool.map(lambda s: qoslab.simulate(scenario, seed=s), seeds))
    return time.perf_counter() - w0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default=str(ROOT / "scenarios" / "packetlife-police.toml"))
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=2, help="best of this many batches")
    args = ap.parse_args()
    seeds = list(range(1, args.runs + 1))
    qoslab.simulate(args.scenario, seed=1)  # warm-up (imports, page cache)
    load = os.getloadavg()[0]
    rows = []
    for threads in (1, args.threads):
        best = min(
            (run_batch(args.scenario, seeds, threads) for _ in range(args.repeat)),
            key=lambda x: x[0],
        )
        rows.append((threads, *best))
    base = rows[0][1]
    print(f"scenario {args.scenario}, {args.runs} runs, {os.cpu_count()} CPUs, load {load:.1f}")
    print("| threads | wall s | CPU s | cores busy (CPU/wall) | speed-up |")
    print("|---|---|---|---|---|")
    for threads, wall, cpu in rows:
        print(f"| {threads} | {wall:.2f} | {cpu:.2f} | {cpu / wall:.2f} | {base / wall:.2f} |")


if __name__ == "__main__":
    main()
