"""Simulation results as pandas DataFrames, a JSON-ready summary, and files.

``qoslab.simulate(...)`` returns a :class:`SimulationResult`. Its tables
(``flows``, ``policies`` and the recorded series ``goodput``, ``rtt``,
``cwnd``, ``queue``, ``colors``, ``ping``, ``segments``) are DataFrames
built from the NumPy columns the Rust engine returns; times are integer
nanoseconds (``time_ns``), with a float ``time_s`` beside them for plots.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from qoslab import outputs
from qoslab.api import params_dict

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SERIES_TABLES", "SimulationResult", "check_out_dir", "write_results"]

#: The series tables a result may hold, in output order.
SERIES_TABLES: tuple[str, ...] = ("goodput", "rtt", "cwnd", "queue", "colors", "ping", "segments")

_COLORS = ("green", "yellow", "red")


def _ms(ns: float) -> float:
    return round(float(ns) / 1e6, 3)


def _rtt_ms(rtt: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "min": _ms(rtt["min_ns"]),
        "mean": _ms(rtt["mean_ns"]),
        "p50": _ms(rtt["p50_ns"]),
        "p95": _ms(rtt["p95_ns"]),
        "max": _ms(rtt["max_ns"]),
        "samples": int(rtt["samples"]),
        # "histogram" (p50/p95 within 0.4 %) or "exact" ([record] rtt_percentiles)
        "percentiles": str(rtt.get("percentiles", "exact")),
    }


def _chunk(c: Mapping[str, Any]) -> dict[str, Any]:
    """One response of a tcp-fetch flow, timed at the server (start: the
    request arrives; end: the ACK of its last byte arrives)."""
    end = c["end_ns"]
    done = c["client_done_ns"]
    return {
        "index": c["index"],
        "request_s": c["request_ns"] / 1e9,
        "start_s": c["start_ns"] / 1e9,
        "end_s": None if end is None else end / 1e9,
        "duration_s": None if end is None else (end - c["start_ns"]) / 1e9,
        "client_done_s": None if done is None else done / 1e9,
        "bytes": c["bytes"],
        "bytes_acked": c["bytes_acked"],
        "goodput_bps": c["goodput_bps"],
        "retransmits": c["retransmits"],
        "packets_lost": c["packets_lost"],
        "timeouts": c["timeouts"],
        "fast_recoveries": c["fast_recoveries"],
        "request_retries": c["request_retries"],
    }


def _summary(raw: Mapping[str, Any]) -> dict[str, Any]:
    flows = [
        {
            "id": f["id"],
            "label": f["label"],
            "protocol": f["protocol"],
            "from": f["from"],
            "to": f["to"],
            "start_s": f["start_ns"] / 1e9,
            "end_s": f["end_ns"] / 1e9,
            "goodput_bps": f["goodput_bps"],
            "bytes": f["bytes_delivered"],
            "packets_sent": f["packets_sent"],
            "retransmits": f["retransmits"],
            "packets_lost": f["packets_lost"],
            "timeouts": f["timeouts"],
            "fast_recoveries": f["fast_recoveries"],
            "rtt_ms": _rtt_ms(f["rtt"]),
            **({"chunks": [_chunk(c) for c in f["chunks"]]} if f.get("chunks") else {}),
        }
        for f in raw["flows"]
    ]
    policies = [
        {
            "name": p["name"],
            "kind": p["kind"],
            "params": params_dict(p["describe"]),
            "packets_in": p["packets_in"],
            "bytes_in": p["bytes_in"],
            "drops": {"packets": p["packets_dropped"], "bytes": p["bytes_dropped"]},
            "colors": {
                c: {"packets": p["color_packets"][i], "bytes": p["color_bytes"][i]}
                for i, c in enumerate(_COLORS)
            },
            "max_queue_packets": p["max_queue_packets"],
            "max_queue_bytes": p["max_queue_bytes"],
            "classes": [_class_summary(c) for c in p.get("classes", [])],
        }
        for p in raw["policies"]
    ]
    out = {
        "mode": raw.get("mode", "simulate"),
        "scenario": raw["name"],
        "seed": raw["seed"],
        "duration_s": raw["duration_ns"] / 1e9,
        "description": raw["description"],
        "source": raw["source"],
        "flows": flows,
        "sum_goodput_bps": raw["sum_goodput_bps"],
        "jain_fairness": raw["jain_fairness"],
        "policies": policies,
        "events": raw["events"],
    }
    if "emulation" in raw:  # how the emulator ran it: backend, kernel, forwarder timing
        out["emulation"] = raw["emulation"]
    return out


def _class_summary(c: Mapping[str, Any]) -> dict[str, Any]:
    """One class of a policy tree: counters, drops and colours by stage."""
    return {
        "name": c["name"],
        "kind": c["kind"],
        "parent": c["parent"],
        "packets_in": c["packets_in"],
        "bytes_in": c["bytes_in"],
        "packets_out": c["packets_out"],
        "bytes_out": c["bytes_out"],
        "drops": {"packets": c["packets_dropped"], "bytes": c["bytes_dropped"]},
        "colors": {
            col: {
                "in": c["color_packets_in"][i],
                "out": c["color_packets_out"][i],
                "dropped": c["color_packets_dropped"][i],
            }
            for i, col in enumerate(_COLORS)
        },
        "max_queue_packets": c["max_queue_packets"],
        "max_queue_bytes": c["max_queue_bytes"],
    }


def _flows_frame(raw: Mapping[str, Any]) -> pd.DataFrame:
    import pandas as pd  # on first use: `import qoslab` stays light

    rows = []
    for f in raw["flows"]:
        row = {k: v for k, v in f.items() if k != "rtt"}
        for k, v in f["rtt"].items():
            row[f"rtt_{k}"] = v
        rows.append(row)
    return pd.DataFrame(rows)


def _policies_frame(raw: Mapping[str, Any]) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for p in raw["policies"]:
        skip = ("color_packets", "color_bytes", "describe", "classes")
        row = {k: v for k, v in p.items() if k not in skip}
        for i, c in enumerate(_COLORS):
            row[f"{c}_packets"] = p["color_packets"][i]
            row[f"{c}_bytes"] = p["color_bytes"][i]
        row["params"] = " ".join(f"{k}={v}" for k, v in p["describe"])
        rows.append(row)
    return pd.DataFrame(rows)


def _series_frame(name: str, cols: Mapping[str, np.ndarray], interval_ns: int) -> pd.DataFrame:
    import pandas as pd

    df = pd.DataFrame({k: np.asarray(v) for k, v in cols.items()})
    if "time_ns" in df:
        df.insert(1, "time_s", df["time_ns"].to_numpy(dtype=np.float64) / 1e9)
    if name == "goodput" and interval_ns > 0:
        df["goodput_bps"] = df["bytes"].to_numpy(dtype=np.float64) * 8e9 / interval_ns
    if name in ("rtt", "ping"):
        df["rtt_ms"] = df["rtt_ns"].to_numpy(dtype=np.float64) / 1e6
    return df


@dataclass
class SimulationResult:
    """One simulation run: ``summary`` (JSON-ready dict) and DataFrames."""

    raw: dict[str, Any] = field(repr=False)
    summary: dict[str, Any] = field(init=False)
    flows: pd.DataFrame = field(init=False, repr=False)
    policies: pd.DataFrame = field(init=False, repr=False)
    goodput: pd.DataFrame = field(init=False, repr=False)
    rtt: pd.DataFrame = field(init=False, repr=False)
    cwnd: pd.DataFrame = field(init=False, repr=False)
    queue: pd.DataFrame = field(init=False, repr=False)
    colors: pd.DataFrame = field(init=False, repr=False)
    ping: pd.DataFrame = field(init=False, repr=False)
    segments: pd.DataFrame = field(init=False, repr=False)

    def __post_init__(self) -> None:
        raw = self.raw
        self.summary = _summary(raw)
        self.flows = _flows_frame(raw)
        self.policies = _policies_frame(raw)
        interval = int(raw["record_interval_ns"])
        for name in SERIES_TABLES:
            setattr(self, name, _series_frame(name, raw["series"][name], interval))

    @property
    def recorded(self) -> list[str]:
        """The series the scenario asked for (``[record] series``)."""
        return list(self.raw["recorded"])

    def series(self) -> dict[str, pd.DataFrame]:
        """The non-empty series tables, by name."""
        return {n: getattr(self, n) for n in SERIES_TABLES if len(getattr(self, n))}

    def to_json(self) -> str:
        return json.dumps(self.summary, indent=2)


def check_out_dir(
    out_dir: str | os.PathLike[str], inputs: Iterable[object] = (), option: str = "--out"
) -> Path:
    """Refuses (``OSError`` naming ``out_dir``) a directory that
    :func:`write_results` would refuse; commands call this before they run,
    so a long run is not lost to a bad ``--out``. See :mod:`qoslab.outputs`."""
    return outputs.check_dir(out_dir, option, inputs)


def write_results(
    out_dir: str | os.PathLike[str],
    result: SimulationResult,
    scenario_text: str,
    extra_tables: Mapping[str, pd.DataFrame] | None = None,
    extra_files: Mapping[str, Path] | None = None,
) -> Path:
    """Writes ``results.json``, each non-empty series as CSV and Parquet, and
    ``scenario.toml`` into ``out_dir`` as one unit (:func:`qoslab.outputs.write_dir`):
    each file is replaced atomically and only once all are written, the
    user's other files in ``out_dir`` are kept, and files an earlier run
    wrote there but this one does not are deleted. A non-empty directory that
    is not a qoslab output is refused. ``extra_tables`` (e.g. a capture's
    ``io``, ``acks``) are written beside the series, same formats.
    ``extra_files`` (name → an existing file, e.g. a pcap the run wrote into a
    scratch directory) are copied in under that name, in the same unit.
    """
    files: dict[str, tuple[outputs.Writer, bool]] = {
        "results.json": (lambda f: f.write(result.to_json() + "\n"), False),
        "scenario.toml": (lambda f: f.write(scenario_text), False),
    }
    tables = {**result.series(), **(extra_tables or {})}
    for name, df in tables.items():
        files[f"{name}.csv"] = (lambda f, df=df: df.to_csv(f, index=False), False)
        files[f"{name}.parquet"] = (lambda f, df=df: df.to_parquet(f, index=False), True)
    for name, src in (extra_files or {}).items():
        files[name] = (lambda f, src=src: _copy_into(src, f), True)
    return outputs.write_dir(out_dir, files)


def _copy_into(src: Path, f: Any) -> None:
    with open(src, "rb") as s:
        shutil.copyfileobj(s, f)
