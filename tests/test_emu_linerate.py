"""The latency and delay-line tables of benchmarks/emu_linerate.py, rendered from
made-up samples (no emulation): one row per forwarder form, the one-way error taken
against the same form's idle median, no wake-up columns for a form that never slept."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import emu_linerate as bench  # noqa: E402


def _args(threads: int = 0) -> argparse.Namespace:
    return argparse.Namespace(threads=threads, duration=6.0, runs=1, label="test", max_steal=0.05)


def _case(key: str, *samples: bench.Sample) -> bench.Case:
    return bench.Case(key, list(samples))


def _row(text: str, start: str) -> list[str]:
    (line,) = [ln for ln in text.splitlines() if ln.startswith(start)]
    return [c.strip() for c in line.strip("|").split("|")]


def test_latency_and_delay_rows_per_form() -> None:
    idle_us = {"userspace": 150, "threads1": 120, "busy-poll": 80, "busy-poll-rt": 78}
    cases = {
        "latency/kernel-forwarding": _case("k", bench.Sample(ping_ns=[60_000] * 100)),
    }
    for key, us in idle_us.items():
        cases[f"latency/{key}"] = _case(key, bench.Sample(ping_ns=[us * 1000] * 100))
        slept = not key.startswith("busy")
        cases[f"delay/{key}"] = _case(
            key,
            bench.Sample(
                # every ping 8 ms + the idle RTT + 2 x 10 µs: one-way error 10 µs
                ping_ns=[bench.DELAY_NS * 2 + us * 1000 + 20_000] * 100,
                lateness_p99_ns=30_000,
                wake_count=50 if slept else 0,
                wake_p99_ns=90_000 if slept else 0,
                handed_p99_ns=25_000,
                sent_p99_ns=35_000,
                wait_s=0.006,
                user_s=0.6,
                sys_s=0.3,
                # at the veths: 15 µs after the delay and the modelled serialisation
                veth_one_way_ns=[bench.DELAY_NS + bench.PING_SERIALISATION_NS + 15_000] * 40,
                # of which 11 µs modelled queueing, 4 µs late against the model (1 read
                # late, 3 released late)
                late_vs_model_ns=[4_000] * 40,
                read_late_ns=[1_000] * 40,
                released_late_ns=[3_000] * 40,
                modelled_queue_ns=[11_000] * 40,
            ),
        )
    text = bench.render(cases, _args(), 1.0)
    assert _row(text, "| qoslab emulate, idle, threads=1 (default)")[1:5] == [
        "120.0",
        "120.0",
        "60.0",
        "60.0",
    ]
    assert _row(text, "| qoslab emulate, idle, threads=1, --busy-poll |")[3] == "20.0"
    one = _row(text, "| threads=1 (default) |")
    assert one[1:17] == [
        "10.0", "10.0", "15.0", "15.0", "40", "4.0", "4.0", "1.0", "3.0", "11.0",
        "30.0", "90.0", "25.0", "35.0", "1.0", "15 %",
    ]  # fmt: skip
    busy = _row(text, "| threads=1, --busy-poll |")
    assert busy[1:3] == ["10.0", "10.0"] and busy[12:15] == ["—", "25.0", "35.0"]


def test_one_thread_main_rows_have_no_duplicate_form() -> None:
    cases = {
        "latency/kernel-forwarding": _case("k", bench.Sample(ping_ns=[60_000] * 10)),
        "latency/userspace": _case("u", bench.Sample(ping_ns=[100_000] * 10)),
        "delay/userspace": _case("d", bench.Sample(ping_ns=[8_100_000] * 10)),
    }
    text = bench.render(cases, _args(threads=1), 1.0)
    assert "threads=1 (default)" not in text
    assert _row(text, "| threads=1 |")[1] == "0.0"


def test_floor_quantiles_count_overflows_as_the_max() -> None:
    # 98 wake-ups at 30 µs, one at 90, one past the histogram (the max, 5000 µs)
    f = bench.Floor(hist={30: 98, 90: 1}, overflows=1, max_us=5000)
    assert f.quantile(0.5) == 30
    assert f.quantile(0.99) == 90
    assert f.quantile(1.0) == 5000
    assert bench.Floor().quantile(0.5) != bench.Floor().quantile(0.5)  # empty: NaN


def test_spin_late_share_weights_each_stretch_by_its_excess() -> None:
    # 1 s: 250 ticks of 60 µs (40 µs over the target each) and short gaps that do not count
    s = bench.Spin(hist={1: 1_000_000, 20: 500, 60: 250}, seconds=1.0, max_us=60)
    assert s.over() == 250
    assert abs(s.late_share() - 250 * 40 / 1e6) < 1e-12
    assert s.late_share(100) == 0.0


def test_floor_table_has_both_probes_per_load() -> None:
    floors = {
        "idle (no emulation)": (
            [bench.Floor(hist={30: 98, 200: 2}, max_us=200)],
            [bench.Spin(hist={50: 300}, seconds=1.0, max_us=50)],
        )
    }
    args = argparse.Namespace(runs=1, duration=6.0, label="test")
    text = bench.render_floor(floors, args)
    rows = [ln for ln in text.splitlines() if ln.startswith("| idle")]
    assert len(rows) == 2
    assert _row(text.split("A thread that never")[0], "| idle")[1:3] == ["30", "200"]
    assert _row(text.split("A thread that never")[1], "| idle")[1:3] == ["300", "0.90 %"]
