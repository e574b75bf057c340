"""Writes examples/two-flows.csv: two constant-rate UDP flows for 2 s, each
at twice its class rate in examples/htb-two-classes.toml (deterministic).

Flow 1: 8 Mbit/s to port 5001 (class 10, 4 Mbit/s); flow 2: 12 Mbit/s to
port 5002 (the default class 20, 6 Mbit/s). 1500-byte packets, evenly spaced.

Columns: time_ns, size_bytes, flow, dst_port, proto.
Run from the repository root: python examples/make_two_flows.py
"""

from __future__ import annotations

from pathlib import Path

SECONDS = 2
SIZE = 1500
FLOWS = ((1, 8_000_000, 5001), (2, 12_000_000, 5002))


def make() -> list[tuple[int, int, int, int]]:
    pkts: list[tuple[int, int, int, int]] = []
    for flow, rate_bps, port in FLOWS:
        gap = SIZE * 8 * 1_000_000_000 // rate_bps
        t = flow * 1000  # the flows do not start on the same ns
        while t < SECONDS * 1_000_000_000:
            pkts.append((t, SIZE, flow, port))
            t += gap
    return sorted(pkts)


def main() -> None:
    out = Path(__file__).resolve().parent / "two-flows.csv"
    lines = ["time_ns,size_bytes,flow,dst_port,proto"]
    lines += [f"{t},{s},{f},{p},udp" for t, s, f, p in make()]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out} ({len(lines) - 1} packets)")


if __name__ == "__main__":
    main()
