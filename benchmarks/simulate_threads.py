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
import threading
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


def _count_while(stop: threading.Event, out: list[int]) -> None:
    n = 0
    while not stop.is_set():
        n += 1
    out.append(n)


def _python_busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1


def gil_probe(scenario: str, seconds: float = 1.0) -> dict[str, float]:
    """Python loop iterations/s in a second thread while the main thread
    sleeps (GIL free, no CPU used), runs pure Python (GIL held but handed
    over every switch interval), or runs ``simulate`` back to back. A
    simulator releasing the GIL lets the loop run faster than under pure
    Python; one holding it, slower (the GIL is then not handed over at all
    while Rust runs)."""

    def rate(work: str) -> float:
        stop, out = threading.Event(), []
        t = threading.Thread(target=_count_while, args=(stop, out))
        t0 = time.perf_counter()
        t.start()
        if work == "sleep":
            time.sleep(seconds)
        elif work == "python":
            _python_busy(seconds)
        else:
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                qoslab.simulate(scenario)
        stop.set()
        t.join()
        return out[0] / (time.perf_counter() - t0)

    return {w: rate(w) for w in ("sleep", "python", "simulate")}


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
    r = gil_probe(args.scenario)
    print("GIL probe: iterations/s of a Python loop in a second thread while the main thread")
    for w, what in (("sleep", "sleeps"), ("python", "runs Python"), ("simulate", "simulates")):
        print(f"  {what:12} {r[w]:14,.0f}  ({r[w] / r['sleep']:.0%} of sleeping)")


if __name__ == "__main__":
    main()
