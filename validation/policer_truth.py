#!/usr/bin/env python3
"""Ground truth for TCP through a policer: real Linux TCP vs the simulator (issue 10, item 1).

This kernel has no police action, so the only way to put real Linux TCP (cubic, reno,
bbr; iperf3) through a policer here is ``qoslab.emulate``: one network namespace per
host, the policer run by qoslab's userspace forwarder — the very qoslab-core code the
simulator runs — with every link's delay emulated alongside. The *truth* side is
therefore real stacks through qoslab's policer; the *sim* side is ``qoslab.simulate`` of
the identical scenario.

The full grid (CIR {1, 10, 100} Mbit/s x Bc {1 MTU, 10 ms·CIR, CIR/32, 1 s·CIR} x base
RTT {5, 50, 100} ms x receive window {32 KB, 64 KB, 128 KB, autotuned} x flows {1, 4} x
cc {cubic, reno, bbr} = 864 runs) is too long; :func:`grid` picks a representative
subset: two base cases (Bc = CIR/32 and Bc = 10 ms·CIR, both CIR 10 Mbit/s, RTT 50 ms,
autotuned window, 1 CUBIC flow) varied one axis at a time, plus pairs (cc x flows,
cc x RTT, CIR x Bc, CIR x flows, RTT x window, …). Every value of every axis appears.

Commands (root for measuring, after scripts/setup.sh):

- ``.venv/bin/python validation/policer_truth.py``: measure every case not yet in
  validation/policer_truth.json (resumable: each case is stored as soon as it is
  measured), then render;
- ``--case NAME`` (repeatable) measure only these (again, even if stored);
- ``--render``: no root, no measuring: re-simulate every stored case with today's
  simulator and rewrite the ``policer-truth`` section of docs/validation.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import doc_section  # beside this script

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "policer_truth.json"
DOC = ROOT / "docs" / "validation.md"
BEGIN, END = "<!-- policer-truth:begin -->", "<!-- policer-truth:end -->"

DURATION_S = 10
HEADER_BYTES = 66  # 52 B TCP/IP with timestamps + 14 B Ethernet: the policer counts frames
FRAME_BYTES = 1448 + HEADER_BYTES  # a full-size segment as the policer counts it
BOTTLENECK_DELAY_MS = 1.0
# The simulator is exactly periodic: four flows of one RTT started together stay in lock
# step, and an RTO count can swing 3 <-> 13 with a path delay a few µs different (see the
# diagnosis, item 1). Each case is therefore simulated with the bottleneck's one-way delay
# offset by each of these amounts (the emulated path's delay is not known better than the
# forwarder's lateness, ~0.1 ms) and a different seed, and the median is compared; the
# same offsets for every case.
PERTURB_US = (0, 25, 50, 75, 100)
# Screening: a forwarder whose event loop was late by more than this at p99 was starved
# by the (shared) machine; such a run is measured once more and the better one kept.
STARVED_P99_NS = 1_000_000

# The targets of issue 10: goodput within ±10 %, retransmissions and RTOs within ±30 %
# or ±3 events, on at least 90 % of the cases.
GOODPUT_TOL = 0.10
COUNT_TOL, COUNT_ABS = 0.30, 3
SHARE_NEEDED = 0.90

AXES = ("cir_mbps", "bc", "rtt_ms", "window", "flows", "cc")
BC_KINDS = ("mtu", "10ms", "cir/32", "1s")
WINDOWS = ("32k", "64k", "128k", "auto")


def bc_bytes(cir_mbps: float, kind: str) -> int:
    """The committed burst for a CIR: one full-size frame, 10 ms or 1 s at CIR, or the
    Cisco IOS default CIR/32 (CIR in bit/s divided by 32, read as bytes: 250 ms)."""
    cir_bps = cir_mbps * 1e6
    return {
        "mtu": FRAME_BYTES,
        "10ms": round(cir_bps / 8 * 0.010),
        "cir/32": round(cir_bps / 32),
        "1s": round(cir_bps / 8),
    }[kind]


def case_name(c: dict[str, Any]) -> str:
    bc = {"mtu": "mtu", "10ms": "10ms", "cir/32": "r32", "1s": "1s"}[c["bc"]]
    return f"c{c['cir_mbps']:g}-bc{bc}-rtt{c['rtt_ms']}-w{c['window']}-f{c['flows']}-{c['cc']}"


def grid() -> list[dict[str, Any]]:
    """The measured subset, in a fixed order (see the module docstring)."""
    a = {"cir_mbps": 10, "bc": "cir/32", "rtt_ms": 50, "window": "auto", "flows": 1}
    a["cc"] = "cubic"
    b = dict(a, bc="10ms")
    out: list[dict[str, Any]] = []

    def add(base: dict[str, Any], **kw: Any) -> None:
        c = dict(base, **kw)
        if all(case_name(c) != case_name(x) for x in out):
            out.append(c)

    for base in (a, b):
        add(base)
        for cir in (1, 100):
            # 10 ms at 1 Mbit/s is 1250 B, below one full-size frame: nothing full-size
            # could ever pass, a degenerate case left out
            if not (cir == 1 and base["bc"] == "10ms"):
                add(base, cir_mbps=cir)
        for bc in BC_KINDS:
            add(base, bc=bc)
        for rtt in (5, 100):
            add(base, rtt_ms=rtt)
        for w in WINDOWS:
            add(base, window=w)
        add(base, flows=4)
        for cc in ("reno", "bbr"):
            add(base, cc=cc)
    # pairs
    for cir in (1, 100):
        for bc in ("mtu", "1s"):
            add(a, cir_mbps=cir, bc=bc)
    for base in (a, b):
        for cc in ("reno", "bbr"):
            add(base, flows=4, cc=cc)
    for rtt in (5, 100):
        for cc in ("reno", "bbr"):
            add(b, rtt_ms=rtt, cc=cc)
    for w in ("64k", "128k"):
        add(a, rtt_ms=100, window=w)
    for base in (a, b):
        for rtt in (5, 100):
            add(base, flows=4, rtt_ms=rtt)
        add(base, cir_mbps=100, flows=4)
    add(a, cir_mbps=1, flows=4)
    add(a, cir_mbps=1, rtt_ms=100)
    add(b, cir_mbps=100, rtt_ms=5)
    add(a, cir_mbps=100, rtt_ms=100)
    for cc in ("reno", "bbr"):
        add(a, bc="mtu", cc=cc)
    add(b, window="64k", flows=4)
    return out


def scenario(c: dict[str, Any], offset_us: float = 0.0, seed: int = 1) -> dict[str, Any]:
    """The scenario of one case: 1 sender and 1 receiver host, 10 Gbit/s links, the
    policer on the bottleneck's egress; base RTT = 2 x (2 x access + bottleneck delay).
    `offset_us` lengthens the bottleneck's one-way delay (a perturbed run, PERTURB_US)."""
    access_ms = (c["rtt_ms"] / 2 - BOTTLENECK_DELAY_MS) / 2
    bottleneck_ms = BOTTLENECK_DELAY_MS + offset_us / 1000
    tcp: dict[str, Any] = {
        "kind": "tcp-bulk",
        "flows": c["flows"],
        "profile": "linux",
        "cc": c["cc"],
        "header_bytes": HEADER_BYTES,
    }
    if c["window"] != "auto":
        tcp["rcvbuf"] = f"{int(c['window'][:-1]) * 1024}B"
    return {
        "scenario": {
            "name": case_name(c),
            "duration": f"{DURATION_S}s",
            "seed": seed,
            "description": f"policer truth case {case_name(c)}",
        },
        "topology": {
            "senders": 1,
            "receivers": 1,
            "access": {"rate": "10gbit", "delay": f"{access_ms:g}ms"},
            "bottleneck": {"rate": "10gbit", "delay": f"{bottleneck_ms * 1000:.3f}us"},
        },
        "policy": {
            "bottleneck": {
                "egress": {
                    "police": {
                        "cir": f"{c['cir_mbps']:g}mbit",
                        "bc": f"{bc_bytes(c['cir_mbps'], c['bc'])}B",
                    }
                }
            }
        },
        "traffic": [tcp],
        "record": {"interval": "100ms", "series": ["goodput", "cwnd"]},
    }


def cwnd_trace(result: Any) -> list[list[list[int]]]:
    """Per TCP flow, [ms, cwnd in segments, state] at every recorded 100 ms (state: the
    simulator's codes, 0 open, 1 disorder, 2 recovery, 3 loss/RTO): to set the
    simulated and the kernel's window side by side when diagnosing a miss."""
    df = result.cwnd
    out = []
    for _, g in df.groupby("flow", sort=True):
        out.append(
            [
                [int(t // 1_000_000), round(c / 1448), int(s)]
                for t, c, s in zip(g["time_ns"], g["cwnd_bytes"], g["state"], strict=True)
            ]
        )
    return out


def figures(summary: dict[str, Any]) -> dict[str, Any]:
    """What is compared, from a simulate or emulate summary (the same schema)."""
    tcp = [f for f in summary["flows"] if f["protocol"] == "tcp"]
    per_flow = [round(f["goodput_bps"] / 1e6, 4) for f in tcp]
    total = sum(per_flow)
    out: dict[str, Any] = {
        "goodput_mbps": round(total, 4),
        "per_flow_mbps": per_flow,
        "shares": [round(g / total, 4) if total else 0.0 for g in per_flow],
        "retransmits": sum(int(f["retransmits"]) for f in tcp),
        "rtos": sum(int(f["timeouts"]) for f in tcp),
        "rtos_per_flow": [int(f["timeouts"]) for f in tcp],
        "loss_episodes": sum(int(f["fast_recoveries"]) for f in tcp),
        "policer_drops": sum(int(p["drops"]["packets"]) for p in summary["policies"]),
    }
    if summary.get("mode") == "emulate":
        em = summary["emulation"]
        hosts = em["hosts"]
        # the kernel's own per-host counters beside the per-socket tcp_info figures
        out["nstat"] = {
            k: sum(int(h.get(k, 0)) for h in hosts.values())
            for k in (
                "TcpExtTCPTimeouts",
                "TcpExtTCPLossProbes",
                "TcpExtTCPSackRecovery",
                "TcpExtTCPRenoRecovery",
                "TcpRetransSegs",
            )
        }
        timing = (em.get("forwarder") or {}).get("timing") or {}
        # entries into fast recovery, every one counted by the kernel (the per-flow
        # figure comes from 50 ms tcp_info samples and misses the short episodes)
        out["loss_episodes"] = (
            out["nstat"]["TcpExtTCPSackRecovery"] + out["nstat"]["TcpExtTCPRenoRecovery"]
        )
        out["forwarder_p99_ns"] = int(timing.get("p99_ns", 0))
        out["forwarder_max_ns"] = int(timing.get("max_ns", 0))
        out["notes"] = list(em.get("notes", []))
    return out


# What we found reading the misses: facts from the runs of 2026-11-24 (named cases, their
# tcp_info cwnd traces, captures with --trains) against the simulator of that day. Written
# by hand, re-read when the simulator changes; never a reason to tune a parameter.
DIAGNOSIS = [
    "Written from the runs of 2026-11-24 against the simulator of that day (items 1-4"
    " and 6 revised in the third pass: the `rcvbuf` mapping, the ACK-at-read rules, the"
    " perturbed medians, the repeated 100 Mbit/s runs); the counts above are recomputed"
    " at every `--render`, this text is not. Hit rates goodput / retransmits / RTOs: 34 /"
    " 30 / 41 of 50 before the pass; 36 / 30 / 41 with `rcvbuf` alone and one unperturbed"
    " run (`--nominal`); 37 / 33 / 41 with the ACK rules too (`--nominal`); the medians"
    " over the perturbed runs and the 3-run truth at 100 Mbit/s are the table above.",
    "",
    "0. **The truth had to be fixed first.** iperf3 3.12 sets `TCP_CONGESTION` only after"
    " `connect()` (seen with strace), so each data socket was born with the namespace's"
    " default congestion control, `bbr` (inherited from this host; the kernel refuses to"
    " change it inside a namespace: EPERM), and `bbr_init` turns on the socket's internal"
    " pacing (`sk_pacing_status = SK_PACING_NEEDED`, net/ipv4/tcp_bbr.c), which the switch"
    ' to cubic or reno does not undo. Captured at the sender (`--trains`), the "cubic"'
    " flow of `c10-bc10ms-rtt50-wauto-f1-cubic` sent at most 2 segments back to back, pairs"
    " 2.3-2.8 ms apart, and made 7.62 Mbit/s through the 12.5 kB bucket. With the"
    " congestion control also on the route (`ip route ... congctl cubic`, now done by"
    " `qoslab emulate`) the socket is born cubic: trains of mean 3.9, p90 7, max 10"
    " segments (simulated: 4.8, 8, 9) and 2.11 Mbit/s (simulated 2.09). Every run in the"
    " table is with this fix; the 50 paced runs are kept in"
    " `validation/policer_truth_inherited_pacing.json` (against them the goodput target"
    " held on 29 of 50 cases, with the simulator 2.7-4x too low on small buckets). The same"
    " inheritance applies to `validation/real_tbf.py` (iperf3 `-C`, host default bbr).",
    "1. **RTOs with 4 flows at RTT >= 50 ms: a phase effect, not broken by perturbing the"
    " path.** Simulated 4-17 RTOs where the kernel counts 0-3; no case has real stacks"
    " stalling where the simulator does not. One simulated run is an arbitrary point:"
    " `c10-bcr32-rtt50-wauto-f4-cubic` gave 12, 13, 10, 12, 8 and 3 RTOs with the access"
    " delay at 12, 12.003, 12.011, 12.037, 12.1 and 11.97 ms. Four flows of identical RTT"
    " started together stay in lock step (Floyd and Jacobson's traffic phase effects,"
    " 1992). The table now compares the median of 5 runs with the bottleneck delay"
    " lengthened by 0-100 us and seeds 1-5 (the same for every case): the medians stay at"
    " 6-11 RTOs (ranges 4-13) against the kernel's 0-3, so a constant shift of the path"
    " does not break the lock, it only moves it. Measured, then: the lock is not an"
    " artefact of one unlucky delay. What breaks it in the kernel was found in the fifth"
    " pass: the retransmission timer's jiffies and timer-wheel rounding (item 11), not"
    " per-ACK host jitter.",
    "2. **Goodput on small buckets at RTT >= 50 ms: fixed, by two Linux ACK rules.** The"
    " simulator got 1.2-1.7x the real goodput (`c10-bc10ms-rtt100-wauto-f1-cubic` 1.37 vs"
    " 0.87, `c10-bc10ms-rtt50-wauto-f1-reno` 2.25 vs 1.50, `-rtt100-wauto-f1-reno` 1.25 vs"
    " 0.76): its flights were split into sub-bursts 40 ms apart (seen in the simulated"
    " send times: groups of 3, 10, 13 and 1 segments per round trip, the later ones"
    " released by the delayed-ACK timer), the kernel's are one train. The receiver"
    " acknowledged every second segment unconditionally; Linux does so only when the"
    " window computed now is not below the one last advertised (`__tcp_ack_snd_check`,"
    " net/ipv4/tcp_input.c: 'right edge of window advances far enough'), so while the"
    " application has not read, unread data holds the ACK back, and the read's"
    " `__tcp_cleanup_rbuf` (net/ipv4/tcp.c) sends it when more than one MSS is unacknowledged"
    " ('Once-per-two-segments ACK was not sent by tcp_input.c'), the window open again: one"
    " ACK per flight, and the sender's next flight one train. Both modelled (tcp/receiver.rs,"
    " unit test `a_full_locked_buffer_is_acknowledged_once_by_the_read`, failing without"
    " either rule). Single unperturbed runs after: 0.85 vs 0.87, 1.47 vs 1.50, 0.73 vs 0.76,"
    " and the fixed-window Bc 10 ms cases 1.26/1.27/1.13 -> 1.02/1.02/0.92. Left: one-frame"
    " buckets (1.11-1.40 with 2 simulated RTOs against 0) and `c10-bc10ms-rtt50-wauto-f1-"
    "cubic` now below (1.69 vs 2.11).",
    "3. **Retransmissions with big buckets and an autotuned window: a bimodal truth"
    " (fifth pass).** The window-limited phase at `tcp_rmem[1]` (item 8) is a coin toss in"
    " the kernel at 10 Mbit/s too. The first stored runs of"
    " `c10-bcr32-rtt50-wauto-f1-cubic`, `-reno` and `c10-bc1s-rtt50-wauto-f1-cubic` all"
    " stayed at 80896 B (cwnd 136, unused) until the bucket ran dry (1.0-3.4 s) and lost"
    " 145, 115 and 95 segments. Measured twice more (`--repeat`: every autotuned"
    " single-flow case with Bc >= CIR/32 at CIR 1-10 Mbit/s, hit or miss, 9 cases), the"
    " window of those three opened at 0.3 s in all 6 new runs and they lost 704 / 732, 589"
    " / 400 and 1560 / 2473 (tcp:tcp_probe on one such run: `snd_wnd` 79872 -> 395264 B"
    " between 0.2 and 0.3 s, slow start to cwnd 788, a first recovery of 1.34 s with 783"
    " retransmissions). The table compares the median of the 3 runs (all 9 cases; 1 Mbit/s"
    " and the other RTTs moved little). The simulator's 5 perturbed runs never show the"
    " phase at 10 Mbit/s (its window opens at 0.3 s too), so the comparison is now like"
    " for like. What decides the kernel's phase is still not traced (hypothesis: whether"
    " iperf3's reader runs on the forwarder's CPU, i.e. whether a flight is ever read in"
    " two goes). Against the open-window runs the simulator still lost 1.6-2.2x more"
    " (1144, 773, 3477 retransmissions): item 13.",
    "4. **Fixed windows: settled as a socket buffer.** iperf3 `-w N` sets SO_RCVBUF and"
    " SO_SNDBUF; the kernel doubles it (`sk_setsockopt`) and locks it, and"
    " `tcp_openreq_init_rwin` clamps the window to the buffer's full space, so the window"
    " scale is 0 for 32 KB, 1 for 64 KB, 2 for 128 KB and the window is what the memory"
    " holds at the measured ratio 158/256: 39096 B (unscaled, whole MSS), 80896 B, 161792 B"
    " (tcp/rcvbuf.rs, unit test `a_locked_so_rcvbuf_advertises_what_linux_does`). The"
    " scenario key `rcvbuf` now means that socket buffer (the emulator passes it to iperf3"
    " `-w`; a fixed `window`, an advertised window no Linux knob sets, is refused by the"
    " emulator with the `rcvbuf` that gives it). The cases use `rcvbuf`: 32 KB at 50 ms"
    " 5.06 -> 5.96 Mbit/s (truth 6.18), 64 KB at 100 ms 5.05 -> 6.09 (6.27), retransmits"
    " 64 KB 13 -> 79 (81) and 128 KB at 100 ms 20 -> 111 (104).",
    "5. **BBR through a one-frame bucket:** was 7.37 simulated vs 0.92 Mbit/s real"
    " (simulated BBR sent one segment per burst); with Linux's `bbr_tso_segs_goal`"
    " (tcp/tso.rs) it is 0.95 vs 0.92.",
    "6. **CIR 100 Mbit/s: the truth itself varies, now measured.** Each 100 Mbit/s case"
    " was run twice more (`--repeat`, 2026-11-24, 1-minute load 15-16 from other builds,"
    " forwarder p99 0.08-0.95 ms); the table compares the median of the 3 runs and shows"
    " their range. Goodput ranges: 12.51-93.06 (Bc 1 s), 6.28-90.71 (RTT 100 ms),"
    " 64.99-82.51 (r32), 39.28-47.65 (4 flows, Bc 10 ms), 21.64-24.36 (1 flow, Bc 10 ms);"
    " the one-frame and 4-flow r32 cases within 2 %. The wide ranges are item 3's"
    " window-limited phase ending or not.",
    "7. **Screening:** 14 runs whose forwarder was late by more than 1 ms at p99 (the"
    " machine was shared; other emulations ran too) were measured again (`--rescreen`) and"
    " the better run kept; one remains (`c100-bc1s-rtt50-wauto-f1-cubic`, p99 3.9 ms).",
    "8. **Receive-buffer autotuning (2026-11-24, second pass), checked on this kernel.**"
    " `tcp/rcvbuf.rs` follows Linux 6.18 (net/ipv4/tcp_input.c `tcp_init_buffer_space`,"
    " `tcp_measure_rcv_mss`, `tcp_grow_window`, `tcp_rcv_space_adjust`,"
    " `tcp_rcvbuf_grow`; tcp_output.c `tcp_select_initial_window`,"
    " `__tcp_select_window`). Checked against the kernel through the emulator (CIR 10"
    " Mbit/s, Bc 1.25 MB, RTT 50 ms): SYN-ACK window 65160 and scale 10, first ACK of data"
    " 68608, cap 80896 = 131072 x 158/256 (`ss -tmi`: rb 131072, rcv_ssthresh 80480,"
    " rcv_space 14480 for 2 s) are reproduced exactly. The tracepoints"
    " `tcp:tcp_rcv_space_adjust` (one call per segment read, a whole flight read in one"
    " loop after it arrived) and `tcp:tcp_rcvbuf_grow` (no call in that run) show why the"
    " kernel's buffer does not grow while the flow is window-limited: at the first read"
    " of a flight the rest of it is still queued and `copied -= inq` cancels it. The"
    " scaling ratio 158/256 is the kernel's on the emulator's veth path; the application"
    " is modelled as reading once the receive path has been idle for 50 us (at most 1"
    " ms), an assumption, not a measurement. Against the truth this pass changed the"
    " counts little (goodput 33 -> 33, retransmits 30 -> 29, RTOs 41 -> 40 of 50): the"
    " window-limited phase is reproduced, its end is not (item 3).",
    "9. **One-frame buckets, packet by packet (2026-11-24, fourth pass).** The emulator's"
    " capture of `c10-bcmtu-rtt50-wauto-f1-cubic` (`qoslab emulate --capture"
    " 'r1->r2=...' --capture 'r1->r2:egress=...'`) beside the simulator's (`qoslab run"
    " --capture`): every back-to-back pair loses its second segment, and the kernel"
    " answers the ACK that starts a recovery (`ack X, SACK X+1`) with the fast"
    " retransmission alone, where the simulator sent it and one new segment (lost too)."
    " Linux computes the window first and sends after: `tcp_ack` runs"
    " `tcp_fastretrans_alert` (enter recovery, nothing sent), `tcp_cong_control` ->"
    " `tcp_cwnd_reduction` (cwnd = in flight + sndcnt with prr_out still 0: 'Force a"
    " fast retransmit upon entering fast recovery'), then `tcp_xmit_recovery`; the"
    " simulator retransmitted inside the entry, so PRR counted that retransmission in"
    " the pipe and in prr_out and let one more out. Fixed (tcp/sender.rs"
    " `enter_recovery`, unit test `prr_entry_sends_only_the_fast_retransmission`, which"
    " fails without it). Hit rates 41 / 36 / 42 -> 42 / 38 / 40 (RTOs: two 4-flow Bc 10"
    " ms cases at 7 against 3, item 1's lock); one-frame reno 1.37 -> 1.04, cubic 1.34"
    " -> 1.11 with 1 RTO against 0; USC per chunk 145 / 137 -> 152 / 141, per capture"
    " 39 / 37 / 31 -> 39 / 36 / 32. Seen on the way, not modelled: iperf3 sends a"
    " 37-byte cookie on the data connection and waits a round trip before the data,"
    " so the kernel's first data segment meets a full bucket; the simulator's follows"
    " the handshake's ACK at once and its whole initial window is lost.",
    "10. **RACK on SACKed retransmissions (same capture).** In the simulator's first"
    " recovery a fast retransmission was lost again and went out only at the RTO, while"
    " later retransmissions were being SACKed. Linux's `tcp_sacktag_one` advances RACK"
    " for every newly SACKed segment (only `tcp_rack_advance`'s min_rtt test for a"
    " retransmission); the timestamp test `tcp_skb_spurious_retrans` is"
    " `tcp_clean_rtx_queue`'s, for cumulative ACKs. The simulator applied it to SACKs"
    " too, and a SACK never echoes the SACKed segment's own timestamp (the receiver's"
    " `tcp_replace_ts_recent` takes one only in sequence), so no SACKed retransmission"
    " ever moved RACK. Fixed (tcp/sender.rs, tcp/rack.rs; unit test"
    " `a_sacked_retransmission_reveals_an_earlier_lost_one`, failing without it). Every"
    " single-flow case now has 0 RTOs, as the kernel (before: medians of 1-3 in 9 of 36). Hit"
    " rates 42 / 38 / 40 -> 39 / 33 / 42: a lost retransmission is now resent one round"
    " trip later instead of after an RTO's pause, so where item 3's overshoot already"
    " lost 5-15x the kernel's segments it loses more (`c10-bc1s-rtt50-wauto-f1-cubic`"
    " 1562 -> 3450 against 95, `c1-bc1s` 156 -> 448 against 222), and the one-frame"
    " cubic cases settle at a window of 2 where the kernel's is 3 (1.13-1.21; reno"
    " 1.04): CUBIC's fast convergence holds either, and which one depends on the first"
    " second, where the missing iperf3 cookie (item 9) already differs. USC (linux-3.x,"
    " no RACK) unchanged.",
    "11. **RTOs with 4 flows: the kernel's retransmission timer runs on jiffies (fifth"
    " pass, resolves item 1).** `c10-bcr32-rtt50-wauto-f4-cubic` captured at the sender,"
    " emulated (real kernel, 3 RTOs in that run: nstat TcpExtTCPTimeouts 3,"
    " TcpExtTCPLossProbes 0) and simulated (9): every simulated RTO came exactly 250 ms,"
    " five round trips, after the flow's last transmission, three flows timed out at the"
    " same instant (2.751 s), and the retransmission sent then met the other flows'"
    " ACK-clocked bursts at the policer, which had just emptied the bucket, and was"
    " dropped again (backoffs to 500 and 1000 ms). The kernel's three came 255, 277 and"
    " 278 ms after the last transmission. This kernel has CONFIG_HZ=250"
    " (/proc/config.gz), and the RTO, TLP and RACK reordering timers share"
    " `icsk_retransmit_timer`, a jiffies `timer_list`, not an hrtimer (only pacing is):"
    " `usecs_to_jiffies` rounds 250 ms up to 63 jiffies, which the timer wheel of Linux"
    " >= 4.8 keeps on its level 1 (8-jiffy buckets, the expiry rounded up:"
    " `calc_wheel_index` / `calc_index`, kernel/time/timer.c), so the timer runs"
    " 252-284 ms after it was armed, at a 32 ms boundary of the jiffies clock, off the"
    " phase of the other flows' bursts. Modelled (`timer_hz` = 250 in the linux"
    " profiles; tcp/jiffies.rs; unit tests `the_rto_runs_at_its_timer_wheel_tick` and"
    " tcp/jiffies.rs's, failing with exact timers); the simulator had taken its TCP"
    " timers as exact on the belief that Linux uses hrtimers for them. RTO hits 42 -> 50"
    " of 50, the 4-flow medians 1-5 against the kernel's 0-3 (this case 9 -> 2 against"
    " 1). `linux-3.x` (the USC lab) keeps jiffies but not the coarse levels (the"
    " cascading wheel before 4.8 ran a timer at the jiffy it asked for). Not modelled then:"
    " the delayed-ACK timer (`icsk_delack_timer`) is a jiffies timer too (modelled since:"
    " item 15).",
    "12. **iperf3's cookie, modelled (fifth pass).** The same capture shows iperf3"
    " 3.12's set-up: the control connection's cookie at 50 ms and parameters at 100 ms,"
    " the four data connections opened one round trip apart (200, 251, 302, 354 ms),"
    " each writing its 37-byte cookie at once (`iperf_tcp_connect`, src/iperf_tcp.c),"
    " and the data of all four starting together at 405 ms, a round trip after the last"
    " cookie (the server's TEST_START / TEST_RUNNING, `iperf_run_server`). Modelled as"
    " the `tcp-bulk` traffic model's `app_preamble_bytes` = 37: the cookie first, the"
    " data once the receiver has acknowledged it (at once, standing for TEST_RUNNING's"
    " segment on the same path), the cookie not counted as data (unit test"
    " `the_iperf3_cookie_goes_first_and_the_data_waits_a_round_trip`). The one-frame"
    " cubic cases hardly move (1.13-1.21 -> 1.13-1.18): their surplus is not in the"
    " first round trips; open (the simulated flow enters recovery 47 times where the"
    " kernel does 32-33).",
    "13. **The ACK that ends a recovery (fifth pass; tcp:tcp_cong_state_set and"
    " tcp:tcp_probe traced on the kernel through the emulator).** In the kernel a recovery"
    " often ends and the next begins on one ACK: Recovery -> Open -> Recovery within"
    " 50 us at 4 of the 28 recovery ends of a `c1-bc1s-rtt50-wauto-f1-cubic` run and at 6"
    " of 14 of a `c10-bc1s` run. `tcp_fastretrans_alert` processes the ACK that reaches"
    " `high_seq` further: `tcp_try_undo_recovery` sets Open, `tcp_end_cwnd_reduction`"
    " restores cwnd to ssthresh, and step E's default case asks `tcp_time_to_recover`;"
    " new data that PRR sent during the recovery and the policer dropped is by then marked"
    " lost (RACK), so `tcp_enter_recovery` runs on that same ACK and `tcp_cwnd_reduction`"
    " (PRR), not the restored window, decides what is sent. The simulator left recovery"
    " and stopped there: that ACK sent ssthresh - pipe segments at once (up to ~70 at"
    " 1 Mbit/s) into the empty bucket, and only the next ACK started the recovery. When no"
    " loss is evident yet, the kernel bursts as well (the first recovery of the `c1-bc1s`"
    " run ends with 9 segments in flight, 73 right after), and so does the simulator."
    " Fixed (tcp/sender.rs `open_step`; unit test"
    " `the_ack_ending_recovery_starts_the_next_one_without_a_burst`, failing without it;"
    " RFC 6675 section 5 allows the same, a cumulative ACK with new SACK information being"
    " a duplicate ACK). Hit rates against the first-run truth 39 / 33 / 42 -> 44 / 37 /"
    " 43; with item 3's 3-run truth 44 / 40 / 43. Retransmissions, simulated median before"
    " -> after / truth median: `c10-bc1s` 3477 -> 1222 / 1560, `c10-bcr32` cubic 1144 ->"
    " 723 / 704, `c1-bc1s` 448 -> 270 / 230, reno 773 -> 623 / 400 (still a miss). USC"
    " (linux-3.x; 3.x `tcp_fastretrans_alert` has the same structure): 14 of 53 policer"
    " captures change, their simulated retransmissions mostly fall (police3M-bc1M 1265 ->"
    " 1165 against 1383, police1.5M-bc100k 437 -> 394 against 506), hits per capture 39 /"
    " 36 / 32 -> 39 / 36 / 31, per chunk 152 / 141 -> 147 / 131: those single-connection"
    " policer captures were already below the lab's (the lab's reordering and raised"
    " DupThresh, not modelled, see the USC section); the rule is the kernel's and is kept.",
    "14. **Whole segments, as the kernel counts (sixth pass; resolves the one-frame cubic"
    " goodput, items 9, 10 and 12).** The emulator's capture of"
    " `c10-bcmtu-rtt50-wauto-f1-cubic` beside the simulator's: the kernel settles in a"
    " 0.31 s cycle at a window of 3 (cwnd 2 -> 3 -> loss -> ssthresh 2, tcp:tcp_probe), the"
    " simulator in a 0.19 s cycle at 2 with 3 segments delivered per cycle (hence 1.12-1.17"
    " x the goodput and 50 recoveries against 33). Its windows had byte remainders the"
    " kernel cannot have: CUBIC's ssthresh was 0.7 x cwnd in bytes (7 segments -> 4.9,"
    " where `cubictcp_recalc_ssthresh` gives max(7 x 717 / 1024, 2) = 4 in packets), so"
    " fast convergence took W_max down to 1 and the curve's origin to 2. Three kernel rules"
    " in packets, each with a test that fails without it: CUBIC's ssthresh and"
    " fast-convergence W_max (cc/cubic.rs `recalc_ssthresh_segs`,"
    " `fast_convergence_w_max_segs`; `ssthresh_is_whole_segments_as_linux_keeps_it`); PRR"
    " (`tcp_cwnd_reduction`: prr_delivered, prr_out, packets in flight, ssthresh and"
    " prior_cwnd are packet counts, so DIV_ROUND_UP rounds to a whole segment; tcp/sender.rs"
    " `prr_reduce`, `prr_in_packets`; `linux_prr_rounds_up_to_whole_segments`); Reno's"
    " ssthresh (`tcp_reno_ssthresh` = max(cwnd >> 1, 2) of the window, not RFC 5681's"
    " FlightSize / 2; cc/reno.rs behind the new `CongestionControl::set_linux`, set by"
    " `TcpSender::new` for the Linux profiles; `linux_halves_the_window_not_the_flight`)."
    " Hit rates goodput / retransmits / RTOs 44 / 41 / 49 -> 47 / 39 / 49 (CUBIC), -> 45 /"
    " 39 / 48 (PRR), -> 46 / 40 / 48 (Reno): one-frame cubic 1.12-1.17 -> 1.03-1.07 with"
    " 82-84 retransmissions against 81-82; `c10-bc10ms-rtt50-wauto-f1-reno` 1.21 -> 1.08;"
    " `c10-bc10ms-rtt5-wauto-f1-reno` retransmissions 0.64 -> 0.73; the PRR rule alone moved"
    " two 4-flow cases out (`c100-bc10ms-rtt50-wauto-f4-cubic` goodput 0.98 -> 0.88,"
    " `c1-bcr32-rtt50-wauto-f4-cubic` RTOs 1.20 -> 1.32) and is kept as the kernel's.",
    "15. **The delayed ACK is Linux's `ato`, not a fixed 40 ms (sixth pass).** In the same"
    " capture the kernel's receiver answered a lone segment 52-56 ms after it, the"
    " simulator's 40 ms. `tcp_event_data_recv` adapts `icsk_ack.ato` to the gaps between"
    " data segments (halved plus the gap when the gap is below it), `tcp_send_delayed_ack`"
    " cuts it to the receiver's smoothed RTT (the handshake's sample, 13 jiffies at 50 ms)"
    " and the delayed-ACK timer is a jiffies `timer_list`, run at the tick after. Modelled"
    " for the Linux profiles (tcp/delack.rs; tests there and"
    " `linux_delayed_ack_follows_ato_and_the_handshake_rtt`). Small effect: one-frame cubic"
    " 1.03-1.07 -> 1.01-1.06, retransmissions 82 against 81-82.",
    "16. **The 4-flow truth, 3 runs (sixth pass).** Every 4-flow case measured once was"
    " measured twice more (`--repeat`, 12 cases, the rule fixed before the results; 1-minute"
    " load 10-13 from other builds): retransmissions vary by up to 1.5x between runs"
    " (`c10-bcr32-rtt100-wauto-f4-cubic` 640 / 722 / 952, `-reno` 732 / 929 / 693) and"
    " the Bc 10 ms goodput by 20 % (4.92 / 5.58 / 5.97). The table compares the medians."
    " Left: with 4 CUBIC flows through the 312 kB bucket the simulator retransmits 1.5x"
    " the kernel (965 against 623-698) over as many recoveries (82 against 86). Located,"
    " not yet explained: one capture each at the policer's ingress (emulated run: 698"
    " drops; unperturbed simulated run: 832) shows that the surplus is the first loss"
    " episode, where the four slow starts overshoot the bucket together: 493 retransmissions"
    " in the kernel's (391 distinct segments, i.e. 102 retransmissions lost again), 619 in"
    " the simulator's (445 distinct, 174 lost again), after 613 and 549 segments sent"
    " before the first retransmission. After it the simulator retransmits less than the"
    " kernel (169 in 14 episodes against 195 in 18). What sets the first episode's loss"
    " and re-loss (the four flows' recoveries sharing the empty bucket) is the next thing"
    " to trace."
    " Traced (seventh pass, `c10-bcr32-rtt50-wauto-f4-cubic`, the same two captures, every"
    " segment at the policer's ingress matched to its egress copy): the slow starts are"
    " the same (40 / 80 / 160 / 224 segments per 50 ms in the kernel, 40 / 80 / 160 / 220 in"
    " the simulator; the overshooting burst 174 segments with 170 dropped against 176 with"
    " 171), so HyStart, the initial window and pacing do not set the difference (neither"
    " paces CUBIC without fq). What differs is how each flow's burst ends. In the kernel"
    " every flow's burst ends with a 232-byte segment (the only sub-MSS data segments of"
    " the run, each at the same stream offset 181 038 in all four flows: the right edge of"
    " the receive window, see the eighth pass below),"
    " and all four of these 298-byte frames conform after 17 / 43 / 55 / 55 full-size"
    " drops, because the bucket has refilled a few hundred bytes but not 1514. Their SACKs"
    " return at +50 ms and each flow's RACK reordering timer (reo_wnd = min_rtt/4) fires:"
    " all four flows retransmit at +67.5 ms after the first drop, having sent only 24 new"
    " segments (none dropped) on the ACKs of +50 ms. The simulator's bursts end in full"
    " segments, nothing after a flow's first drop conforms, so no SACK comes back at"
    " +50 ms: the flows keep slow-starting on the cumulative ACKs, send 49 new segments"
    " (8 dropped) and learn of the loss only from those segments' SACKs, retransmitting"
    " first at +95-100 ms, 30 ms later and with more data and a larger window in flight."
    " Eighth pass, traced on the kernel (emulated run of the case with the tracepoints"
    " tcp:tcp_probe and tcp:tcp_sendmsg_locked, a capture of the sender, and `ss -tinm` in"
    " the sender's namespace every 0.5 s): the seventh pass's inference, the send buffer,"
    " is wrong. The 232-byte segment ends where the receive window ends: at the ACK"
    " before it snd_una = 101 398 and snd_wnd = 79 872 put the edge at 181 270, the"
    " segment's end (the same in every flow because their receivers' windows grow alike)."
    " `tcp_write_xmit` (net/ipv4/tcp_output.c) sends the head skb when its first MSS"
    " fits (`tcp_snd_wnd_test`) and `tcp_mss_split_point` cuts it at the window's edge,"
    " keeping the partial last segment unless Nagle's Minshall check (an unacknowledged"
    " sub-MSS segment) holds it; the simulator sent only whole segments while data was in"
    " flight. The send buffer never limited the kernel's senders: `ss` shows each data"
    " connection busy 9.7 s, rwnd-limited 96-120 ms (this edge, in slow start), never"
    " sndbuf-limited, its buffer autotuned from 46 080 B (tb46080 = 2 x 10 x 2304,"
    " `tcp_sndbuf_expand`, confirmed on a loopback socket: 69 120 with BBR's factor 3) to"
    " 368-520 kB with 250-470 kB written and not yet sent (`sndbuf_limited` counts only"
    " time with nothing left to send while the writer waits); `tcp_sendmsg_locked` shows"
    " iperf3's first 128 KiB write stopping at 46 336 B, then EAGAIN until the first"
    " ACKs, with written data still queued. The one case seen where the buffer binds:"
    " `c100-bc1s-rtt50-wauto-f1-cubic`, whose buffer reaches `tcp_wmem[2]` (4 MiB) and"
    " limits the sender for 28 ms of 10 s (rwnd 308 ms; that run 6568 retransmissions)."
    " So no send-buffer model was built (it would"
    " change nothing here; a fixed `sndbuf` per case would be tuning). Modelled instead:"
    " the partial segment at the window's edge (`window_edge_partial`, tcp/wndsplit.rs,"
    " on in `linux` and `linux-3.x`; Linux 2.6.32's `tcp_mss_split_point` rounds down to"
    " the MSS, so off in `linux-2.6`, and off in the Windows profiles; unit tests"
    " `a_window_limited_burst_ends_with_a_short_segment_at_the_edge` and"
    " tcp/wndsplit.rs's, failing without it). The simulated flows now end their"
    " overshooting bursts with a 232-byte segment at 181 038 in all four flows, as in"
    " the seventh pass's kernel capture (in a new kernel run: in two of four flows, at"
    " 181 038 and 186 830; the others' windows were not the limit at that moment)."
    " `--trains` now lists the sub-MSS first transmissions, truth / sim: this case 4"
    " (181 038 twice, 218 686, 262 126) / 4 (181 038 each);"
    " `c10-bcr32-rtt50-wauto-f1-cubic` 6 / 5 (first at 201 310 / 181 038);"
    " `-w64k-f1-cubic` 36 / 26 (the first two at 179 590 / 179 590 and 259 046 /"
    " 259 038); `c1-bcr32-rtt50-wauto-f1-cubic` 0 / 0; before, the simulator had none. It"
    " does not close the gap: the case's median stays 965 (runs 747-1041) against"
    " 623-698 (new kernel runs: 815 and 587), because 3 of the 4 short frames are still"
    " dropped in the simulator: its four bursts reach the policer back to back at 10"
    " Gbit/s, the four short frames within 0.12 ms of each other, when the bucket has"
    " refilled less than 298 bytes; in the kernel capture the bursts come as GSO trains"
    " (about 2.3 us a frame) interleaved over about 1.4 ms, so a short frame can meet"
    " a few hundred bytes of tokens. The simulator's RACK therefore still starts at"
    " +78-100 ms. Hit rates 47 / 40 / 49 -> 48 / 40 / 49: `c100-bc10ms-rtt50-wauto-f4-cubic`"
    " goodput 0.87 -> 0.93 and `c1-bc1s-rtt50-wauto-f1-cubic` retransmissions 1.34 ->"
    " 1.22 now hit, `c10-bcr32-rtt5-wauto-f4-cubic` 1.22 -> 1.34 now misses,"
    " `c100-bcr32-rtt50-wauto-f4-cubic` 1.35 -> 1.51 and `c100-bc1s` 4.61 -> 3.70 still"
    " miss, `c10-bcr32-rtt50-wauto-f4-reno` RTOs 3 -> 1 against 1. USC (linux-3.x):"
    " one capture moves (shape0.5M-q100k, 224 -> 227 retransmissions against 184), hits"
    " unchanged (per chunk 151 / 151, per capture 38 / 36 / 30)."
    " (Seventh pass:) the USC captures (linux-3.x) move with items 14 and 15: per chunk"
    " 143 / 140 -> 149 / 147, per capture 40 / 38 / 30 -> 36 / 38 / 29 (not re-rendered here).",
    "17. **The 4-flow surplus is the sending host's transmit path, neither the forwarder"
    " nor a TCP rule (ninth pass, 2026-11-25, traced on a loaded machine: 1-minute load 5-6).**"
    " Item 16 left open whether the kernel's bursts reach the policer spread out because"
    " of the Linux sender (TSO autosizing, TCP Small Queues) or because of the emulator's"
    " ingest. Traced with the new `--host-path CASE` (root): a capture on the sending"
    " host's own eth0 (dumpcap in its namespace, stamped by `dev_queue_xmit_nit` on the"
    " sender's clock) beside the forwarder's ring. (a) The forwarder's ingest adds little:"
    " it stamps a frame a median 6.7 / 6.7 / 7.4 us after the sender's tap (p99 23-376 us)"
    " in three runs of `c10-bcr32-rtt50-wauto-f4-cubic` / `-f1-cubic`; at 100 Mbit/s 7-21"
    " us (p99 2.9-3.1 ms, its stalls). (b) The sending host is the slow part: inside the"
    " bursts one ACK releases (at least 8 frames of one connection before its next ACK)"
    " it hands a frame to its veth every 4.2 / 4.2 / 4.15 us (median; p10 2.8-3.2, p90"
    " 5.2-5.9) at 10 Mbit/s, 3.2 us with 4 flows and 2.0 us with one flow at 100 Mbit/s"
    " (presumably larger autosized skbs), 3.4 us at 1 Mbit/s (2 bursts): 2.9-6 Gbit/s of"
    " full frames"
    " for a burst, not the scenario's 10 Gbit/s, and software segmentation per frame"
    " (offloads are off on the hosts' veths). (c) No fine interleave: in a new run's first"
    " overshoot (829 retransmissions) each connection's frames come in runs of 27-73 (the"
    " simulator's: 18 and 36, all four flows within 0.28 ms), and the three stretch ACKs"
    " that reached the sender together at 0.4665 s had their 38-frame bursts leave 145,"
    " 390 and 663 us after them, one after the other, each spread over 148-160 us (about"
    " 4 us a frame, no pause that waiting for a TX completion would leave: TCP Small"
    " Queues, `tcp_small_queue_check`, did not visibly hold them back). What spreads the"
    " kernel's bursts, and lets a window-edge frame meet"
    " tokens, is the CPU time per frame of the sender's stack and veth on this machine."
    " Tried and not adopted: the simulated access links at the measured rate (a 1514 B"
    " frame every 4.12 us, 2940 Mbit/s) for all 50 cases. The three 4-flow CUBIC misses"
    " hit (`c10-bcr32-rtt50-wauto-f4-cubic` 965 -> 724 against 638, runs 674-805 against"
    " the kernel's 621-829 in six runs; `-rtt5-` 2201 -> 1963 against 1645;"
    " `c10-bc10ms-rtt50-w64k-f4-cubic` 158 -> 175 against 243), but"
    " `c10-bc1s-rtt50-wauto-f1-cubic` 1521 -> 2339 against 1560,"
    " `c100-bcr32-rtt50-wauto-f1-cubic` 4257 -> 6483 against 4158 and two 100 Mbit/s"
    " goodputs move out: 48 / 40 / 49 -> 46 / 40 / 49. With the 100 Mbit/s figure (3.21 us,"
    " 3773 Mbit/s) for the 100 Mbit/s cases, `c100-bcr32-rtt50-wauto-f1-cubic` hits again"
    " (4323) and `c100-bc10ms-rtt50-wauto-f4-cubic`'s goodput misses (1.13). The cost is"
    " per skb and per frame, so it changes with the rate and the number of flows (2.0-4.2"
    " us measured): one link rate is not the truth's path, and a rate per case would be"
    " tuning. Left: a host stage before the access link that charges the stack's time"
    " per skb and per frame, measured on the emulation host, is what the comparison needs"
    " for these cases. `c10-bcr32-rtt50-wauto-f1-reno`: `--probe` today, 723"
    " retransmissions in 9 recoveries, each after the first lasting about one RTT as the"
    " simulator's (the same 9, cwnd saw-tooth 28-61 segments); the stored runs are 115 /"
    " 589 / 400, the 115 being item 3's window-limited phase, which the simulator never"
    " shows. Against the open-window runs (589, 400, 723) the simulator's 636 (runs 299,"
    " 613, 636, 649, 718) lies within them: the phase run pulls the stored median down to"
    " the lower open-window run; not"
    " a missing rule. The same phase run sets two 100 Mbit/s medians: `c100-bc1s-rtt50-"
    "wauto-f1-cubic` runs 2369 / 5215 / 0 (the 0 at 12.5 Mbit/s, window-limited) against"
    " the simulator's 8755, `c100-bcr32-rtt100-wauto-f1-cubic` 3110 / 0 / 4987 against"
    " 4384. `c10-bc10ms-rtt50-w64k-f4-cubic` (the simulator too low, 158 against 195 / 260 /"
    " 243): in a new kernel run (210 retransmissions, 212 drops at the policer, 11 of them"
    " retransmissions) the drops fall in 114 per-flow episodes (a flow's drops within 60"
    " ms), 68 of one drop, 30 of two, 7 of three; in the simulator's unperturbed run (152,"
    " 159, 6) 100 episodes, 87 / 4 / 1. The kernel loses a second segment in a third of"
    " its episodes, the simulator almost never, though the kernel's bursts at the policer"
    " are the smaller (frames of one flow less than 100 us apart: median 4, p90 7; the"
    " simulator's 6, 8). Not traced further. No simulator code changed in this pass, so"
    " the USC comparison (per chunk 139 /"
    " 138, per capture 37 / 31 / 33, re-rendered: identical) and the engine digest are"
    " unchanged.",
    "18. **BBR: a retransmission lost again is a loss (ninth pass; resolves the three BBR"
    " misses).** Traced on the kernel with the new `--bbr CASE` (`ss -tinH` every 20 ms in"
    " the sender's namespace: BBR's bw, min RTT, pacing and cwnd gains, cwnd, lost,"
    " retransmissions) and tcp:tcp_probe, tcp:tcp_cong_state_set and tcp:tcp_retransmit_skb,"
    " beside the simulated BBR's state per ACK. `c10-bcr32-rtt50-wauto-f1-bbr`, kernel run of"
    " 851 retransmissions: Startup overshoots to bw 43.4 Mbit/s (pacing 124 Mbit/s at 0.61 s,"
    " 315 segments lost at once), the first episode costs 632 retransmissions, the policer is"
    " detected at about 1.0 s (`lt_bw` 9.56 Mbit/s, pacing gain 1 for 48 rounds), and the two"
    " re-probes at 3.5 and 6.8 s cost 86 and 133 more. The simulator went through the same"
    " phases at the same times (bw 43.2 Mbit/s, `lt_bw` 9.57 from 0.88 s, re-probes at 3.9 and"
    " 7.0 s) but retransmitted 1642 times for 808 distinct segments, 1309 in the first 1.5 s,"
    " single segments up to 8 times: during the first episode its cwnd grew by the segments"
    " ACKed (42 -> 246 in 0.25 s) where the kernel's stayed at 71-94, so it kept sending"
    " retransmissions into the empty bucket. BBR takes the ACK's `rs->losses` off cwnd"
    " (`bbr_set_cwnd_to_recover_or_restore`) and counts `tp->lost` in its policer detector"
    " (`bbr_lt_bw_sampling`); `rs->losses` is the growth of `tp->lost` over the ACK (`tcp_ack`"
    " -> `tcp_rate_gen`), and `tcp_mark_skb_lost` (net/ipv4/tcp_input.c) adds to `tp->lost` a"
    ' retransmission that RACK finds lost again ("Account for retransmits that are lost'
    " again\" -> `tcp_notify_skb_loss_event`; `tcp_sum_lost` before 5.11). The simulator's rate"
    " sample carried only a segment's first loss. Modelled: tcp/scoreboard.rs"
    " `lost_events_bytes` (Linux's `tp->lost`) and the rate sample's losses as its growth over"
    " the ACK (tcp/sender.rs; unit tests `a_retransmission_lost_again_is_a_new_loss_event` and"
    " `a_retransmission_lost_again_is_in_the_rate_samples_losses`, which fails without it:"
    " 1000 against 2000 bytes). Only BBR reads the rate sample's losses, so CUBIC and Reno"
    " (and PRR, whose `newly_lost` is unchanged) do not move. Retransmissions, simulated"
    " median before -> after / truth: `c10-bcr32-rtt50-wauto-f1-bbr` 1685 -> 970 / 865,"
    " `-f4-bbr` 3254 -> 2142 / 2213 (RTOs 4 -> 6, range 2-8, against 3),"
    " `c10-bcmtu-rtt50-wauto-f1-bbr` 461 -> 95 / 113, and the four that hit already"
    " `c10-bc10ms-rtt50-wauto-f1-bbr` 593 -> 553 / 591, `-rtt5-` 627 -> 661 / 564, `-rtt100-`"
    " 602 -> 576 / 542, `-f4-bbr` 2115 -> 1674 / 1693. Hit rates goodput / retransmits / RTOs"
    " 48 / 40 / 49 -> 48 / 43 / 49; every BBR case hits all three. The one-frame case was"
    " traced too: the kernel (98 retransmissions in that run) is policed from 1.27 s at"
    " `lt_bw` 0.922 Mbit/s, so it paces at 0.913 Mbit/s, below `bbr_min_tso_segs`'s 1.2"
    " Mbit/s, in skbs of one segment, and loses nothing for 48 rounds; the simulator's first"
    " `lt_bw` was 1.58 Mbit/s, taken while it paced 2.98 Mbit/s in two-segment skbs whose"
    " second segment the one-frame bucket dropped, and it kept losing every second segment."
    " Seen in the kernel's capture and not modelled (tried, with BBR's cwnd counting a short"
    " segment as a whole one and the fast retransmission waiting for the pacer, then left"
    " out: alone they moved the one-frame case the wrong way, 461 -> 589, and with the loss"
    " rule the counts did not need them and they tipped `c10-bc10ms-rtt50-wauto-f4-bbr` to"
    " 7 RTOs against 1): a retransmission leaves as an skb of its own, one per"
    " `tcp_pacing_check` (`tcp_xmit_retransmit_queue`), never in a burst with new data, as the"
    " simulator sends it; an skb sent late earns up to half its pacing time as credit"
    ' (`tcp_update_skb_after_send`, "take into account OS jitter": new data 0.9 ms after a'
    " retransmission at 6.6 Mbit/s instead of 1.75 ms); and the first 10 segments are not"
    " paced (the kernel's initial window leaves as one burst, the simulator's in pairs 3.5 ms"
    " apart). Recoveries of the one-frame case: the kernel's ended 17 times in one traced run,"
    " none re-begun on the same ACK, and re-began on it at each of its first 3 ends in"
    " another; before this rule the simulator re-began every one it ended in its first"
    " 2 s on the same ACK, so its BBR never saw Open and never started a round of packet"
    " conservation again.",
]


# ---------------------------------------------------------------- target evaluation


def goodput_ok(sim: float, truth: float) -> bool:
    if truth == 0:
        return sim == 0
    return abs(sim - truth) <= GOODPUT_TOL * truth + 1e-9


def count_ok(sim: int, truth: int) -> bool:
    """Within ±30 % or ±3 events, whichever is looser."""
    return abs(sim - truth) <= max(COUNT_TOL * truth, COUNT_ABS) + 1e-9


def verdicts(sim: dict[str, Any], truth: dict[str, Any]) -> dict[str, bool]:
    return {
        "goodput": goodput_ok(sim["goodput_mbps"], truth["goodput_mbps"]),
        "retransmits": count_ok(sim["retransmits"], truth["retransmits"]),
        "rtos": count_ok(sim["rtos"], truth["rtos"]),
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per target: how many cases meet it, and whether that is ≥ 90 % of the cases."""
    n = len(rows)
    out: dict[str, Any] = {"cases": n}
    for key in ("goodput", "retransmits", "rtos"):
        met = sum(1 for r in rows if r["ok"][key])
        out[key] = {"met": met, "target_met": n > 0 and met >= SHARE_NEEDED * n}
    out["all_three"] = sum(1 for r in rows if all(r["ok"].values()))
    return out


def clusters(rows: list[dict[str, Any]], key: str) -> list[tuple[str, str, int, int]]:
    """Misses of one target per value of every axis: (axis, value, misses, cases)."""
    out = []
    for axis in AXES:
        values: dict[str, list[bool]] = {}
        for r in rows:
            values.setdefault(str(r["params"][axis]), []).append(r["ok"][key])
        for v, oks in values.items():
            out.append((axis, v, sum(1 for o in oks if not o), len(oks)))
    return out


# ---------------------------------------------------------------- rendering


def truth_episodes(t: dict[str, Any]) -> int:
    """Entries into fast recovery on the sending host, as nstat counts them (exact),
    else the tcp_info-sampled figure."""
    n = t.get("nstat")
    if n:
        return int(n["TcpExtTCPSackRecovery"]) + int(n["TcpExtTCPRenoRecovery"])
    return int(t["loss_episodes"])


def _ratio(sim: float, truth: float) -> str:
    if truth == 0:
        return "-" if sim == 0 else "∞"
    return f"{sim / truth:.2f}"


def _span(m: dict[str, Any], key: str) -> str:
    """The range over the perturbed runs, when they differ."""
    vals = [r[key] for r in m.get("runs", [])]
    if not vals or min(vals) == max(vals):
        return ""
    return f" ({min(vals)}-{max(vals)})"


def _gspan(t: dict[str, Any]) -> str:
    """The real goodput's range over repeated runs."""
    vals = [r["goodput_mbps"] for r in t.get("runs", [])]
    if not vals:
        return ""
    return f" ({min(vals):.2f}-{max(vals):.2f}, {len(vals)} runs)"


def _mark(ok: bool) -> str:
    return "" if ok else " ✗"


MEDIAN_KEYS = ("goodput_mbps", "retransmits", "rtos", "loss_episodes", "policer_drops")


def median_figures(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each compared figure over the perturbed runs (an odd number of runs,
    so a count stays a count), with every run's figures kept beside it."""
    out: dict[str, Any] = {k: statistics.median(r[k] for r in runs) for k in MEDIAN_KEYS}
    out["runs"] = [{k: r[k] for k in MEDIAN_KEYS} for r in runs]
    return out


def simulate_all(
    cases: dict[str, Any], offsets_us: tuple[float, ...] = PERTURB_US
) -> dict[str, dict[str, Any]]:
    import qoslab

    out = {}
    for name, c in cases.items():
        runs = [
            figures(qoslab.simulate(scenario(c["params"], off, seed)).summary)
            for seed, off in enumerate(offsets_us, 1)
        ]
        out[name] = median_figures(runs)
    return out


REPEAT_KEYS = ("goodput_mbps", "retransmits", "rtos", "loss_episodes", "policer_drops")


def truth_of(c: dict[str, Any]) -> dict[str, Any]:
    """The stored run, or with repeated runs (`--repeat`) the median of each compared
    figure over all of them (an odd count kept: the first run and its repeats), with
    every run's figures under "runs" for the ranges in the table."""
    reps = c.get("repeats") or []
    if not reps:
        return c["truth"]
    runs = [{k: c["truth"][k] for k in REPEAT_KEYS}] + [
        {k: r[k] for k in REPEAT_KEYS} for r in reps
    ]
    out = dict(c["truth"])
    for k in REPEAT_KEYS:
        out[k] = statistics.median_low(r[k] for r in runs)
    out["runs"] = runs
    return out


def build_rows(data: dict[str, Any], sims: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for name, c in data["cases"].items():
        truth, sim = truth_of(c), sims[name]
        rows.append(
            {
                "name": name,
                "params": c["params"],
                "truth": truth,
                "sim": sim,
                "ok": verdicts(sim, truth),
                "screen": c.get("screen", {}),
            }
        )
    return rows


def render(
    data: dict[str, Any], sims: dict[str, dict[str, Any]], sim_rev: str, nominal: bool = False
) -> str:
    rows = build_rows(data, sims)
    s = summarise(rows)
    n = s["cases"]
    meta = data.get("meta", {})

    def met(key: str) -> str:
        m = s[key]["met"]
        pct = 100 * m / n if n else 0.0
        verdict = "**met**" if s[key]["target_met"] else "**not met**"
        return f"{m}/{n} ({pct:.0f} %) — {verdict}"

    band = f"±{COUNT_TOL * 100:.0f} % or ±{COUNT_ABS} events"
    lines = [
        BEGIN,
        "## TCP through a policer: real Linux stacks vs the simulator (issue 10, item 1)",
        "",
        "Regenerate: `sudo .venv/bin/python validation/policer_truth.py` measures the cases"
        " missing from `validation/policer_truth.json` (root, ~15 s a case);"
        " `.venv/bin/python validation/policer_truth.py --render` (no root, ~1 min)"
        " re-simulates every stored case with today's simulator and rewrites this section;"
        " `--rescreen` measures again the runs whose forwarder starved; `--trains CASE`"
        " (root) prints the sizes of the sender's back-to-back trains, real vs simulated;"
        " `--probe CASE` (root) prints the kernel sender's cwnd, ssthresh, peer window and"
        " state per ACK from its tracepoints, beside the simulated run; `--host-path CASE`"
        " (root) times the sending host's own transmit path from a capture on its eth0"
        " beside the forwarder's (item 17); `--bbr CASE` (root) prints the kernel's BBR"
        " model (`ss -tin`: bw, min RTT, pacing and cwnd gain) over a BBR case (item 18)."
        " One 10 s run per"
        " case on the real side (3 where the table shows a range: items 3 and 6); on the"
        " simulated side"
        + (
            " one unperturbed run per case (`--nominal`)."
            if nominal
            else f" the median of {len(PERTURB_US)} runs per case, the bottleneck's delay"
            f" lengthened by {', '.join(f'{x:g}' for x in PERTURB_US)} µs with seeds"
            f" 1-{len(PERTURB_US)} (the same for every case; the RTO range over them is in"
            " brackets): an exactly periodic simulator can lock four flows in phase (item 1)."
        ),
        "",
        "**Truth** is real Linux TCP (iperf3, kernel"
        f" {meta.get('kernel', '?')}, iperf3 {meta.get('iperf3', '?')}) through qoslab's"
        " own policer in the userspace forwarder of `qoslab emulate` (this kernel has no"
        " police action): the policer is the same qoslab-core code the simulator runs, so"
        " the difference between the columns is the TCP (and the host), not the policer."
        f" Measured {meta.get('date', '?')} on a shared {meta.get('cpus', '?')}-CPU machine"
        " (other builds running: the 1-minute load at each run is in the JSON and in the"
        " table's last column; a run whose forwarder was late by more than"
        f" {STARVED_P99_NS / 1e6:g} ms at p99 was measured once more and the better run"
        f" kept). Simulator side: `qoslab.simulate` at {sim_rev}.",
        "",
        f"Every case: {DURATION_S} s, one sender and one receiver host, 10 Gbit/s links,"
        f" policer `police cir=CIR bc=Bc` on the bottleneck egress counting {HEADER_BYTES} B"
        " of header per segment (52 B TCP/IP + 14 B Ethernet, as the forwarder counts"
        ' frames), `profile = "linux"` with the case\'s `cc` (in the emulator also on the'
        " route, `congctl`, so that the socket is born with it: see the diagnosis), and"
        " a socket buffer when the window is not"
        " autotuned (the scenario's `rcvbuf` = 32, 64 or 128 KB; emulated: iperf3 `-w`,"
        " i.e. SO_RCVBUF/SO_SNDBUF; simulated: the locked buffer and the window Linux"
        " derives from it, 39096, 80896, 161792 B, tcp/rcvbuf.rs; *auto* = Linux"
        " autotuning in both). Bc: *mtu* ="
        f" {FRAME_BYTES} B (one full-size frame), *10ms* / *1s* = that long at CIR,"
        " *r32* = CIR/32 bytes (the Cisco default, 250 ms at CIR). The subset of the full"
        " grid (864 combinations): two base cases (CIR 10 Mbit/s, RTT 50 ms, autotuned, 1"
        " CUBIC flow, Bc = r32 and Bc = 10ms) varied one axis at a time, plus pairs; every"
        " value of every axis appears (CIR 1 x Bc 10ms is 1250 B, below one frame, and left"
        " out as degenerate).",
        "",
        "RTOs: sum over flows of the kernel's `tcpi_total_rto` (truth) and of the simulated"
        " flows' RTO expirations (sim); retransmits: iperf3's sender `retransmits`"
        " (`tcpi_total_retrans`) vs the simulator's retransmitted segments; loss episodes:"
        " entries into fast recovery, nstat `TcpExtTCPSackRecovery + TcpExtTCPRenoRecovery`"
        " of the sending host (truth) vs simulated fast-recovery episodes.",
        "",
        f"### Targets (on ≥ {SHARE_NEEDED * 100:.0f} % of the {n} cases)",
        "",
        f"- goodput within ±{GOODPUT_TOL * 100:.0f} %: {met('goodput')}",
        f"- retransmissions within {band}: {met('retransmits')}",
        f"- RTO count within {band}: {met('rtos')}",
        f"- all three on the same case: {s['all_three']}/{n}",
        "",
        "### Every case (✗ = outside the target)",
        "",
        "| case | CIR Mbit/s | Bc | RTT ms | window | flows | cc | goodput Mbit/s sim / truth"
        " | ratio | retransmits sim / truth | ratio | RTOs sim / truth | ratio"
        " | loss episodes sim / truth | policer drops sim / truth | shares truth"
        " | load 1 min, fwd p99 µs |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        p, t, m, ok = r["params"], r["truth"], r["sim"], r["ok"]
        shares = "/".join(f"{x:.2f}" for x in t["shares"]) if len(t["shares"]) > 1 else "-"
        sc = r["screen"]
        load = sc.get("load1")
        p99 = t.get("forwarder_p99_ns")
        bc = bc_bytes(p["cir_mbps"], p["bc"])
        lines.append(
            f"| `{r['name']}` | {p['cir_mbps']:g} | {p['bc']} ({bc} B)"
            f" | {p['rtt_ms']} | {p['window']} | {p['flows']} | {p['cc']}"
            f" | {m['goodput_mbps']:.2f} / {t['goodput_mbps']:.2f}{_gspan(t)}"
            f" | {_ratio(m['goodput_mbps'], t['goodput_mbps'])}{_mark(ok['goodput'])}"
            f" | {m['retransmits']} / {t['retransmits']}"
            f" | {_ratio(m['retransmits'], t['retransmits'])}{_mark(ok['retransmits'])}"
            f" | {m['rtos']}{_span(m, 'rtos')} / {t['rtos']}"
            f" | {_ratio(m['rtos'], t['rtos'])}{_mark(ok['rtos'])}"
            f" | {m['loss_episodes']} / {truth_episodes(t)}"
            f" | {m['policer_drops']} / {t['policer_drops']} | {shares}"
            f" | {'?' if load is None else f'{load:.1f}'},"
            f" {'?' if p99 is None else f'{p99 / 1e3:.0f}'} |"
        )
    lines += [
        "",
        "### Where the misses cluster (computed from the table above)",
        "",
        "Misses / cases for every value of every axis (an axis value whose share of misses"
        " is well above the overall share is where a miss clusters):",
        "",
        "| axis | value | goodput misses | retransmit misses | RTO misses |",
        "|---|---|---|---|---|",
    ]
    per_key = {k: clusters(rows, k) for k in ("goodput", "retransmits", "rtos")}
    for i, (axis, v, _, cases) in enumerate(per_key["goodput"]):
        cells = " | ".join(f"{per_key[k][i][2]}/{cases}" for k in per_key)
        lines.append(f"| {axis} | {v} | {cells} |")
    tot = " | ".join(
        f"{sum(1 for r in rows if not r['ok'][k])}/{n}" for k in ("goodput", "retransmits", "rtos")
    )
    lines.append(f"| **all** | | {tot} |")
    no_rto_sim = [r for r in rows if r["sim"]["rtos"] == 0 and r["truth"]["rtos"] > COUNT_ABS]
    lines += [
        "",
        f"Cases where real stacks take more than {COUNT_ABS} RTOs and the simulator none:"
        f" {len(no_rto_sim)}"
        + (
            " (" + ", ".join(f"`{r['name']}` {r['truth']['rtos']}" for r in no_rto_sim) + ")."
            if no_rto_sim
            else "."
        ),
    ]
    lines += ["", "### Diagnosis", "", *DIAGNOSIS]
    lines += ["", END]
    return "\n".join(lines) + "\n"


def write_doc(section: str, doc: Path = DOC) -> None:
    """Replaces the marked section (or appends it), leaving the rest alone."""
    doc_section.replace_section(doc, BEGIN, END, section)


_NUMBERS = re.compile(r"\[\s*(-?[\d.eE+-]+(?:,\s*-?[\d.eE+-]+)*)\s*\]")


def save(data: dict[str, Any], path: Path) -> None:
    """Indented JSON with every list of plain numbers on one line (the cwnd traces)."""
    text = json.dumps(data, indent=1)
    text = _NUMBERS.sub(
        lambda m: "[" + ", ".join(m.group(1).split()).replace(",,", ",") + "]", text
    )
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".policer-truth-")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"meta": {}, "cases": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise SystemExit(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cases"), dict):
        raise SystemExit(f"{path}: expected an object with a 'cases' object")
    for name, c in data["cases"].items():
        for key in ("params", "truth"):
            if key not in c:
                raise SystemExit(f"{path}: case {name!r} has no {key!r}")
    return data


def sim_revision() -> str:
    return doc_section.sim_revision(ROOT)


# ---------------------------------------------------------------- measuring


def measure(c: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One emulated run, screened: re-run once if the forwarder was starved."""
    from qoslab.emulate import emulate

    tries = []
    for _ in range(2):
        load1 = os.getloadavg()[0]
        t = time.monotonic()
        result = emulate(scenario(c))
        truth = figures(result.summary)
        truth["cwnd_trace"] = cwnd_trace(result)
        tries.append((truth, {"load1": round(load1, 2), "wall_s": round(time.monotonic() - t, 1)}))
        if truth["forwarder_p99_ns"] <= STARVED_P99_NS:
            break
    truth, screen = min(tries, key=lambda x: x[0]["forwarder_p99_ns"])
    screen["tries"] = len(tries)
    screen["p99_ns_tries"] = [x[0]["forwarder_p99_ns"] for x in tries]
    return truth, screen


def _trains(times_s: list[float], gap_s: float = 100e-6) -> list[int]:
    """Sizes of the back-to-back trains in a sorted list of send times (gap < 100 µs)."""
    out, n = [], 1
    for a, b in itertools.pairwise(times_s):
        if b - a < gap_s:
            n += 1
        else:
            out.append(n)
            n = 1
    if times_s:
        out.append(n)
    return out


MSS_BYTES = 1448
COOKIE_BYTES = 37  # iperf3's cookie, the first payload of every data connection


def short_segments(rows: list[tuple[int, int, int]], full_min: int = 100) -> list[tuple[int, int]]:
    """First transmissions shorter than the MSS on the data connections, as (connection,
    stream offset): ``rows`` are (connection, seq, len) of every data segment in send
    order, seq relative to the ISN. The cookie and the connections with fewer than
    ``full_min`` full-size segments (iperf3's control connection) are left out."""
    full: dict[int, int] = {}
    for conn, _, n in rows:
        if n >= MSS_BYTES:
            full[conn] = full.get(conn, 0) + 1
    seen: set[tuple[int, int]] = set()
    out = []
    for conn, seq, n in rows:
        if full.get(conn, 0) < full_min or (conn, seq) in seen:
            continue
        seen.add((conn, seq))
        if 0 < n < MSS_BYTES and n != COOKIE_BYTES:
            out.append((conn, seq))
    return out


def trains(name: str) -> None:
    """How bursty each sender is: one case emulated with a capture of what the sender
    puts on the wire (the forwarder's ingress from s0), and simulated with the
    ``segments`` series; train sizes of full-size data segments after the first 2 s,
    and the data segments shorter than the MSS (a window-limited burst ends with one:
    tcp/wndsplit.rs) with their stream offsets."""
    import qoslab
    from qoslab.emulate import emulate, preflight

    c = next((x for x in grid() if case_name(x) == name), None)
    if c is None:
        raise SystemExit(f"--trains {name}: not a case of the grid (see --list)")
    preflight()
    with tempfile.TemporaryDirectory() as tmp:
        pcap = str(Path(tmp) / "s0.pcap")
        emulate(scenario(c), capture=[("s0->r1", "ingress", pcap)])
        fields = ["frame.time_relative", "tcp.srcport", "tcp.seq", "tcp.len"]
        out = subprocess.run(
            ["tshark", "-r", pcap, "-Y", "tcp.dstport == 5201 && tcp.len > 0", "-T", "fields"]
            + [x for f in fields for x in ("-e", f)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    cap = [(float(t), int(p), int(q), int(n)) for t, p, q, n in (x.split() for x in out)]
    real = [t for t, _, _, n in cap if n > 1000]
    real_short = short_segments([(p, q, n) for _, p, q, n in cap])
    s = scenario(c)
    s["record"]["series"] = ["segments"]
    seg = qoslab.simulate(s).segments
    sim = [t / 1e9 for t, n in zip(seg["time_ns"], seg["len"], strict=True) if n > 1000]
    sim_short = short_segments(
        list(zip(seg["flow"], seg["seq"], seg["len"], strict=True)), full_min=100
    )
    for label, times, short in (("truth", real, real_short), ("sim", sim, sim_short)):
        t0 = times[0] if times else 0.0
        b = sorted(_trains([t for t in times if t > t0 + 2]))
        if b:
            print(
                f"{label}: {len(b)} trains after 2 s, mean {sum(b) / len(b):.2f} segments,"
                f" p90 {b[int(0.9 * (len(b) - 1))]}, max {b[-1]}"
            )
        offsets = ", ".join(str(q) for _, q in short[:12]) + (" ..." if len(short) > 12 else "")
        print(f"{label}: {len(short)} sub-MSS first transmissions, at stream offsets {offsets}")


def host_path_stats(
    tap: list[tuple[float, int, int, int]],
    acks: list[tuple[float, int, int]],
    fwd: list[tuple[float, int, int, int]],
) -> dict[str, Any]:
    """What the sending host's own transmit path does, from a capture on its eth0 (the
    tap of `dev_queue_xmit_nit`, the sender's clock): ``tap`` its data frames (time s,
    connection, seq, len), ``acks`` the ACKs it received (time s, connection, ack),
    ``fwd`` the same data frames as the forwarder's ring stamped them. Reported: how
    much later the forwarder stamps a frame than the sender sent it (its ingest), and
    the time per frame inside the bursts one ACK releases (the frames of that
    connection up to its next ACK, at least 8 of them, spread < 2 ms): the rate at
    which the host's stack hands full-size frames to its veth."""
    conns = {p for _, p, _, n in tap if n >= MSS_BYTES}
    lag = sorted((b[0] - a[0]) * 1e6 for a, b in zip(tap, fwd, strict=False) if a[1:3] == b[1:3])
    ev = sorted([(t, 0, p) for t, p, _, _ in tap if p in conns] + [(t, 1, p) for t, p, _ in acks])
    per_frame = []
    for i, (_, kind, p) in enumerate(ev):
        if kind != 1:
            continue
        sent = []
        for t2, k2, p2 in ev[i + 1 :]:
            if p2 != p:
                continue
            if k2 == 1:
                break
            sent.append(t2)
        if len(sent) >= 8 and sent[-1] - sent[0] < 2e-3:
            per_frame.append((sent[-1] - sent[0]) / (len(sent) - 1) * 1e6)
    per_frame.sort()

    def q(v: list[float], f: float) -> float | None:
        return round(v[int(f * (len(v) - 1))], 2) if v else None

    return {
        "frames": len(tap),
        "forwarder_lag_us": {"p10": q(lag, 0.1), "median": q(lag, 0.5), "p99": q(lag, 0.99)},
        "bursts": len(per_frame),
        "us_per_frame": {
            "p10": q(per_frame, 0.1),
            "median": q(per_frame, 0.5),
            "p90": q(per_frame, 0.9),
        },
    }


def _fields(pcap: str, flt: str, fields: list[str]) -> list[tuple[float, ...]]:
    out = subprocess.run(
        ["tshark", "-r", pcap, "-Y", flt, "-T", "fields"] + [x for f in fields for x in ("-e", f)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return [tuple(float(v) if i == 0 else int(v) for i, v in enumerate(x.split())) for x in out]


def host_path(name: str) -> None:
    """(root) One case emulated with a capture on the sending host's own eth0 (dumpcap in
    its namespace, started once the namespace exists) beside the forwarder's ingress
    capture: the host's transmit path per frame (what ``HOST_PATH_US_PER_FRAME`` is)."""
    import threading

    from qoslab.emulate import emulate, preflight
    from qoslab.emulate.netns import PREFIX

    c = next((x for x in grid() if case_name(x) == name), None)
    if c is None:
        raise SystemExit(f"--host-path {name}: not a case of the grid (see --list)")
    preflight()
    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as tmp:
        tap, fwd = str(Path(tmp) / "s0-eth0.pcap"), str(Path(tmp) / "s0.pcap")
        ns = f"{PREFIX}{os.getpid()}-s0"

        def start_tap() -> None:
            for _ in range(500):  # bounded: 10 s
                names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
                up = subprocess.run(
                    ["ip", "netns", "exec", ns, "ip", "link", "show", "eth0", "up"],
                    capture_output=True,
                    text=True,
                )
                if ns in names.stdout and "eth0" in up.stdout:
                    argv = ["dumpcap", "-q", "-i", "eth0", "-s", "96", "-B", "64", "-f", "tcp"]
                    procs.append(
                        subprocess.Popen(
                            ["ip", "netns", "exec", ns, *argv, "-w", tap],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL,
                        )
                    )
                    return
                time.sleep(0.02)

        th = threading.Thread(target=start_tap)
        th.start()
        try:
            emulate(scenario(c), capture=[("s0->r1", "ingress", fwd)])
        finally:
            th.join()
            for p in procs:
                p.terminate()
                p.wait(timeout=10)
        if not procs:
            raise SystemExit(f"--host-path: the sender's namespace {ns} never came up")
        data = "tcp.dstport == 5201 && tcp.len > 0"
        cols = ["frame.time_epoch", "tcp.srcport", "tcp.seq", "tcp.len"]
        rows = _fields(tap, data, cols)
        acks = _fields(
            tap,
            "tcp.srcport == 5201 && tcp.len == 0",
            ["frame.time_epoch", "tcp.dstport", "tcp.ack"],
        )
        ring = _fields(fwd, data, cols)
    stats = host_path_stats(rows, acks, ring)  # type: ignore[arg-type]
    print(json.dumps(stats))


TRACEFS = Path("/sys/kernel/tracing")
PROBE_EVENTS = ("tcp_probe", "tcp_cong_state_set")
CA_STATES = {0: "open", 1: "disorder", 2: "cwr", 3: "recovery", 4: "loss"}
_TRACE_LINE = re.compile(r"\s(\d+\.\d+): (tcp_probe|tcp_cong_state_set): (.*)$")


def parse_probe(text: str, port: int = 5201) -> dict[str, Any]:
    """The data connection's sender from a tracefs dump of tcp:tcp_probe (one line per
    segment the socket receives: its cwnd, ssthresh, the peer's window, snd_nxt, snd_una)
    and tcp:tcp_cong_state_set (ca_state changes): the socket towards ``port`` with the
    most tcp_probe lines (iperf3's control connection has few). Times from its first
    line; flight = snd_nxt - snd_una in bytes (SACKed and lost segments included)."""
    probes: dict[str, list[tuple[float, dict[str, str]]]] = {}
    states: list[tuple[float, str, int]] = []
    for line in text.splitlines():
        m = _TRACE_LINE.search(line)
        if not m:
            continue
        t, event = float(m.group(1)), m.group(2)
        kv = dict(x.split("=", 1) for x in m.group(3).split() if "=" in x)
        if event == "tcp_probe" and kv.get("dest", "").endswith(f":{port}"):
            probes.setdefault(kv["src"].rsplit(":", 1)[-1], []).append((t, kv))
        elif event == "tcp_cong_state_set" and kv.get("dport") == str(port):
            states.append((t, kv["sport"], int(kv["cong_state"])))
    if not probes:
        return {"port": None, "acks": [], "states": []}
    sport = max(probes, key=lambda k: len(probes[k]))
    rows = probes[sport]
    t0 = rows[0][0]
    acks = [
        {
            "t_s": round(t - t0, 6),
            "cwnd": int(kv["snd_cwnd"]),
            "ssthresh": int(kv["ssthresh"]),
            "snd_wnd": int(kv["snd_wnd"]),
            "flight_bytes": (int(kv["snd_nxt"], 16) - int(kv["snd_una"], 16)) % 2**32,
        }
        for t, kv in rows
    ]
    st = [{"t_s": round(t - t0, 6), "state": s} for t, p, s in states if p == sport]
    return {"port": int(sport), "acks": acks, "states": st}


def recovery_reentries(states: list[dict[str, Any]], within_s: float = 50e-6) -> tuple[int, int]:
    """(recoveries that ended, of them those followed by a new recovery within
    ``within_s``: the same ACK, as `tcp_fastretrans_alert` re-enters)."""
    ends = again = 0
    for i in range(1, len(states)):
        if states[i]["state"] == 0 and states[i - 1]["state"] == 3:
            ends += 1
            nxt = states[i + 1] if i + 1 < len(states) else None
            if nxt and nxt["state"] == 3 and nxt["t_s"] - states[i]["t_s"] < within_s:
                again += 1
    return ends, again


def probe(name: str, step_s: float = 0.1) -> None:
    """(root) One case through the emulator with the kernel's tcp:tcp_probe and
    tcp:tcp_cong_state_set tracepoints on, in a tracefs instance of our own (removed
    after): the sender's cwnd, ssthresh, peer window and flight every ``step_s`` and
    every state change, beside the simulated cwnd of the unperturbed run."""
    import qoslab
    from qoslab.emulate import emulate, preflight

    c = next((x for x in grid() if case_name(x) == name), None)
    if c is None:
        raise SystemExit(f"--probe {name}: not a case of the grid (see --list)")
    preflight()
    inst = TRACEFS / "instances" / f"policer_truth_{os.getpid()}"
    inst.mkdir()
    try:
        (inst / "buffer_size_kb").write_text("65536")
        for ev in PROBE_EVENTS:
            (inst / "events" / "tcp" / ev / "enable").write_text("1")
        (inst / "tracing_on").write_text("1")
        result = emulate(scenario(c))
        (inst / "tracing_on").write_text("0")
        text = (inst / "trace").read_text()
    finally:
        inst.rmdir()
    k = parse_probe(text)
    truth = figures(result.summary)
    print(f"truth: {truth['retransmits']} retransmits, {truth['loss_episodes']} recoveries")
    nxt, st = 0.0, list(k["states"])
    for a in k["acks"]:
        while st and st[0]["t_s"] <= a["t_s"]:
            x = st.pop(0)
            print(f"  {x['t_s']:9.6f} -> {CA_STATES.get(x['state'], x['state'])}")
        if a["t_s"] >= nxt:
            print(
                f"{a['t_s']:7.3f} cwnd {a['cwnd']:5d} ssthresh {a['ssthresh']:10d}"
                f" snd_wnd {a['snd_wnd']:8d} flight {a['flight_bytes'] / 1448:6.1f} seg"
            )
            nxt = a["t_s"] + step_s
    ends, again = recovery_reentries(k["states"])
    print(f"recoveries ended: {ends}, the next one begun on the same ACK: {again}")
    s = qoslab.simulate(scenario(c))
    print("sim:", figures(s.summary)["retransmits"], "retransmits; cwnd trace", cwnd_trace(s)[0])


_SS_BBR = re.compile(
    r"bbr:\(bw:([\d.]+)([kMG]?)bps,mrtt:([\d.]+)(?:,pacing_gain:([\d.]+))?"
    r"(?:,cwnd_gain:([\d.]+))?\)"
)
_SS_FIELDS = {
    "cwnd": re.compile(r"\scwnd:(\d+)"),
    "ssthresh": re.compile(r"\sssthresh:(\d+)"),
    "retrans": re.compile(r"\sretrans:\d+/(\d+)"),
    "lost": re.compile(r"\slost:(\d+)"),
    "unacked": re.compile(r"\sunacked:(\d+)"),
    "pacing": re.compile(r"\spacing_rate ([\d.]+)([kMG]?)bps"),
}
_UNIT = {"": 1e-6, "k": 1e-3, "M": 1.0, "G": 1e3}


def parse_ss_bbr(text: str, port: int = 5201) -> list[dict[str, Any]]:
    """Samples of ``ss -tinH`` taken in a loop (each preceded by a ``@<epoch s>`` line):
    per sample, the data connection's BBR model (bw, min RTT, pacing and cwnd gains,
    Mbit/s and ms as ss prints them) and its cwnd, ssthresh, retransmissions (total),
    lost and unacknowledged segments and pacing rate. The data connection is the socket
    towards ``port`` that sent the most bytes (iperf3's control connection sends few)."""
    by_port: dict[str, list[dict[str, Any]]] = {}
    t = None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("@"):
            t = float(line[1:])
            continue
        if f":{port}" not in line or i + 1 >= len(lines) or t is None:
            continue
        info = lines[i + 1]
        m = _SS_BBR.search(info)
        sent = re.search(r"bytes_sent:(\d+)", info)
        if not m or not sent:
            continue
        row: dict[str, Any] = {
            "t": t,
            "sent": int(sent.group(1)),
            "bw_mbps": float(m.group(1)) * _UNIT[m.group(2)],
            "mrtt_ms": float(m.group(3)),
            "pacing_gain": float(m.group(4) or 0),
            "cwnd_gain": float(m.group(5) or 0),
        }
        for k, rx in _SS_FIELDS.items():
            f = rx.search(info)
            if f is None:
                row[k] = 0
            elif k == "pacing":
                row[k] = round(float(f.group(1)) * _UNIT[f.group(2)], 3)
            else:
                row[k] = int(f.group(1))
        by_port.setdefault(line.split()[3], []).append(row)
    if not by_port:
        return []
    out = max(by_port.values(), key=lambda rows: rows[-1]["sent"])
    t0 = out[0]["t"]
    for r in out:
        r["t"] = round(r["t"] - t0, 3)
    return out


def bbr_probe(name: str, interval_s: float = 0.02) -> None:
    """(root) One BBR case through the emulator with ``ss -tinH`` sampled every
    ``interval_s`` in the sender's namespace: the kernel's BBR model (bw, min RTT,
    pacing and cwnd gain) beside cwnd, retransmissions and pacing rate, printed at every
    change of gains and every 0.25 s; the kernel's ca_state changes from
    tcp:tcp_cong_state_set. A pacing gain of 1 held for more than 8 rounds is the
    long-term (policed) mode, ``bbr_lt_bw_sampling``."""
    import threading

    import qoslab
    from qoslab.emulate import emulate, preflight
    from qoslab.emulate.netns import PREFIX

    c = next((x for x in grid() if case_name(x) == name), None)
    if c is None or c["cc"] != "bbr":
        raise SystemExit(f"--bbr {name}: not a BBR case of the grid (see --list)")
    preflight()
    ns = f"{PREFIX}{os.getpid()}-s0"
    stop = threading.Event()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "ss.txt"
        loop = (
            f"while [ -e /run/netns/{ns} ]; do echo @$EPOCHREALTIME; ss -tinH dport = :5201;"
            f" sleep {interval_s}; done"
        )

        def sample() -> None:
            deadline = time.monotonic() + 60
            while not Path(f"/run/netns/{ns}").exists():
                if stop.is_set() or time.monotonic() > deadline:
                    return
                time.sleep(0.01)
            with log.open("w") as f:
                p = subprocess.Popen(["ip", "netns", "exec", ns, "bash", "-c", loop], stdout=f)
                while p.poll() is None and not stop.is_set():
                    time.sleep(0.05)
                if p.poll() is None:
                    p.terminate()
                    p.wait(timeout=5)

        th = threading.Thread(target=sample)
        inst = TRACEFS / "instances" / f"policer_truth_{os.getpid()}"
        inst.mkdir()
        try:
            (inst / "buffer_size_kb").write_text("65536")
            (inst / "events" / "tcp" / "tcp_cong_state_set" / "enable").write_text("1")
            (inst / "tracing_on").write_text("1")
            th.start()
            result = emulate(scenario(c))
            (inst / "tracing_on").write_text("0")
            text = (inst / "trace").read_text()
        finally:
            stop.set()
            th.join()
            inst.rmdir()
        rows = parse_ss_bbr(log.read_text() if log.exists() else "")
    truth = figures(result.summary)
    print(f"truth: {truth['retransmits']} retransmits, {truth['loss_episodes']} recoveries")
    prev, nxt = None, 0.0
    for r in rows:
        key = (r["pacing_gain"], r["cwnd_gain"])
        if key != prev or r["t"] >= nxt:
            print(
                f"{r['t']:7.3f} bw {r['bw_mbps']:7.3f} mrtt {r['mrtt_ms']:6.2f}"
                f" pg {r['pacing_gain']:5.3f} cg {r['cwnd_gain']:5.3f} cwnd {r['cwnd']:4d}"
                f" ssth {r['ssthresh']:4d} unacked {r['unacked']:4d} lost {r['lost']:3d}"
                f" retr {r['retrans']:5d} pacing {r['pacing']:7.3f}"
            )
            prev, nxt = key, r["t"] + 0.25
    states = [ln for ln in text.splitlines() if "tcp_cong_state_set" in ln and "dport=5201" in ln]
    print(f"kernel ca_state changes: {len(states)}")
    s = qoslab.simulate(scenario(c))
    print("sim:", figures(s.summary)["retransmits"], "retransmits; cwnd trace", cwnd_trace(s)[0])


def meta() -> dict[str, Any]:
    try:
        ver = subprocess.run(
            ["iperf3", "--version"], capture_output=True, text=True
        ).stdout.split()[1]
    except (OSError, IndexError):
        ver = "?"
    return {
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "iperf3": ver,
        "duration_s": DURATION_S,
    }


def run_cases(
    names: Iterable[str] | None, path: Path, rescreen: bool = False, repeat: bool = False
) -> None:
    from qoslab.emulate import preflight

    preflight()
    data = load(path)
    cases = {case_name(c): c for c in grid()}
    if rescreen:
        # stored runs whose forwarder was starved: measured again, the better one kept
        names = [
            n
            for n, c in data["cases"].items()
            if c["truth"].get("forwarder_p99_ns", 0) > STARVED_P99_NS
        ]
    wanted = list(names) if names is not None else [n for n in cases if n not in data["cases"]]
    for n in wanted:
        if n not in cases:
            raise SystemExit(f"--case {n}: not a case of the grid (see --list)")
    data["meta"] = {**data.get("meta", {}), **meta()}
    for i, n in enumerate(wanted, 1):
        print(f"[{i}/{len(wanted)}] {n} ...", file=sys.stderr, flush=True)
        truth, screen = measure(cases[n])
        old = data["cases"].get(n)
        if repeat and old:
            # another run of a stored case: kept beside the first (the figures only)
            rep = {k: truth[k] for k in (*REPEAT_KEYS, "forwarder_p99_ns")}
            old.setdefault("repeats", []).append({**rep, **screen, "date": meta()["date"]})
        elif rescreen and old and old["truth"]["forwarder_p99_ns"] <= truth["forwarder_p99_ns"]:
            old["screen"]["rescreened"] = screen["p99_ns_tries"]
        else:
            if old:
                screen["replaced_p99_ns"] = old["truth"].get("forwarder_p99_ns")
            data["cases"][n] = {"params": cases[n], "truth": truth, "screen": screen}
        save(data, path)
        print(
            f"  {truth['goodput_mbps']:.2f} Mbit/s, retr {truth['retransmits']},"
            f" rto {truth['rtos']}, load {screen['load1']}, p99"
            f" {truth['forwarder_p99_ns'] / 1e3:.0f} µs ({screen['wall_s']} s)",
            file=sys.stderr,
            flush=True,
        )
    # keep the grid's order
    data["cases"] = {n: data["cases"][n] for n in cases if n in data["cases"]} | {
        n: c for n, c in data["cases"].items() if n not in cases
    }
    save(data, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="examples:\n"
        "  sudo .venv/bin/python validation/policer_truth.py\n"
        "  sudo .venv/bin/python validation/policer_truth.py \\\n"
        "      --case c10-bc10ms-rtt50-wauto-f1-cubic\n"
        "  .venv/bin/python validation/policer_truth.py --render\n"
        "  .venv/bin/python validation/policer_truth.py --list\n"
        "  sudo .venv/bin/python validation/policer_truth.py \\\n"
        "      --trains c10-bc10ms-rtt50-wauto-f1-cubic\n"
        "  sudo .venv/bin/python validation/policer_truth.py \\\n"
        "      --probe c1-bc1s-rtt50-wauto-f1-cubic\n"
        "  sudo .venv/bin/python validation/policer_truth.py \\\n"
        "      --host-path c10-bcr32-rtt50-wauto-f4-cubic\n"
        "  sudo .venv/bin/python validation/policer_truth.py \\\n"
        "      --bbr c10-bcmtu-rtt50-wauto-f1-bbr\n"
        "  sudo .venv/bin/python validation/policer_truth.py --repeat \\\n"
        "      --case c100-bc10ms-rtt50-wauto-f1-cubic",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--case", action="append", help="measure only this case (repeatable)")
    ap.add_argument("--render", action="store_true", help="no measuring: re-simulate, rewrite doc")
    ap.add_argument("--list", action="store_true", help="print the grid's case names")
    ap.add_argument(
        "--rescreen", action="store_true", help="measure again the runs whose forwarder starved"
    )
    ap.add_argument("--trains", metavar="CASE", help="(root) burstiness of one case, truth vs sim")
    ap.add_argument(
        "--probe",
        metavar="CASE",
        help="(root) the kernel sender's cwnd/ssthresh/window/state per ACK (tracepoints)",
    )
    ap.add_argument(
        "--host-path",
        metavar="CASE",
        help="(root) the sending host's transmit path per frame, from a capture on its eth0",
    )
    ap.add_argument(
        "--bbr",
        metavar="CASE",
        help="(root) the kernel's BBR model (ss -tin: bw, min RTT, gains) over one BBR case",
    )
    ap.add_argument(
        "--repeat",
        action="store_true",
        help="(root) measure the --case cases again and keep the runs beside the first",
    )
    ap.add_argument(
        "--nominal",
        action="store_true",
        help="with --render: simulate each case once, unperturbed (not the medians)",
    )
    ap.add_argument("--results", type=Path, default=RESULTS, help="the JSON of measurements")
    ap.add_argument("--doc", type=Path, default=DOC, help="the document to write the section in")
    args = ap.parse_args(argv)
    if args.list:
        for c in grid():
            print(case_name(c))
        return 0
    if args.trains:
        trains(args.trains)
        return 0
    if args.probe:
        probe(args.probe)
        return 0
    if args.host_path:
        host_path(args.host_path)
        return 0
    if args.bbr:
        bbr_probe(args.bbr)
        return 0
    if not args.render:
        if args.repeat and not args.case:
            raise SystemExit("--repeat needs --case (the cases to measure again)")
        run_cases(args.case, args.results, args.rescreen, args.repeat)
    data = load(args.results)
    sims = simulate_all(data["cases"], (0.0,) if args.nominal else PERTURB_US)
    write_doc(render(data, sims, sim_revision(), nominal=args.nominal), args.doc)
    print(f"wrote {args.doc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
