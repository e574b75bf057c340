"""A simulation result in iperf3's ``-J`` layout (``qoslab run --format iperf3``).

The layout is iperf3 3.x's: ``start`` (``connected``, ``version``,
``timestamp``, ``test_start``...), ``intervals`` (one entry per second:
``streams`` and ``sum``) and ``end`` (``streams`` with a ``sender`` and a
``receiver`` block for TCP, a ``udp`` block for UDP; ``sum_sent``,
``sum_received``). Flows in both directions are written as ``iperf3
--bidir`` writes them: upload streams with ``"sender": true``, download
streams with ``"sender": false``, and the download totals in
``sum_bidir_reverse`` (intervals), ``sum_sent_bidir_reverse`` and
``sum_received_bidir_reverse`` (end). Only downloads: as ``iperf3 -R``
(``test_start.reverse = 1``).

Field names and nesting follow iperf_api.c of esnet/iperf (iperf_json_start,
print_interval_results, iperf_print_results; https://github.com/esnet/iperf)
and were checked against ``iperf3 -J`` 3.12 output taken on loopback (a TCP,
a UDP and a ``--bidir`` run; tests/data/iperf3/), which the tests compare
with, key by key. One stream per simulated TCP or UDP flow (ping flows are not
iperf3 streams); ``socket`` is the flow id.

What the simulator does not have, and what is written instead:

* interval ``bytes`` are bytes delivered to the receiver in that second (the
  goodput series); iperf3's client counts bytes written to its socket;
* end ``sender.bytes`` are the flow's delivered bytes too (the simulator
  does not count what the application wrote but never got across);
* ``rtt``/``rttvar``/``snd_cwnd`` of an interval come from the ``rtt`` and
  ``cwnd`` series when they were recorded (mean RTT in the second, in µs;
  the last cwnd sample), and are left out otherwise; ``rttvar`` and ``pmtu``
  are always left out;
* ``cpu_utilization_percent`` is all zeros and ``jitter_ms`` is 0: a
  simulation measures neither (iperf3 tooling, e.g. the ``iperf3`` Python
  package's ``TestResult``, requires the keys);
* ``timestamp`` is the Unix epoch: the simulator has no wall clock (runs are
  deterministic, so two runs give the same bytes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from qoslab import __version__

if TYPE_CHECKING:
    from qoslab.results import SimulationResult

__all__ = ["iperf3_json"]

#: iperf3's default server port; simulated flows carry it too.
IPERF3_PORT = 5201


def _block(
    sock: int | None, t0: float, t1: float, nbytes: float, sender: bool, **extra: Any
) -> dict[str, Any]:
    """One iperf3 results object (stream or sum), keys in iperf3's order."""
    seconds = t1 - t0
    out: dict[str, Any] = {} if sock is None else {"socket": sock}
    out.update(
        start=t0,
        end=t1,
        seconds=seconds,
        bytes=int(nbytes),
        bits_per_second=nbytes * 8 / seconds if seconds > 0 else 0.0,
    )
    out.update(extra)
    out["sender"] = sender
    return out


def _per_interval(
    r: SimulationResult, ids: list[int]
) -> tuple[list[tuple[float, float]], dict[str, np.ndarray]]:
    """Seconds of the run and, per (second, flow), delivered bytes,
    retransmits, mean RTT (µs) and last cwnd, from the raw series."""
    duration_ns = int(r.raw["duration_ns"])
    interval_ns = int(r.raw["record_interval_ns"])
    step_ns = 1_000_000_000
    if interval_ns <= 0 or step_ns % interval_ns:
        step_ns = max(interval_ns, 1)  # the recorded interval, when it does not divide 1 s
    n = max(1, -(-duration_ns // step_ns))
    bounds = [(i * step_ns / 1e9, min((i + 1) * step_ns, duration_ns) / 1e9) for i in range(n)]
    width = max([*ids, 0]) + 1
    series = r.raw["series"]

    def bucket(t: np.ndarray) -> np.ndarray:
        return ((t.astype(np.int64) - 1) // step_ns).clip(0, n - 1)

    def flows_of(cols: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        f = np.asarray(cols["flow"], dtype=np.int64)
        keep = f < width
        return f[keep], keep

    out: dict[str, np.ndarray] = {}
    g = series["goodput"]
    nbytes = np.zeros((n, width))
    retr = np.zeros((n, width), dtype=np.int64)
    if len(g.get("time_ns", ())):
        f, keep = flows_of(g)
        b = bucket(np.asarray(g["time_ns"])[keep])
        np.add.at(nbytes, (b, f), np.asarray(g["bytes"], dtype=np.float64)[keep])
        np.add.at(retr, (b, f), np.asarray(g["retransmits"], dtype=np.int64)[keep])
        out["bytes"], out["retransmits"] = nbytes, retr
    rt = series["rtt"]
    if len(rt.get("time_ns", ())):
        f, keep = flows_of(rt)
        b = bucket(np.asarray(rt["time_ns"])[keep])
        total = np.zeros((n, width))
        count = np.zeros((n, width))
        np.add.at(total, (b, f), np.asarray(rt["rtt_ns"], dtype=np.float64)[keep] / 1e3)
        np.add.at(count, (b, f), 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out["rtt_us"] = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    cw = series["cwnd"]
    if len(cw.get("time_ns", ())):
        f, keep = flows_of(cw)
        b = bucket(np.asarray(cw["time_ns"])[keep])
        last = np.full((n, width), np.nan)
        last[b, f] = np.asarray(cw["cwnd_bytes"], dtype=np.float64)[keep]  # later rows win
        out["cwnd"] = last
    return bounds, out


def iperf3_json(r: SimulationResult) -> dict[str, Any]:
    """The run as ``iperf3 -J`` writes it, one stream per TCP/UDP flow."""
    s = r.summary
    flows = [f for f in s["flows"] if f["protocol"] in ("tcp", "udp")]
    up = [f for f in flows if f["direction"] == "upload"]
    down = [f for f in flows if f["direction"] == "download"]
    reverse_only = bool(down) and not up
    bidir = bool(up) and bool(down)
    duration = float(s["duration_s"])
    protocols = {f["protocol"] for f in flows}
    protocol = "UDP" if protocols == {"udp"} else "TCP"
    ids = [int(f["id"]) for f in flows]
    bounds, per = _per_interval(r, ids)

    start = {
        "connected": [
            {
                "socket": f["id"],
                "local_host": f["from"],
                "local_port": 0,
                "remote_host": f["to"],
                "remote_port": IPERF3_PORT,
            }
            for f in flows
        ],
        "version": f"qoslab {__version__} (simulated; iperf3 -J layout)",
        "system_info": f"qoslab simulation of scenario {s['scenario']}, seed {s['seed']}",
        "timestamp": {"time": "Thu, 01 Jan 1970 00:00:00 GMT", "timesecs": 0},
        "connecting_to": {"host": flows[0]["to"] if flows else "", "port": IPERF3_PORT},
        "cookie": "",
        "test_start": {
            "protocol": protocol,
            "num_streams": len(up) if bidir else len(flows),
            "blksize": 0,
            "omit": 0,
            "duration": round(duration) if duration == round(duration) else duration,
            "bytes": 0,
            "blocks": 0,
            "reverse": int(reverse_only),
            "tos": 0,
        },
    }

    def sender_side(f: dict[str, Any]) -> bool:
        # The iperf3 client's view: it sends the uploads and receives the downloads.
        return f["direction"] == "upload"

    intervals = []
    for k, (t0, t1) in enumerate(bounds):
        streams = []
        sums: dict[str, list[float]] = {"upload": [0.0, 0], "download": [0.0, 0]}
        for f in [*up, *down]:
            i = int(f["id"])
            nbytes = float(per["bytes"][k, i]) if "bytes" in per else 0.0
            extra: dict[str, Any] = {}
            if f["protocol"] == "tcp" and sender_side(f):
                extra["retransmits"] = int(per["retransmits"][k, i]) if "retransmits" in per else 0
                if "cwnd" in per and not np.isnan(per["cwnd"][k, i]):
                    extra["snd_cwnd"] = int(per["cwnd"][k, i])
                if "rtt_us" in per and not np.isnan(per["rtt_us"][k, i]):
                    extra["rtt"] = int(np.rint(per["rtt_us"][k, i]))
            extra["omitted"] = False
            streams.append(_block(i, t0, t1, nbytes, sender_side(f), **extra))
            acc = sums[f["direction"]]
            acc[0] += nbytes
            acc[1] += extra.get("retransmits", 0)
        entry: dict[str, Any] = {"streams": streams}
        for name, direction, flist in (
            ("sum", "upload" if not reverse_only else "download", up or down),
            ("sum_bidir_reverse", "download", down if bidir else []),
        ):
            if not flist:
                continue
            nbytes, retr = sums[direction]
            sender = direction == "upload"
            extra = {"retransmits": int(retr)} if protocol == "TCP" and sender else {}
            entry[name] = _block(None, t0, t1, nbytes, sender, **extra, omitted=False)
        intervals.append(entry)

    end: dict[str, Any] = {"streams": [_end_stream(f, sender_side(f)) for f in [*up, *down]]}
    for suffix, flist in (("", up or down), ("_bidir_reverse", down if bidir else [])):
        if not flist:
            continue
        sender = flist[0]["direction"] == "upload"
        total = float(sum(f["bytes"] for f in flist))
        if protocol == "UDP":
            sent = sum(int(f["packets_sent"]) for f in flist)
            lost = sum(int(f["packets_lost"]) for f in flist)
            udp = _udp_extra(sent, lost)
            if not suffix:
                end["sum"] = _block(None, 0.0, duration, total, sender, **udp)
            end[f"sum_sent{suffix}"] = _block(None, 0.0, duration, total, sender, **udp)
            end[f"sum_received{suffix}"] = _block(None, 0.0, duration, total, sender, **udp)
        else:
            retr = sum(int(f["retransmits"]) for f in flist)
            end[f"sum_sent{suffix}"] = _block(None, 0.0, duration, total, sender, retransmits=retr)
            end[f"sum_received{suffix}"] = _block(None, 0.0, duration, total, sender)
    end["cpu_utilization_percent"] = {
        k: 0.0
        for k in (
            "host_total",
            "host_user",
            "host_system",
            "remote_total",
            "remote_user",
            "remote_system",
        )
    }
    return {"start": start, "intervals": intervals, "end": end}


def _udp_extra(sent: int, lost: int) -> dict[str, Any]:
    return {
        "jitter_ms": 0.0,
        "lost_packets": lost,
        "packets": sent,
        "lost_percent": 100.0 * lost / sent if sent else 0.0,
    }


def _end_stream(f: dict[str, Any], sender: bool) -> dict[str, Any]:
    i = int(f["id"])
    t0, t1 = float(f["start_s"]), float(f["end_s"])
    nbytes = float(f["bytes"])
    if f["protocol"] == "udp":
        extra = _udp_extra(int(f["packets_sent"]), int(f["packets_lost"]))
        return {"udp": _block(i, t0, t1, nbytes, sender, **extra, out_of_order=0)}
    rtt = f["rtt_ms"]
    tcp: dict[str, Any] = {"retransmits": int(f["retransmits"])}
    if rtt["samples"]:  # iperf3 writes µs
        tcp.update(
            max_rtt=round(rtt["max"] * 1000),
            min_rtt=round(rtt["min"] * 1000),
            mean_rtt=round(rtt["mean"] * 1000),
        )
    return {
        "sender": _block(i, t0, t1, nbytes, sender, **tcp),
        "receiver": _block(i, t0, t1, nbytes, sender),
    }
