"""Small simulation results shared by the plot, report and compare tests."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import qoslab

ROOT = Path(__file__).resolve().parents[1]
ALL_SERIES = '["goodput", "rtt", "cwnd", "queue", "tokens", "colors", "ping", "segments"]'


def scenario(policy: str, series: str = ALL_SERIES, duration: str = "2s") -> str:
    """Two Linux flows and a ping through a 10 Mbit/s policer or shaper."""
    return f"""
[scenario]
name = "viz-{policy.split()[0]}"
duration = "{duration}"
seed = 1
[topology]
senders = 2
receivers = 1
access = {{ rate = "1gbit", delay = "1ms" }}
bottleneck = {{ rate = "100mbit", delay = "0.5ms" }}
[policy.bottleneck.egress]
{policy}
[[traffic]]
kind = "tcp-bulk"
flows = 2
profile = "linux"
[[traffic]]
kind = "ping"
interval = "100ms"
[record]
interval = "100ms"
series = {series}
"""


POLICE = 'police = { cir = "10mbit" }'
SHAPE = 'shape = { kind = "shape", cir = "10mbit", queue_limit = 100, profile = "ios-xe" }'


@cache
def police() -> qoslab.SimulationResult:
    return qoslab.simulate(scenario(POLICE))


@cache
def shape() -> qoslab.SimulationResult:
    return qoslab.simulate(scenario(SHAPE))


@cache
def goodput_only() -> qoslab.SimulationResult:
    return qoslab.simulate(scenario(POLICE, '["goodput"]', "1s"))
