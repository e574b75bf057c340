"""``qoslab analyze CAPTURE``: a pcap/pcapng capture in, the flows out.

The Rust crate ``qoslab-capture`` reads the capture (pcap or pcapng, also
``.xz``-compressed; Ethernet, Linux cooked, raw IP), groups packets into flows
(one per direction of a TCP connection or UDP 4-tuple) and analyses TCP as
Wireshark's expert info does (retransmissions: fast / RTO-class / spurious,
out-of-order, duplicate ACKs, SACK blocks, ``ack_rtt``, bytes in flight,
receive window). The result has the schema of ``qoslab run``'s (flows with
``goodput_bps``, ``retransmits``, ``rtt_ms``; series ``goodput``, ``rtt``,
``segments``), so ``--out`` and ``--report`` work as for a simulation, plus a
``capture`` section and the capture-only tables ``io`` (wire and payload
bytes per bin), ``acks`` (ACK and receive-window lines), ``sacks`` and
``inflight``. Times are nanoseconds from the capture's first record.

``--policing`` runs the detector of Flach et al., "An Internet-Wide Analysis
of Traffic Policing" (ACM SIGCOMM 2016) on every TCP flow, segment
(request/response) and direction; ``--format flach-csv`` prints the authors'
CSV rows (the file column is the capture's name without its extensions, plus
``.filtered`` when ``--port`` cut it down to one connection, as the authors'
files were named).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from qoslab import _core, outputs
from qoslab.results import SimulationResult, write_results
from qoslab.run import fmt_bytes, fmt_rate
from qoslab.traceio import TraceFile, TraceFileError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CaptureAnalysis", "analyze", "capture_name", "main", "policing"]

_EMPTY = {
    "cwnd": ("time_ns", "flow", "cwnd_bytes", "ssthresh_bytes", "state"),
    "queue": ("time_ns", "policy", "packets", "bytes", "tokens_bytes"),
    "colors": ("time_ns", "policy", "green_bytes", "yellow_bytes", "red_bytes", "dropped_bytes"),
    "ping": ("time_ns", "flow", "seq", "rtt_ns"),
}

#: Capture-only tables written beside the run-schema series.
CAPTURE_TABLES: tuple[str, ...] = ("io", "acks", "sacks", "inflight")

_CAPTURE_SUFFIXES = (".xz", ".gz", ".pcapng", ".pcap", ".cap")


def capture_name(path: str, port: int | None = None) -> str:
    """The capture's file name without its capture/compression extensions
    (``X.pcap.xz`` → ``X``); ``X.filtered`` when cut down to one port."""
    name = "stdin" if path == "-" else Path(path).name
    stripped = True
    while stripped:
        stripped = False
        for suffix in _CAPTURE_SUFFIXES:
            if name.endswith(suffix) and len(name) > len(suffix):
                name = name[: -len(suffix)]
                stripped = True
    return f"{name}.filtered" if port is not None else name


def _read(capture: str | os.PathLike[str] | bytes) -> tuple[bytes, str]:
    if isinstance(capture, bytes):
        return capture, "<bytes>"
    path = os.fspath(capture)
    if path == "-":
        return sys.stdin.buffer.read(), "-"
    with open(path, "rb") as f:
        return f.read(), path


def _jain(values: Sequence[float]) -> float:
    if len(values) < 2:
        return 1.0
    total = sum(values)
    squares = sum(v * v for v in values)
    return total * total / (len(values) * squares) if squares else 1.0


@dataclass
class CaptureAnalysis:
    """One analysed capture: ``result`` (a :class:`SimulationResult` with
    ``qoslab run``'s schema), ``raw`` (the Rust dict), capture-only tables."""

    raw: dict[str, Any] = field(repr=False)
    source: str
    name: str
    result: SimulationResult = field(init=False, repr=False)
    tables: dict[str, pd.DataFrame] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        raw = self.raw
        flows = [
            {
                "id": f["id"],
                "protocol": f["protocol"],
                "label": f"{f['from']} -> {f['to']}",
                "from": f["from"],
                "to": f["to"],
                "start_ns": f["start_ns"],
                "end_ns": f["end_ns"],
                "bytes_delivered": f["bytes_delivered"],
                "goodput_bps": f["goodput_bps"],
                "packets_sent": f["packets_sent"],
                "retransmits": f["retransmits"],
                # A capture cannot see losses, only what the sender resent.
                "packets_lost": f["retransmits"] - f["spurious_retransmits"],
                "timeouts": f["timeouts"],
                "fast_recoveries": f["fast_recoveries"],
                "rtt": f["rtt"],
            }
            for f in raw["flows"]
        ]
        series = dict(raw["series"])
        for name, cols in _EMPTY.items():
            series[name] = {c: np.zeros(0, dtype=np.uint64) for c in cols}
        sim_raw = {
            "name": self.name,
            "seed": 0,
            "duration_ns": raw["duration_ns"],
            "description": f"capture {self.source}: {raw['format']}, {raw['records']} records",
            "source": self.source,
            "record_interval_ns": raw["bin_ns"],
            "recorded": ["goodput", "rtt", "segments"],
            "sum_goodput_bps": sum(f["goodput_bps"] for f in flows),
            "jain_fairness": _jain([f["goodput_bps"] for f in flows if f["protocol"] == "tcp"]),
            "events": raw["records"],
            "flows": flows,
            "policies": [],
            "series": series,
        }
        self.result = SimulationResult(sim_raw)
        self.result.summary["capture"] = self._capture_summary()
        import pandas as pd  # here, not at import: `qoslab analyze --help` stays fast

        self.tables = {}
        for name in CAPTURE_TABLES:
            df = pd.DataFrame({k: np.asarray(v) for k, v in raw["series"][name].items()})
            df.insert(1, "time_s", df["time_ns"].to_numpy(dtype=np.float64) / 1e9)
            self.tables[name] = df

    def _capture_summary(self) -> dict[str, Any]:
        raw = self.raw
        keys = (
            "connection",
            "packets",
            "wire_bytes",
            "payload_bytes",
            "fast_retransmits",
            "rto_retransmits",
            "spurious_retransmits",
            "out_of_order",
            "lost_segments",
            "keep_alives",
            "dup_acks",
            "sack_blocks",
            "zero_windows",
            "max_bytes_in_flight",
            "mss",
            "wscale",
            "warnings",
        )
        return {
            "file": self.source,
            "format": raw["format"],
            "records": raw["records"],
            "ip_packets": raw["ip_packets"],
            "non_ip": raw["non_ip"],
            "malformed": raw["malformed"],
            "unknown_linktypes": [list(x) for x in raw["unknown_linktypes"]],
            "start_epoch_s": raw["start_epoch_ns"] / 1e9,
            "bin_s": raw["bin_ns"] / 1e9,
            "warnings": list(raw["warnings"]),
            "flows": [{"id": f["id"], **{k: f[k] for k in keys}} for f in raw["flows"]],
        }

    @property
    def summary(self) -> dict[str, Any]:
        return self.result.summary


def analyze(
    capture: str | os.PathLike[str] | bytes,
    *,
    bin: str | int = "100ms",
    port: int | None = None,
) -> CaptureAnalysis:
    """Analyse a capture file (path, ``"-"`` for stdin, or its bytes).
    ``bin`` is the IO-graph bin (``"100ms"`` or integer ns)."""
    data, source = _read(capture)
    bin_ns = bin if isinstance(bin, int) else _core.parse_time(bin)
    try:
        raw = _core.analyze_capture(data, bin_ns, port)
    except _core.CaptureError as e:
        raise TraceFileError(source, 0, str(e)) from None
    return CaptureAnalysis(raw, source, capture_name(source, port))


def policing(
    capture: str | os.PathLike[str] | bytes, *, port: int | None = None
) -> list[dict[str, Any]]:
    """The policing detector's rows (Flach et al., SIGCOMM 2016), one per
    TCP flow, segment and direction, with qoslab's labelled extensions."""
    data, source = _read(capture)
    try:
        return list(_core.policing_capture(data, port))
    except _core.CaptureError as e:
        raise TraceFileError(source, 0, str(e)) from None


class CaptureTraceFile(TraceFile):
    """A capture read as a trace (``qoslab meter|shape --input X.pcap``):
    columns ``time_ns`` (from the first record) and ``size_bytes`` (the
    frame's length on the wire); problems are located by record number."""

    def line_of(self, index: int) -> int:
        return index + 1

    def error(self, index: int, message: str) -> TraceFileError:
        return TraceFileError(self.path, 0, f"record {index + 1}: {message}")


def capture_trace_file(path: str, data: bytes) -> TraceFile:
    try:
        raw = _core.capture_trace(data)
    except _core.CaptureError as e:
        raise TraceFileError(path, 0, str(e)) from None
    times = np.asarray(raw["time_ns"], dtype=np.uint64)
    sizes = np.asarray(raw["size_bytes"], dtype=np.uint64)
    for w in raw["warnings"]:
        print(f"qoslab: warning: {path}: {w}", file=sys.stderr)
    rows = [[str(t), str(s)] for t, s in zip(times.tolist(), sizes.tolist(), strict=True)]
    return CaptureTraceFile(
        path=path,
        header=["time_ns", "size_bytes"],
        rows=rows,
        times_ns=times,
        sizes=sizes,
        colors=None,
        _text="",
    )


# --- output ----------------------------------------------------------------


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.1f}"


def _flow_name(f: Mapping[str, Any]) -> str:
    return f"{f['protocol']} {f['from']} -> {f['to']}"


def render_table(ca: CaptureAnalysis, width: int | None = None, color: bool = False) -> str:
    """The capture's header line, then rich tables (:func:`qoslab.table.rich_tables`,
    cut to ``width``): a line per flow as iperf3 totals it (interval,
    transfer, bitrate, retransmits), TCP loss as Wireshark's expert info
    counts it, RTT percentiles as ``qoslab run`` prints them; then the
    warnings."""
    from qoslab.table import Table, rich_tables

    raw = ca.raw
    head = (
        f"capture {ca.source}: {raw['format']}, {raw['records']} records "
        f"({raw['ip_packets']} IP), {raw['duration_ns'] / 1e9:.2f} s"
    )
    tables: list[Table] = []
    if raw["flows"]:
        flows = [
            [
                f"[{f['id']:>3}]",
                _flow_name(f),
                f"{f['start_ns'] / 1e9:.2f}-{f['end_ns'] / 1e9:.2f}",
                fmt_bytes(f["bytes_delivered"]),
                fmt_rate(f["goodput_bps"]).strip(),
                str(f["retransmits"]),
            ]
            for f in raw["flows"]
        ]
        cols = [("[ ID]", "left"), ("flow", "left"), ("interval s", "right")]
        cols += [(c, "right") for c in ("transfer", "bitrate", "retr")]
        tables.append(("", cols, flows))
    tcp = [f for f in raw["flows"] if f["protocol"] == "tcp"]
    if tcp:
        loss = []
        for f in tcp:
            sent = f["packets_sent"]
            loss.append(
                [
                    f"[{f['id']:>3}]",
                    str(sent),
                    str(f["retransmits"]),
                    f"{100.0 * f['retransmits'] / sent:.1f}" if sent else "-",
                    *(
                        str(f[k])
                        for k in (
                            "fast_retransmits",
                            "rto_retransmits",
                            "spurious_retransmits",
                            "out_of_order",
                            "dup_acks",
                            "sack_blocks",
                            "max_bytes_in_flight",
                        )
                    ),
                ]
            )
        cols = [("[ ID]", "left")] + [
            (c, "right")
            for c in (
                "data segs",
                "retr",
                "retr%",
                "fast",
                "RTO",
                "spurious",
                "out-of-order",
                "dup ACKs",
                "SACK blocks",
                "max in flight B",
            )
        ]
        tables.append(("loss (TCP, as Wireshark's expert info)", cols, loss))
        rtt = []
        for f in tcp:
            r = f["rtt"]
            ms = [_ms(r[k]) for k in ("min_ns", "p50_ns", "p95_ns", "max_ns")]
            rtt.append([f"[{f['id']:>3}]", *(ms if r["samples"] else ["-"] * 4), str(r["samples"])])
        cols = [("RTT (ms)", "left")] + [
            (c, "right") for c in ("min", "p50", "p95", "max", "samples")
        ]
        tables.append(("", cols, rtt))
    text = head
    if not raw["flows"]:
        text += "\nno TCP or UDP flow with data"
    if tables:
        text += "\n" + rich_tables(tables, width, color).lstrip("\n")
    warnings = [f"[{f['id']:>3}] warning: {w}" for f in tcp for w in f["warnings"]]
    warnings += [f"warning: {w}" for w in raw["warnings"]]
    return "\n".join([text, *warnings])


def _pick(rows: Sequence[Mapping[str, Any]], direction: str) -> list[Mapping[str, Any]]:
    return [r for r in rows if direction == "both" or r["direction"] == direction]


def render_policing(
    rows: Sequence[Mapping[str, Any]], width: int | None = None, color: bool = False
) -> str:
    """The policing detector's verdict per flow, segment and direction, as
    a rich table (the JSON's ``policing`` rows)."""
    from qoslab.table import rich_tables

    title = "policing (Flach et al., SIGCOMM 2016; bucket, wire rate, verdict: qoslab extensions):"
    shown = [r for r in rows if r["data_packets"] > 0]
    if not shown:
        return f"{title}\n  no TCP data to analyse"
    cols = [(c, "right") for c in ("flow", "segment")] + [("direction", "left"), ("path", "left")]
    cols += [("data packets", "right"), ("lost", "right"), ("verdict", "wrap")]
    cells = [
        [
            str(r["flow"]),
            str(r["segment"]),
            r["direction"],
            f"{r['from']} -> {r['to']}",
            str(r["data_packets"]),
            str(r["losses"]),
            r["verdict"],
        ]
        for r in shown
    ]
    return rich_tables([(title, cols, cells)], width, color).lstrip("\n")


def flach_csv(rows: Sequence[Mapping[str, Any]], file: str, direction: str = "b2a") -> list[str]:
    """The published CSV rows (``validation.csv`` of USC-NSL/policing-detection)."""
    return [f"{file},{r['flach_csv']}" for r in _pick(rows, direction)]


# --- CLI -------------------------------------------------------------------


def _as_run_text(ca: CaptureAnalysis) -> str:
    return (
        "# qoslab analyze: no scenario; these results were computed from the capture\n"
        f"# {ca.source} ({ca.raw['format']}, {ca.raw['records']} records, "
        f"bin {ca.raw['bin_ns']} ns)\n"
    )


def main(args: argparse.Namespace) -> int:
    """``qoslab analyze``: returns the exit status; errors propagate to the CLI
    (``TraceFileError`` for an unreadable capture, ``ValueError`` for usage)."""
    import json

    if args.format == "flach-csv" and not args.policing:
        raise ValueError("--format flach-csv prints the policing detector's rows: add --policing")
    if args.format == "flach-csv" and (args.json or args.out or args.report is not None):
        raise ValueError("--format flach-csv prints CSV only (no --json, --out or --report)")
    report_path = outputs.check_run_outputs(args.out, args.report, [args.capture])
    data, source = _read(args.capture)
    if args.format == "flach-csv":
        found = policing(data, port=args.port)
        for line in flach_csv(found, capture_name(source, args.port), args.direction or "b2a"):
            print(line)
        return 0
    try:
        raw = _core.analyze_capture(data, args.bin, args.port)
    except _core.CaptureError as e:
        raise TraceFileError(source, 0, str(e)) from None
    ca = CaptureAnalysis(raw, source, capture_name(source, args.port))
    rows: list[Mapping[str, Any]] = []
    if args.policing:
        rows = _pick(policing(data, port=args.port), args.direction or "both")
        ca.summary["policing"] = rows
    if args.out is not None:
        write_results(args.out, ca.result, _as_run_text(ca), extra_tables=ca.tables)
    if report_path is not None:
        from qoslab import report

        report.run_report(ca.result, _as_run_text(ca), title=f"qoslab analyze: {ca.name}").write(
            report_path
        )
    if args.json:
        print(json.dumps(ca.summary, indent=2))
        return 0
    from qoslab.table import terminal

    width, color = terminal()
    print(render_table(ca, width, color))
    if args.policing:
        print()
        print(render_policing(rows, width, color))
    if args.out:
        print(f"wrote {args.out}")
    if report_path is not None:
        print(f"wrote {report_path}")
    return 0
