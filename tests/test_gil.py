"""Runs in threads run in parallel (issue 14): ``qoslab.simulate`` releases
the GIL while the simulator runs, so Python code in another thread keeps
running meanwhile. (The speed-up itself is measured by
benchmarks/simulate_threads.py; a timing ratio is no test on a shared
machine, but a thread that never gets the GIL for a whole run is.)"""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path

import qoslab

ROOT = Path(__file__).resolve().parent.parent


def test_python_runs_while_a_simulation_runs_in_another_thread() -> None:
    # About 1.4 s of simulation here: 150 s of two CUBIC flows at 80 Mbit/s
    # (30 s took 0.17 s on a quiet machine after the engine's sixth round).
    text = (ROOT / "scenarios" / "example.toml").read_text(encoding="utf-8")
    text = text.replace('duration = "2s"', 'duration = "150s"').replace(
        'cir = "10mbit"', 'cir = "80mbit"'
    )
    done = threading.Event()
    result: list[qoslab.SimulationResult] = []

    def work() -> None:
        result.append(qoslab.simulate(text))
        done.set()

    worker = threading.Thread(target=work)
    start = time.perf_counter()
    worker.start()
    stamps = [start]
    while not done.is_set():
        stamps.append(time.perf_counter())
    worker.join()
    elapsed = time.perf_counter() - start
    assert result and result[0].summary["duration_s"] == 150.0
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    # Holding the GIL in the simulator would stop this loop for the whole run
    # (one gap of ~elapsed); released, the loop only waits for the short
    # Python parts (parsing, building the result) and the OS scheduler.
    assert elapsed > 0.2, f"the run took {elapsed:.3f} s: too short to tell"
    assert max(gaps) < 0.4 * elapsed, (max(gaps), elapsed)
