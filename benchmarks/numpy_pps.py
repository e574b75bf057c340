"""Packets per second of the NumPy path: ``qoslab.color`` on in-memory arrays.

Run: ``python benchmarks/numpy_pps.py`` (after ``bash scripts/setup.sh``). Prints one
line per meter kind: the best of three runs over 20 M packets, including the
argument conversion and the output allocation that a user pays.
"""

from __future__ import annotations

import time

import numpy as np
import qoslab

METERS: dict[str, dict[str, str]] = {
    "police": {"cir": "100mbit"},
    "srtcm": {"cir": "100mbit", "cbs": "30000", "ebs": "60000"},
    "trtcm": {"cir": "100mbit", "cbs": "30000", "pir": "150mbit", "pbs": "60000"},
    "mef": {"cir": "100mbit", "cbs": "30000", "eir": "50mbit", "ebs": "60000"},
}


def make_trace(n: int, seed: int = 42) -> tuple[np.ndarray, np.ndarray]:
    """About 1.5 x 100 Mbit/s offered load, sizes 64..1500 bytes."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(64, 1501, n, dtype=np.uint32)
    gaps = rng.integers(0, 2 * sizes.astype(np.uint64) * 80 * 2 // 3 + 1, dtype=np.uint64)
    return np.cumsum(gaps, dtype=np.uint64), sizes


def main() -> None:
    n = 20_000_000
    times, sizes = make_trace(n)
    kinds = set(qoslab.meter_kinds())
    print(f"{'kind':<10} {'Mpkt/s':>8}  (NumPy path, {n:,} packets, best of 3)")
    for kind, params in METERS.items():
        if kind not in kinds:
            print(f"{kind:<10} {'-':>8}  not registered")
            continue
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            colors = qoslab.color(kind, times, sizes, **params)
            best = min(best, time.perf_counter() - start)
        green = float(np.mean(colors == 0))
        print(f"{kind:<10} {n / best / 1e6:>8.1f}  {green:.0%} green")


if __name__ == "__main__":
    main()
