"""Closing the loop (issue 11): the policing detector's rate and bucket extensions
against the configured policer, on

* the USC-NSL lab captures shipped in tests/data/usc-nsl-policing (real Linux
  senders through a policer; configuration in each file name, PCIR / PBC), and
* captures of simulated runs (``qoslab run --capture r1->r2``) of one CUBIC flow
  through qoslab's policer at several rates, buckets and RTTs, and a tbf shaper.

For each transfer's first segment (the one that starts with a full bucket) the
detector calls policed, it prints the configured rate and bucket, the rate in
wire bytes, the bucket estimate (passes before the first loss, token-bucket
recursion) and the rate line's intercept at the first packet (the earlier
estimate). Markdown on stdout:

    python validation/bucket_estimate.py > /tmp/bucket.md
"""

from __future__ import annotations

import re
import statistics
import tempfile
from pathlib import Path

from qoslab import _core
from qoslab.cli import main as cli

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "tests" / "data" / "usc-nsl-policing"

SIM = """
[scenario]
duration = "20s"
seed = 1
[topology]
senders = 1
receivers = 1
access = {{ rate = "10gbit", delay = "{delay_ms}ms" }}
bottleneck = {{ rate = "10gbit", delay = "2ms" }}
[policy.bottleneck.egress]
{policy}
[[traffic]]
kind = "tcp-bulk"
profile = "linux"
header_bytes = 66
"""

#: (rate bit/s, bucket B, access delay ms: RTT = 4·delay + 8 ms)
SIM_POLICERS = [
    (1_500_000, 100_000, 24),
    (1_500_000, 100_000, 12),
    (1_500_000, 1_000_000, 24),
    (5_000_000, 50_000, 8),
    (10_000_000, 200_000, 18),
    (10_000_000, 20_000, 4),
]


def first_policed(rows: list[dict]) -> dict | None:
    """The data direction's first segment, if the detector calls it policed."""
    cand = [r for r in rows if r["segment"] == 0 and r["all_losses"]["policed"]]
    return max(cand, key=lambda r: r["data_packets"]) if cand else None


def lab_rows() -> list[tuple[str, int, int, dict | None]]:
    out = []
    for f in sorted(LAB.glob("*.pcap.xz")):
        m = re.search(r"PCIR=(\d+)-PBC=(\d+)", f.name)
        if not m:
            continue
        port = re.search(r"-CP1?=(\d+)", f.name)
        rows = list(_core.policing_capture(f.read_bytes(), int(port.group(1)) if port else None))
        out.append((f.name, int(m.group(1)), int(m.group(2)), first_policed(rows)))
    return out


def sim_row(policy: str, delay_ms: int) -> dict | None:
    with tempfile.TemporaryDirectory() as d:
        sc, pcap = Path(d) / "s.toml", Path(d) / "c.pcap"
        sc.write_text(SIM.format(policy=policy, delay_ms=delay_ms))
        rc = cli(["run", str(sc), "--quiet", "--capture", f"r1->r2={pcap}"])
        assert rc == 0, rc
        return first_policed(list(_core.policing_capture(pcap.read_bytes(), None)))


def pct(x: float, ref: float) -> str:
    return f"{100 * (x / ref - 1):+.1f} %"


def spread(xs: list[float], ref: float) -> str:
    """Median (its error against ``ref``; range), in kB."""
    m = statistics.median(xs)
    return f"{m / 1e3:.1f} kB ({pct(m, ref)}; {min(xs) / 1e3:.0f} to {max(xs) / 1e3:.0f})"


def main() -> None:
    print("### USC-NSL lab captures (first segment of each transfer, rows called policed)\n")
    print("| policer rate, bucket | captures | wire rate (median) | bucket, passes before "
          "the first loss (median; range) | rate line's intercept (median; range) |")  # fmt: skip
    print("|---|---|---|---|---|")
    groups: dict[tuple[int, int], list[dict]] = {}
    for _, rate, bucket, row in lab_rows():
        if row is not None:
            groups.setdefault((rate, bucket), []).append(row)
    for (rate, bucket), rows in sorted(groups.items()):
        w = statistics.median(r["extension"]["wire_rate_bps"] for r in rows)
        b = [r["extension"]["bucket_bytes"] for r in rows]
        i = [r["extension"]["intercept_bytes"] for r in rows]
        print(
            f"| {rate / 1e6:g} Mbit/s, {bucket / 1e3:g} kB | {len(rows)} "
            f"| {w / 1e6:.3f} Mbit/s ({pct(w, rate)}) | {spread(b, bucket)} | {spread(i, bucket)} |"
        )
    print("\n### Simulated runs (1 CUBIC flow, 20 s, captured at r1->r2)\n")
    print("| policer | RTT | verdict | wire rate | bucket (passes before the first loss) "
          "| rate line's intercept |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for rate, bucket, delay in SIM_POLICERS:
        row = sim_row(f'police = {{ cir = "{rate}", bc = "{bucket}B" }}', delay)
        rtt = 4 * delay + 8
        name = f"{rate / 1e6:g} Mbit/s, {bucket / 1e3:g} kB"
        if row is None:
            print(f"| {name} | {rtt} ms | not policed | | | |")
            continue
        e = row["extension"]
        print(
            f"| {name} | {rtt} ms | policed | {e['wire_rate_bps'] / 1e6:.3f} Mbit/s "
            f"({pct(e['wire_rate_bps'], rate)}) | {e['bucket_bytes'] / 1e3:.1f} kB "
            f"({pct(e['bucket_bytes'], bucket)}) | {e['intercept_bytes'] / 1e3:.1f} kB "
            f"({pct(e['intercept_bytes'], bucket)}) |"
        )  # fmt: skip
    row = sim_row(
        'shape = { kind = "tbf", rate = "1500kbit", burst = "10kb", latency = "50ms" }', 24
    )
    print(f"| tbf 1.5 Mbit/s, 10 kB burst, 50 ms | 104 ms | "
          f"{'policed (wrong)' if row else 'not policed'} | | | |")  # fmt: skip


if __name__ == "__main__":
    main()
