"""Writes examples/trace.csv, the built-in example trace (deterministic: seed 2697).

A TCP-like sender behind a 100 Mbit/s access link: transfers of 15-150 kB separated
by idle gaps of 100-400 ms. Each transfer is in slow start: every round trip
(20 ms +- 2 ms) it sends a window of back-to-back segments at the access rate,
and the window doubles from 2 segments (RFC 5681 slow start without loss). Full
segments are 1500 B, the last one of a transfer is smaller; small packets
(64-200 B: pure ACKs of a reverse flow, DNS) are sprinkled in between.

Columns: time_ns, size_bytes, flow (1 = the bulk sender, 2 = small packets).
Run from the repository root: python examples/make_trace.py
"""

from __future__ import annotations

import random
from pathlib import Path

ACCESS_BPS = 100_000_000
SEED = 2697
MSS_FRAME = 1500


def tx_ns(size: int) -> int:
    """Serialisation time of `size` bytes at the access rate, in ns."""
    return size * 8 * 1_000_000_000 // ACCESS_BPS


def make(transfers: int = 40) -> list[tuple[int, int, int]]:
    rng = random.Random(SEED)
    pkts: list[tuple[int, int, int]] = []
    t = 1_000_000  # first packet at 1 ms
    for _ in range(transfers):
        remaining = rng.randint(15_000, 150_000)
        cwnd = 2
        while remaining > 0:
            start = t
            for _ in range(cwnd):
                if remaining <= 0:
                    break
                size = min(MSS_FRAME, remaining + 52)  # 52 B of headers
                remaining -= size - 52
                pkts.append((t, size, 1))
                t += tx_ns(size)
                if rng.random() < 0.08:
                    small = rng.choice((64, 64, 64, 90, 128, 200))
                    pkts.append((t, small, 2))
                    t += tx_ns(small)
            cwnd *= 2
            t = max(t, start + 20_000_000 + rng.randint(-2_000_000, 2_000_000))
        t += rng.randint(100_000_000, 400_000_000)
    return pkts


def main() -> None:
    out = Path(__file__).resolve().parent / "trace.csv"
    lines = ["time_ns,size_bytes,flow"] + [f"{t},{s},{f}" for t, s, f in make()]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out} ({len(lines) - 1} packets)")


if __name__ == "__main__":
    main()
