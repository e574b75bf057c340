#!/usr/bin/env python3
"""Simulated vs real TCP through Linux TBF: writes docs/validation.md.

Reads the real measurements of ``validation/real_tbf.py``
(``validation/real_tbf_results.json``), runs the same cases in qoslab's simulator
(``qoslab.simulate``) with a scenario that mirrors the real set-up, stores the
simulated figures in ``validation/compare_tbf_sim.json`` and renders the comparison
as ``docs/validation.md``. Needs no root and no network: only the JSON file and the
qoslab package. When the simulator is not available it still writes the document,
with the simulated column marked pending.

How the scenario mirrors the namespaces:

- dumbbell s0 -> r1 -> r2 -> d0, every flow from s0 to d0 (iperf3 -P from one
  host); the tbf is r1's egress toward r2, with the case's own rate, burst and
  limit/latency strings, exactly as given to tc;
- veth has no serialisation rate, so every link is 10 Gbit/s (1.2 us per frame,
  far below the tbf's 121-1211 us per frame); the one-way delay is half the idle
  ping RTT measured in that case's namespaces, split equally over the three links;
- TCP: the ``linux`` profile (CUBIC, SACK, IW10, MSS 1448, timestamps) with the
  case's congestion control, and ``header_bytes = 66``: IP 20 + TCP 20 +
  timestamps 12 + Ethernet 14, because tbf charges ``qdisc_pkt_len`` = skb->len at
  the veth's egress, which includes the Ethernet header (1514-byte frames);
- ping every 100 ms with a 70-byte payload, so its frame is the real ping's 98
  bytes (56 + ICMP 8 + IP 20 + Ethernet 14).

Run (after ``scripts/setup.sh``): ``.venv/bin/python validation/compare_tbf.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
REAL_JSON = HERE / "real_tbf_results.json"
SIM_JSON = HERE / "compare_tbf_sim.json"
DOC = ROOT / "docs" / "validation.md"

LINK_RATE = "10gbit"
HEADER_BYTES = 66  # IP 20 + TCP 20 + TS 12 + Ethernet 14 -> 1514-byte frames
PING_PAYLOAD = 70  # + 28 = 98 bytes on the wire, as the real ping's 84 + 14
PAYLOAD_PER_FRAME = 1448 / 1514
WARMUP_S = 2.0  # ping samples before this are slow start, left out of "under load"


# -- the simulated side ---------------------------------------------------------


def scenario_toml(case: dict[str, Any], duration_s: int, idle_rtt_ms: float) -> str:
    """The scenario that mirrors one real case (see the module doc)."""
    one_way_ns = round(idle_rtt_ms * 1e6 / 2)
    hop_ns = max(1, one_way_ns // 3)
    shape = {"kind": "tbf", "rate": case["rate"], "burst": case["burst"]}
    if case.get("limit") is not None:
        shape["limit"] = case["limit"]
    if case.get("latency") is not None:
        shape["latency"] = case["latency"]
    shape_toml = ", ".join(f'{k} = "{v}"' for k, v in shape.items())
    return f"""\
[scenario]
name = "{case["name"]}"
duration = "{duration_s}s"
seed = 1
description = "mirror of validation/real_tbf.py case {case["name"]}"

[topology]
senders = 1
receivers = 1
access = {{ rate = "{LINK_RATE}", delay = "{hop_ns}ns" }}
bottleneck = {{ rate = "{LINK_RATE}", delay = "{hop_ns}ns" }}

[policy.bottleneck.egress]
shape = {{ {shape_toml} }}

[[traffic]]
kind = "tcp-bulk"
flows = {case["flows"]}
profile = "linux"
cc = "{case["cc"]}"
header_bytes = {HEADER_BYTES}

[[traffic]]
kind = "ping"
interval = "100ms"
size = {PING_PAYLOAD}

[record]
interval = "1s"
series = ["goodput", "ping"]
"""


def simulate(toml_text: str, rate: str) -> dict[str, Any]:
    """Run one scenario with ``qoslab.simulate`` and return its figures."""
    import qoslab  # optional: the page renders without it

    res = qoslab.simulate(toml_text)
    return sim_figures(res.raw, rate)


def sim_figures(raw: dict[str, Any], rate: str) -> dict[str, Any]:
    """The comparison's figures from a ``SimulationResult.raw`` dict."""
    tcp = [f for f in raw["flows"] if f["protocol"] == "tcp"]
    pings = [f for f in raw["flows"] if f["protocol"] == "ping"]
    goodputs = [float(f["goodput_bps"]) for f in tcp]
    rtt_means = [float(f["rtt"]["mean_ns"]) / 1e6 for f in tcp if f["rtt"]["samples"]]
    tbf = next((p for p in raw["policies"] if p["kind"] in ("tbf", "shape")), None)
    ping_ids = {int(f["id"]) for f in pings}
    col = raw["series"]["ping"]
    ping_ms = [
        int(r) / 1e6
        for t, fl, r in zip(col["time_ns"], col["flow"], col["rtt_ns"], strict=True)
        if int(fl) in ping_ids and int(t) >= WARMUP_S * 1e9
    ]
    sent = sum(int(f["packets_sent"]) for f in pings)
    return {
        "sum_goodput_bps": sum(goodputs),
        "of_ceiling": sum(goodputs) / ceiling_bps(rate),
        "flow_goodput_bps": goodputs,
        "jain": jain(goodputs),
        "min_max": min(goodputs) / max(goodputs) if goodputs and max(goodputs) else None,
        "retransmits": sum(int(f["retransmits"]) for f in tcp),
        "timeouts": sum(int(f["timeouts"]) for f in tcp),
        "fast_recoveries": sum(int(f["fast_recoveries"]) for f in tcp),
        "tcp_rtt_ms": statistics.fmean(rtt_means) if rtt_means else None,
        "ping_load_ms": statistics.median(ping_ms) if ping_ms else None,
        "ping_loss": sum(int(f["packets_lost"]) for f in pings) / sent if sent else None,
        "tbf_drops": int(tbf["packets_dropped"]) if tbf is not None else None,
        "tbf_max_queue_bytes": int(tbf["max_queue_bytes"]) if tbf is not None else None,
        "tbf_describe": [list(kv) for kv in tbf["describe"]] if tbf is not None else [],
        "events": int(raw["events"]),
    }


RENO_CASE = "tbf20-b20k-4reno"
RENO_VARIANTS = (
    # label, (old, new) replacements in the compared scenario
    ("as compared (4 flows, SACK recovery)", ()),
    ('4 flows, recovery = "newreno"', (('cc = "reno"', 'cc = "reno"\nrecovery = "newreno"'),)),
    ("2 flows", (("flows = 4", "flows = 2"),)),
    ("1 flow", (("flows = 4", "flows = 1"),)),
)


def reno_diagnostics(toml_text: str, rate: str) -> list[dict[str, Any]]:
    """The Reno case again with recovery and flow count varied, to locate the gap."""
    out = []
    for label, edits in RENO_VARIANTS:
        text = toml_text
        for old, new in edits:
            text = text.replace(old, new)
        row = {"variant": label}
        try:
            row.update(simulate(text, rate))
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"
        out.append(row)
    return out


# -- the real side --------------------------------------------------------------


def jain(xs: list[float]) -> float | None:
    if not xs or sum(xs) == 0:
        return None
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def real_figures(run: dict[str, Any]) -> dict[str, Any]:
    ip = run["iperf3"]
    goodputs = [f["goodput_bps"] for f in ip["flows"]]
    return {
        "sum_goodput_bps": ip["sum_goodput_bps"],
        "flow_goodput_bps": goodputs,
        "jain": jain(goodputs),
        "min_max": min(goodputs) / max(goodputs),
        "retransmits": ip["sum_retransmits"],
        "tcp_rtt_ms": ip["mean_snd_rtt_us"] / 1e3,
        "ping_load_ms": run["rtt_under_load_ms"]["median"],
        "tbf_drops": run["qdisc_after"]["drops"],
        "ping_idle_ms": run["rtt_idle_ms"]["median"],
        # Linux MIB counters of the client namespace (absent in older result files).
        "timeouts": run.get("client_tcp_counters", {}).get("TCPTimeouts"),
        "fast_recoveries": _sum_or_none(
            run.get("client_tcp_counters", {}), ("TCPSackRecovery", "TCPRenoRecovery")
        ),
        "of_ceiling": ip["sum_goodput_bps"] / ceiling_bps(run["case"]["rate"]),
        "ping_loss": ping_loss(run["ping_under_load"]),
    }


def _sum_or_none(d: dict[str, int], keys: tuple[str, ...]) -> int | None:
    vals = [d[k] for k in keys if k in d]
    return sum(vals) if vals else None


def ping_loss(p: dict[str, Any]) -> float | None:
    if not p.get("transmitted"):
        return None
    return 1 - p["received"] / p["transmitted"]


def ceiling_bps(rate: str) -> float:
    """Most payload a bulk TCP flow can get through tbf at this rate: the payload
    share of a 1514-byte frame (tbf charges whole frames)."""
    return parse_rate(rate) * PAYLOAD_PER_FRAME


def by_case(real: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for run in real["results"]:
        out.setdefault(run["case"]["name"], []).append(run)
    return out


# -- the document ---------------------------------------------------------------

METRICS = (
    # key, heading, format, scale
    ("sum_goodput_bps", "sum goodput (Mbit/s)", "{:.2f}", 1e-6),
    ("of_ceiling", "goodput / ceiling (%)", "{:.2f}", 100.0),
    ("jain", "Jain", "{:.3f}", 1.0),
    ("min_max", "min/max flow", "{:.2f}", 1.0),
    ("retransmits", "retransmits", "{:.0f}", 1.0),
    ("timeouts", "RTOs", "{:.0f}", 1.0),
    ("fast_recoveries", "recovery episodes", "{:.0f}", 1.0),
    ("tbf_drops", "tbf drops", "{:.0f}", 1.0),
    ("tcp_rtt_ms", "TCP srtt (ms)", "{:.1f}", 1.0),
    ("ping_load_ms", "ping under load (ms)", "{:.1f}", 1.0),
    ("ping_loss", "ping loss (%)", "{:.1f}", 100.0),
)


def fmt_range(vals: list[float], f: str, scale: float) -> str:
    vals = [v * scale for v in vals if v is not None]
    if not vals:
        return "-"
    mean = statistics.fmean(vals)
    if len(vals) == 1 or f.format(min(vals)) == f.format(max(vals)):
        return f.format(mean)
    return f"{f.format(mean)} ({f.format(min(vals))}-{f.format(max(vals))})"


def rel(sim: float | None, real: list[float]) -> str:
    real = [v for v in real if v is not None]
    if sim is None or not real:
        return "-"
    m = statistics.fmean(real)
    if m == 0:
        return "-" if sim == 0 else "n/a (real 0)"
    d = (sim - m) / m * 100
    return f"{d:+.1f} %" if abs(d) < 10 else f"{d:+.0f} %"


def render(real: dict[str, Any], sim: dict[str, Any] | None, sim_note: str) -> str:
    env = real["environment"]
    cases = by_case(real)
    n_runs = max(len(v) for v in cases.values())
    dur = real["results"][0]["duration_s"]
    lines: list[str] = []
    w = lines.append
    w("# Validation: simulated vs real TCP through Linux TBF")
    w("")
    w("Issue 3's real-TCP check. Real Linux TCP (iperf3, CUBIC and Reno) crosses a real")
    w("`tc qdisc ... tbf` on a router namespace; the simulator runs the same cases with a")
    w("scenario that mirrors that set-up. Both scripts live in `validation/`:")
    w("")
    w("| step | command | needs | writes |")
    w("|---|---|---|---|")
    w(
        "| real | `sudo python3 validation/real_tbf.py --repeat 2` | root, iperf3, iproute2, "
        "ethtool, ping (`apt-get install -y iperf3 iproute2 ethtool iputils-ping`) | "
        "`validation/real_tbf_results.json` |"
    )
    w(
        "| simulated + this page | `.venv/bin/python validation/compare_tbf.py` | "
        "the qoslab package (`scripts/setup.sh`) | `validation/compare_tbf_sim.json`, "
        "`docs/validation.md` |"
    )
    w("")
    if sim is None:
        w(f"> **Simulated column pending.** {sim_note}")
        w("")
    w("## Set-up")
    w("")
    w("```")
    w("client (10.201.1.1) --veth-- router --veth-- server (10.201.2.1)")
    w("                                     ^ tc qdisc add dev r1 root tbf rate R burst B limit L")
    w("```")
    w("")
    w(
        f"Kernel {env['kernel']} ({env['cpus']} CPUs, shared with other work: load average "
        f"{' '.join(env['loadavg'])} before, {' '.join(env.get('loadavg_after', ['?']))} "
        f"after), {env['tc']}, {env['iperf3']}. Three fresh namespaces per run, TSO/GSO/GRO "
        "off on every veth (`ethtool -K`), so TCP sends 1448-byte segments in 1514-byte "
        "frames and tbf never sees a GSO super-packet. `net.ipv4.tcp_no_metrics_save=1` in "
        "the end namespaces so no run inherits an earlier run's ssthresh. "
        f"`iperf3 -c 10.201.2.1 -P N -t {dur} -C cc -J` from the client, `ping -i 0.1` beside "
        "it; goodput is iperf3's receiver figure, retransmits its sender `retransmits` "
        "(`tcpi_total_retrans`), TCP srtt the mean of its per-flow `mean_rtt`, drops from "
        "`tc -s qdisc show`, RTOs and recovery episodes from the client namespace's "
        "`/proc/net/netstat` (`TCPTimeouts`; `TCPSackRecovery` + `TCPRenoRecovery`) against "
        "the simulator's `timeouts` and `fast_recoveries`. "
        "Ping under load is the median after the first 2 s "
        f"(slow start). {n_runs} run(s) per case: the table shows the mean and, where the "
        "runs differ, the range in brackets."
    )
    w("")
    w("The cases, and why each:")
    w("")
    w("| case | tc tbf | flows | why |")
    w("|---|---|---|---|")
    for name, runs in cases.items():
        c = runs[0]["case"]
        w(
            f"| `{name}` | `{runs[0]['tc_command'].split(' tbf ', 1)[1]}` | "
            f"{c['flows']} x {c['cc']} | {c['why']} |"
        )
    w("")
    w("## Results")
    w("")
    w(
        "Goodput ceiling: tbf counts whole frames, so at rate R a bulk TCP flow can deliver "
        f"at most R · 1448/1514 = {PAYLOAD_PER_FRAME * 100:.1f} % of R as payload."
    )
    w("")
    for name, runs in cases.items():
        c = runs[0]["case"]
        rate_bps = parse_rate(c["rate"])
        figs = [real_figures(r) for r in runs]
        s = sim.get(name) if sim else None
        idle = statistics.median(f["ping_idle_ms"] for f in figs)
        w(
            f"### `{name}` — tbf {c['rate']}, {c['flows']} x {c['cc']}; idle RTT "
            f"{idle * 1000:.0f} µs; ceiling {rate_bps * PAYLOAD_PER_FRAME / 1e6:.2f} Mbit/s"
        )
        w("")
        w("| metric | real | simulated | sim - real |")
        w("|---|---|---|---|")
        for key, head, f, scale in METRICS:
            real_vals = [x[key] for x in figs]
            if s is None or "error" in (s or {}):
                sv, d = "pending", "-"
            else:
                sval = s.get(key)
                sv = "-" if sval is None else f.format(sval * scale)
                d = rel(sval, real_vals)
            w(f"| {head} | {fmt_range(real_vals, f, scale)} | {sv} | {d} |")
        if s is not None and "error" in s:
            w("")
            w(f"Simulation failed: `{s['error']}`")
        w("")
    diag = (sim or {}).get(RENO_CASE, {}).get("diagnostics")
    if diag:
        w("### Simulated Reno, varied")
        w("")
        real_retr = [real_figures(r)["retransmits"] for r in cases[RENO_CASE]]
        w(
            f"`{RENO_CASE}` simulated again with one thing changed (the real runs had "
            f"{fmt_range(real_retr, '{:.0f}', 1.0)} retransmissions):"
        )
        w("")
        w(
            "| simulated variant | goodput (Mbit/s) | Jain | retransmits | RTOs "
            "| fast recoveries | tbf drops |"
        )
        w("|---|---|---|---|---|---|---|")
        for d in diag:
            if "error" in d:
                w(f"| {d['variant']} | error: `{d['error']}` | | | | | |")
                continue
            w(
                f"| {d['variant']} | {d['sum_goodput_bps'] / 1e6:.2f} | {d['jain']:.3f} | "
                f"{d['retransmits']} | {d['timeouts']} | {d['fast_recoveries']} | "
                f"{d['tbf_drops']} |"
            )
        w("")
    if sim:
        w("## Findings")
        w("")
        for para in FINDINGS:
            w(f"- {para}")
        w("")
    off = HERE / "real_tbf_offloads_on.json"
    if off.exists():
        w("## Side run: offloads left on")
        w("")
        w(
            "`sudo python3 validation/real_tbf.py --keep-offloads --case tbf20-b20k-1cubic "
            "--case tbf100-b3000-1cubic --out validation/real_tbf_offloads_on.json` "
            "(veth defaults: TSO and GSO on, GRO off), one run each, beside the offloads-off "
            "means above:"
        )
        w("")
        w(
            "| case | offloads | goodput (Mbit/s) | retransmits | tbf drops "
            "| segments through tbf | skbs out of r1 | segments/skb |"
        )
        w("|---|---|---|---|---|---|---|---|")
        for run in json.loads(off.read_text())["results"]:
            name = run["case"]["name"]
            base = cases.get(name, [])
            for label, runs in (("off", base), ("on", [run])):
                if not runs:
                    continue
                figs = [real_figures(r) for r in runs]
                pk = [r["qdisc_after"]["packets"] for r in runs]
                skbs = [r.get("router_egress_tx_skbs") for r in runs]
                ratio = [p / k for p, k in zip(pk, skbs, strict=True) if k]
                w(
                    f"| `{name}` | {label} | "
                    f"{fmt_range([x['sum_goodput_bps'] for x in figs], '{:.2f}', 1e-6)} | "
                    f"{fmt_range([x['retransmits'] for x in figs], '{:.0f}', 1.0)} | "
                    f"{fmt_range([x['tbf_drops'] for x in figs], '{:.0f}', 1.0)} | "
                    f"{fmt_range(pk, '{:.0f}', 1.0)} | "
                    f"{fmt_range(skbs, '{:.0f}', 1.0)} | "
                    f"{fmt_range(ratio, '{:.2f}', 1.0)} |"
                )
        w("")
        w(
            "tc counts GSO segments (`bstats` adds `gso_segs`), the veth counts skbs, so "
            "their ratio is the mean number of segments per skb leaving the tbf. "
            "With the 20000-byte burst the GSO skbs fit under `max_size` and go "
            "whole into the queue: several segments per skb, and each tbf drop loses a "
            "whole skb, so drops no longer match retransmissions one to one. With the "
            "3000-byte burst almost every GSO skb is larger than `max_size` and is split by "
            "`tbf_segment`: one segment per skb and the offloads-off picture again."
        )
        w("")
    w("## Notes on this kernel and tc")
    w("")
    for para in KERNEL_NOTES:
        w(f"- {para}")
    w("")
    w("## Why they differ")
    w("")
    for para in DISCUSSION:
        w(para)
        w("")
    return "\n".join(lines).rstrip() + "\n"


FINDINGS = (
    "**Goodput, drops, RTOs and queueing delay agree in every case.** In all seven "
    "cases the simulated sum goodput is within 0.2 % of the real mean, neither side has "
    "an RTO, retransmissions and tbf drops are within about 10 % (the 4-CUBIC case: "
    "+26 %, 43 against 34), and ping RTT under load within 5 %: both hold the tbf at "
    "its frame-size ceiling and keep its queue 75-95 % full.",
    "**Reno now agrees too.** Four Reno flows with SACK recovery: 243 simulated "
    "retransmissions against 244 real, no RTO on either side. Before the TCP model "
    "gained RACK-TLP (RFC 8985), PRR's `prior_cwnd` (RFC 6937) and Linux's no-double-"
    "reduction rule, the simulator took 5226 retransmissions and 61 RTOs here: lost "
    "retransmissions could only be found by an RTO, which then resent the whole "
    "window. Reno's slow-start overshoot (no HyStart) drops hundreds of segments per "
    "flow at once, which is why this case, and not CUBIC's, exposed it. The "
    '`recovery = "newreno"` variant (no SACK) repairs one hole per RTT and still has '
    "segments missing at the end of the run; it is shown for contrast only.",
    "**Fairness is where the models differ most.** Per-flow shares depend on which "
    "flow's packets meet a full queue, i.e. on sub-millisecond phase; the simulation "
    "has no jitter (no CPU scheduling, no softirq batching), so a phase, once set, "
    "persists: with four CUBIC flows one simulated flow gets half of another's share "
    "(Jain 0.94 against 0.98 real), with four Reno flows the simulation is fairer than "
    "Linux (0.99 against 0.98). The real runs also differ among themselves more in "
    "this metric than in any other.",
    "**The hrtimer costs little.** With a two-frame burst at 20 Mbit/s the real tbf "
    "loses nothing measurable; at 100 Mbit/s (121 us per frame) it reaches 99.6-99.9 % "
    "of the ceiling against the simulator's 99.99 %: the watchdog's lateness on this "
    "shared 2-vCPU VM costs a few tenths of a per cent of the rate, well below what the "
    "burst would suggest, because tokens accrue from `t_c` while the timer is late.",
    "**RTT definitions.** Ping RTT, measured the same way on both sides, agrees within "
    "a few per cent. 'TCP srtt' does not mean the same thing: the real value is the "
    "kernel's smoothed RTT averaged over iperf3's per-second snapshots, the simulated "
    "one the mean of every ack_rtt sample, slow start included (hence a few per cent "
    "lower in the one-flow cases).",
    "**Ping loss** in the short-queue 10 Mbit/s case (and at 100 Mbit/s) is higher in "
    "the simulator than in the real runs: with a byte-limited queue a 98-byte probe is "
    "dropped only when the queue is within 98 bytes of full, so the count depends on "
    "the exact arrival phase of probes against ACK-clocked bursts, which the "
    "jitter-free simulation keeps constant. Small numbers; not investigated further.",
)


KERNEL_NOTES = (
    "Qdiscs built in: tbf, htb, ingress only (no netem, fq, fq_codel, sfq, prio); no "
    "`dummy` link type either, so the lab uses veth pairs only and no propagation delay "
    "can be added in the kernel: the real RTT is the ~55 us of the stack.",
    "The host's default congestion control is `bbr` (available: reno, bbr, cubic); "
    "the script passes `-C cubic` / `-C reno` to iperf3 so the socket option decides, and "
    "iperf3's `sender_tcp_congestion` is checked into the raw JSON.",
    "New namespaces inherit the host's `tcp_rmem`/`tcp_wmem`/`tcp_limit_output_bytes` "
    "on this kernel (recorded per run in `client_ns_sysctls`); `net.core.default_qdisc` "
    "exists only in the initial namespace. veth gets `noqueue` by default.",
    "tc (iproute2 6.1) accepts `burst 20000` and shows `burst 20000b lat 113ms` for "
    "`limit 302800` at 20 Mbit/s: the `lat` it prints is (limit - burst) / rate, the "
    "inverse of its latency-to-limit formula; `latency 50ms` at 10 Mbit/s gives limit "
    "72740 B.",
    "tbf drop counts exceed TCP retransmissions by a few in some runs: ping probes "
    "share the queue and are dropped too (ping loss row).",
)


DISCUSSION = (
    "**veth has no serialisation rate.** A veth transmit is a function call that hands "
    "the frame to the peer's backlog; nothing paces the frames into the router. A CUBIC "
    "sender without the `fq` qdisc does not pace either (only BBR, or `fq`, sets "
    "`sk_pacing_status`), so each ACK releases a back-to-back burst into the tbf queue. "
    "The simulator's 10 Gbit/s access links serialise at 1.2 µs per frame: also "
    "practically a burst. What neither side has is a physical bottleneck after the tbf: "
    "the tbf rate is the only rate on the path, as in the simulation.",
    "**tbf dequeues on an hrtimer.** When the head packet lacks tokens, `tbf_dequeue` "
    "arms the qdisc watchdog (`qdisc_watchdog_schedule_ns`, net/sched/sch_api.c) for the "
    "moment the tokens suffice; the packet leaves when the hrtimer fires and the "
    "NET_TX softirq runs, so a little later than the exact nanosecond the simulator "
    "releases it at. With a burst of only two frames (`*-b3000-*` cases) almost every "
    "frame waits on that timer; the lost rate measures the timer and softirq latency "
    "(on 2 shared vCPUs). Tokens keep accruing while the timer is late (the bucket is "
    "credited from `t_c`, not from the wake-up), so lateness costs rate only when the "
    "bucket overflows in the meantime, i.e. when the delay exceeds burst - frame time.",
    "**Kernel TCP is more than the model.** Linux adds PRR (RFC 6937) and RACK-TLP "
    "(RFC 8985) loss detection, TCP small queues (`tcp_small_queue_check`: at most "
    "`tcp_limit_output_bytes`, or ~1 ms of data at the pacing rate, in the qdisc and "
    "device per socket; over veth the skb is orphaned at transmit, so TSQ hardly "
    "limits here), auto-tuned receive buffers, HyStart in `tcp_cubic.c` (delay-based "
    "slow-start exit: with the tbf queue as the only delay it can end slow start early) "
    "and its `fast_convergence`. Retransmission counts differ most: the kernel counts "
    "every retransmitted segment, including spurious ones and tail-loss probes.",
    "**GSO.** Switched off here. With TSO/GSO on, TCP hands the stack super-packets "
    "(sized by `tcp_tso_autosize` to about 1 ms at the pacing rate, at least two "
    "segments) and veth forwards them whole; tbf charges each skb its full "
    "`qdisc_pkt_len`. One no larger than `max_size` (the burst) is queued and dropped "
    "as one unit, so a single tbf drop can lose several segments; a larger one is split by "
    "`tbf_segment` into MSS segments queued (and dropped) one by one. The side run below "
    "shows both. The simulator models wire frames only, so the comparison needs offloads "
    "off (`ethtool -K dev tso off gso off gro off`).",
    "**RTT.** The idle ping RTT of a few tens of µs is host processing, not propagation: "
    "the simulator turns it into link delay. Under load both RTTs are dominated by the "
    "tbf queue (302800 B = 121 ms at 20 Mbit/s; 72740 B = 58 ms at 10 Mbit/s), so the "
    "idle term is noise; what matters is how full each side keeps the queue between "
    "losses, i.e. the congestion control's reduction factor and recovery.",
    "**Goodput accounting.** iperf3's receiver divides the bytes it read by its own "
    "elapsed time, which starts after the connection set-up; the simulator divides the "
    "delivered bytes by the flow's active time. Both include slow start. With only the "
    "tbf on the path, both sides sit at the frame-size ceiling unless the queue runs "
    "empty after a loss, so sum goodput is the weakest test; fairness, retransmissions "
    "and queueing delay tell the models apart.",
)


def parse_rate(s: str) -> float:
    units = (
        ("gbit", 1e9),
        ("mbit", 1e6),
        ("kbit", 1e3),
        ("bit", 1.0),
    )
    for suffix, mult in units:
        if s.lower().endswith(suffix):
            return float(s[: -len(suffix)]) * mult
    raise ValueError(f"rate {s!r} has no bit/s unit")


# -- main -----------------------------------------------------------------------


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--real", type=Path, default=REAL_JSON)
    ap.add_argument("--doc", type=Path, default=DOC)
    ap.add_argument("--sim-json", type=Path, default=SIM_JSON)
    ap.add_argument(
        "--no-sim", action="store_true", help="write the page with the simulated column pending"
    )
    ap.add_argument("--show-scenario", metavar="CASE", help="print one case's scenario and exit")
    a = ap.parse_args(argv)

    real = json.loads(a.real.read_text())
    cases = by_case(real)
    dur = real["results"][0]["duration_s"]

    def idle_ms(runs: list[dict[str, Any]]) -> float:
        return statistics.median(r["rtt_idle_ms"]["median"] for r in runs)

    if a.show_scenario:
        if a.show_scenario not in cases:
            ap.error(f"no case {a.show_scenario!r}; cases: {', '.join(cases)}")
        runs = cases[a.show_scenario]
        print(scenario_toml(runs[0]["case"], dur, idle_ms(runs)), end="")
        return 0

    sim: dict[str, Any] | None = None
    note = ""
    if a.no_sim:
        note = "Run without `--no-sim` once `qoslab.simulate` is available."
    else:
        try:
            import qoslab

            if not hasattr(qoslab, "simulate"):
                raise ImportError("this qoslab has no simulate()")
        except ImportError as e:
            note = f"The simulator was not available when this page was written ({e})."
        else:
            sim = {}
            for name, runs in cases.items():
                toml_text = scenario_toml(runs[0]["case"], dur, idle_ms(runs))
                try:
                    sim[name] = simulate(toml_text, runs[0]["case"]["rate"])
                except Exception as e:  # shown in the page, not hidden
                    sim[name] = {"error": f"{type(e).__name__}: {e}"}
                sim[name]["scenario"] = toml_text
                if name == RENO_CASE and "error" not in sim[name]:
                    sim[name]["diagnostics"] = reno_diagnostics(toml_text, runs[0]["case"]["rate"])
                s = sim[name]
                print(
                    f"{name}: goodput {s.get('sum_goodput_bps', 0) / 1e6:.2f} Mbit/s, "
                    f"retransmits {s.get('retransmits')}, drops {s.get('tbf_drops')}"
                    + (f", error {s['error']}" if "error" in s else "")
                )
            write_atomic(a.sim_json, json.dumps(sim, indent=1) + "\n")
    page = render(real, sim, note)
    # Keep the sections other scripts write, between their markers
    # (<!-- emulate:begin --> … by validation/emulate_compare.py, policer-truth,
    # closing-loop by validation/bucket_estimate.py).
    old = a.doc.read_text(encoding="utf-8") if a.doc.exists() else ""
    for m in re.finditer(r"<!-- ([a-z-]+):begin -->.*?<!-- \1:end -->", old, re.S):
        page = page.rstrip("\n") + "\n\n" + m.group(0) + "\n"
    write_atomic(a.doc, page)
    print(f"wrote {a.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
