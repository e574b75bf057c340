"""Simulation results as pandas DataFrames, a JSON-ready summary, and files.

``qoslab.simulate(...)`` returns a :class:`SimulationResult`. Its tables
(``flows``, ``policies`` and the recorded series ``goodput``, ``rtt``,
``cwnd``, ``queue``, ``colors``, ``ping``, ``segments``) are DataFrames
built from the NumPy columns the Rust engine returns; times are integer
nanoseconds (``time_ns``), with a float ``time_s`` beside them for plots.
The same columns without pandas: ``SimulationResult.arrays(name)`` (what the
figures read, so ``qoslab run --report`` never imports pandas).

NumPy itself is imported only when a column is: ``qoslab run`` asks the
engine for :class:`qoslab._core.Column` columns (``numpy=False``), prints its
table from the summary and the columns' plain values (:meth:`SimulationResult.columns`),
and never imports NumPy unless an output needs it (``--out``, ``--report``,
``--format iperf3``). For the Python API nothing changes: ``raw``,
``arrays()`` and the DataFrames hold NumPy arrays, converted on first access.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qoslab import outputs
from qoslab._core import Column
from qoslab._params import params_dict

if TYPE_CHECKING:
    import numpy as np
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
            "direction": _direction(f["from"], f["to"]),
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
            "classes": _classes(p, raw["duration_ns"]),
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


def _classes(p: Mapping[str, Any], duration_ns: int) -> list[dict[str, Any]]:
    """The classes of a policy tree, each with its own ``class id=...``
    parameters from the policy's description (matched by the user's id)."""
    by_id: dict[str, dict[str, str]] = {}
    for k, v in p["describe"]:
        if k == "class":
            d = _split_params(v)
            by_id[d.get("id", "")] = d
    return [_class_summary(c, by_id, duration_ns) for c in p.get("classes", [])]


def _class_summary(
    c: Mapping[str, Any], params: Mapping[str, Any], duration_ns: int
) -> dict[str, Any]:
    """One class of a policy tree: its parameters (as ``tc class show``
    gives them; ``{}`` for the root and inner qdiscs), counters, drops and
    colours by stage."""
    return {
        "name": c["name"],
        "params": dict(params.get(str(c["name"]), {})),
        "kind": c["kind"],
        "parent": c["parent"],
        "packets_in": c["packets_in"],
        "bytes_in": c["bytes_in"],
        "packets_out": c["packets_out"],
        "bytes_out": c["bytes_out"],
        # What the class sent, averaged over the run (bit/s).
        "throughput_bps": c["bytes_out"] * 8e9 / duration_ns if duration_ns > 0 else 0.0,
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


def _direction(src: str, dst: str) -> str:
    """``upload`` or ``download``, as iperf3 ``--bidir`` splits its streams
    (``TX-C`` / ``RX-C``): in the dumbbell, senders ``s0..`` are the clients
    and receivers ``d0..`` the servers, so a flow from a ``d`` host to an
    ``s`` host (a ``tcp-fetch`` response, a reverse UDP stream) is a
    download. Hosts of an explicit ``[[link]]`` topology have no sides: their
    flows are all ``upload``."""
    if _SIDE.fullmatch(src) and _SIDE.fullmatch(dst) and src[0] == "d" and dst[0] == "s":
        return "download"
    return "upload"


_SIDE = re.compile(r"[sd][0-9]+")


def _split_params(text: str) -> dict[str, str]:
    """``id=20 parent=root rate=2mbit child=[kind=fifo limit=1000p]`` as a
    dict (a bracketed value keeps its spaces)."""
    out: dict[str, str] = {}
    depth = 0
    word: list[str] = []
    words: list[str] = []
    for ch in text:
        if ch == " " and depth == 0:
            if word:
                words.append("".join(word))
            word = []
            continue
        depth += (ch == "[") - (ch == "]")
        word.append(ch)
    if word:
        words.append("".join(word))
    for w in words:
        k, eq, v = w.partition("=")
        if eq:
            out[k] = v.removeprefix("[").removesuffix("]") if v.startswith("[") else v
    return out


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """``rows`` (summary dicts) as a DataFrame whose columns are the JSON
    keys, nested ones joined with a dot (``rtt_ms.p95``, ``drops.packets``):
    the names of results.json, one naming everywhere."""
    import pandas as pd  # on first use: `import qoslab` and `qoslab run` stay light

    if not rows:
        return pd.DataFrame()
    return pd.json_normalize(rows, sep=".")


def _series_arrays(
    name: str, cols: Mapping[str, np.ndarray], interval_ns: int
) -> dict[str, np.ndarray]:
    """A recorded series as NumPy columns, in the DataFrame's order: the raw
    columns with ``time_s`` second and the derived ``goodput_bps`` /
    ``rtt_ms`` last. The figures of a report read these (no pandas import,
    ~0.4-0.9 s); the DataFrames are built from them, so both agree."""
    import numpy as np

    raw = {k: np.asarray(v) for k, v in cols.items()}
    out: dict[str, np.ndarray] = {}
    for i, (k, v) in enumerate(raw.items()):
        if i == 1 and "time_ns" in raw:
            out["time_s"] = raw["time_ns"].astype(np.float64) / 1e9
        out[k] = v
    if len(raw) == 1 and "time_ns" in raw:
        out["time_s"] = raw["time_ns"].astype(np.float64) / 1e9
    if name == "goodput" and interval_ns > 0:
        out["goodput_bps"] = raw["bytes"].astype(np.float64) * 8e9 / interval_ns
    if name in ("rtt", "ping"):
        out["rtt_ms"] = raw["rtt_ns"].astype(np.float64) / 1e6
    return out


class SimulationResult:
    """One simulation run: ``summary`` (the JSON-ready dict of results.json)
    and DataFrames, each built on first access (so ``qoslab run``'s table and
    ``--json`` never import pandas):

    * ``flows`` -- one row per flow, the columns of ``summary["flows"]``
      (``id``, ``label``, ``protocol``, ``from``, ``to``, ``direction``,
      ``start_s``, ``end_s``, ``goodput_bps``, ``bytes``, ``packets_sent``,
      ``retransmits``, ``packets_lost``, ``timeouts``, ``fast_recoveries``,
      ``rtt_ms.min`` .. ``rtt_ms.samples``);
    * ``policies`` -- one row per policy (``drops.packets``,
      ``colors.green.bytes``, ``params.cir``...); ``classes`` -- one row per
      class of every policy tree, its ``policy`` beside it;
    * the recorded series ``goodput``, ``rtt``, ``cwnd``, ``queue``,
      ``colors``, ``ping``, ``segments`` (also the CSV/Parquet files).
    """

    def __init__(self, raw: dict[str, Any]) -> None:
        self._raw = raw
        self._numpy = False  # the series columns of _raw are not all NumPy yet
        self.summary: dict[str, Any] = _summary(raw)
        self._arrays: dict[str, dict[str, np.ndarray]] = {}

    @property
    def raw(self) -> dict[str, Any]:
        """The engine's result dict (``qoslab._core.simulate_toml``), its
        series columns NumPy arrays: engine ``Column`` s are converted (in
        place, once) on first access, which imports NumPy."""
        if not self._numpy:
            _columns_to_numpy(self._raw)
            self._numpy = True
        return self._raw

    def __reduce__(self) -> tuple[Any, ...]:
        # Columns do not pickle: a result travels with NumPy columns.
        return (SimulationResult, (self.raw,))

    @property
    def duration_ns(self) -> int:
        """The simulated (or emulated) duration, ns."""
        return int(self._raw["duration_ns"])

    @property
    def record_interval_ns(self) -> int:
        """The interval of the recorded series (``[record] interval``), ns."""
        return int(self._raw["record_interval_ns"])

    def columns(self, name: str) -> Mapping[str, Any]:
        """The recorded series ``name`` as the engine returned it, without
        converting anything: NumPy arrays, or ``qoslab._core.Column`` s
        (``len()``, ``tolist()``, ``numpy.asarray()``) before :attr:`raw`
        is read. What reads only plain values (the terminal table) reads
        these, so NumPy is not imported for it."""
        cols: Mapping[str, Any] = self._raw["series"][name]
        return cols

    def __repr__(self) -> str:
        s = self.summary
        return (
            f"SimulationResult(scenario={s['scenario']!r}, seed={s['seed']}, "
            f"duration_s={s['duration_s']:g}, flows={len(s['flows'])}, "
            f"sum_goodput_bps={s['sum_goodput_bps']:.0f})"
        )

    @cached_property
    def flows(self) -> pd.DataFrame:
        return _frame(
            [{k: v for k, v in f.items() if k != "chunks"} for f in self.summary["flows"]]
        )

    @cached_property
    def policies(self) -> pd.DataFrame:
        return _frame(
            [{k: v for k, v in p.items() if k != "classes"} for p in self.summary["policies"]]
        )

    @cached_property
    def classes(self) -> pd.DataFrame:
        rows = [{"policy": p["name"], **c} for p in self.summary["policies"] for c in p["classes"]]
        return _frame(rows)

    def arrays(self, name: str) -> dict[str, np.ndarray]:
        """The recorded series ``name`` as NumPy columns (those of its
        DataFrame, ``time_s``, ``goodput_bps`` and ``rtt_ms`` included),
        without pandas; built once."""
        if name not in self._arrays:
            interval = self.record_interval_ns
            self._arrays[name] = _series_arrays(name, self.raw["series"][name], interval)
        return self._arrays[name]

    def rows(self, name: str) -> int:
        """The number of rows of the recorded series ``name`` (0 when empty)."""
        return _rows(self._raw["series"][name])

    def _series(self, name: str) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.arrays(name))

    goodput = cached_property(lambda self: self._series("goodput"))
    rtt = cached_property(lambda self: self._series("rtt"))
    cwnd = cached_property(lambda self: self._series("cwnd"))
    queue = cached_property(lambda self: self._series("queue"))
    colors = cached_property(lambda self: self._series("colors"))
    ping = cached_property(lambda self: self._series("ping"))
    segments = cached_property(lambda self: self._series("segments"))

    @property
    def recorded(self) -> list[str]:
        """The series the scenario asked for (``[record] series``)."""
        return list(self._raw["recorded"])

    def series(self) -> dict[str, pd.DataFrame]:
        """The non-empty series tables, by name."""
        return {n: getattr(self, n) for n in SERIES_TABLES if _rows(self._raw["series"][n])}

    def to_json(self) -> str:
        return json.dumps(self.summary, indent=2)

    def to_iperf3(self) -> dict[str, Any]:
        """The run in iperf3's ``-J`` layout (:mod:`qoslab.iperf3json`)."""
        from qoslab.iperf3json import iperf3_json

        return iperf3_json(self)

    def table(self, **kw: Any) -> str:
        """The terminal table ``qoslab run`` prints (:func:`qoslab.table.render`)."""
        from qoslab.table import render

        return render(self, **kw)

    def plot(self, kind: str | None = None) -> Any:
        """Figures of :mod:`qoslab.plots`: ``kind`` one of its figure names
        (``"io_graph"``, ``"rtt_time"``, ``"cwnd"``, ``"queue"``,
        ``"colors"``, ``"ping"``, ``"rtt_cdf"``, ``"goodput_cdf"``...) gives
        that matplotlib Figure (``None`` when the series was not recorded);
        no ``kind`` gives every figure the run has, by name."""
        from qoslab import plots

        if kind is None:
            return plots.figures(self)
        fn = getattr(plots, kind, None)
        if kind.startswith("_") or not callable(fn) or kind in ("figures", "save", "labelled"):
            raise ValueError(f"plot: unknown figure '{kind}'")
        return fn(self)

    def _repr_html_(self) -> str:
        """Jupyter's view: the run's summary table (flows, policies)."""
        from qoslab.table import render_html

        return render_html(self)


def _rows(cols: Mapping[str, Any]) -> int:
    return len(next(iter(cols.values()))) if cols else 0


def _columns_to_numpy(raw: dict[str, Any]) -> None:
    """Replaces each engine ``Column`` of ``raw["series"]`` by its NumPy
    array (the array ``simulate_toml(numpy=True)`` returns: same dtype and
    values), so the Column's copy is freed as the array is made."""
    series = raw.get("series") or {}
    if not any(isinstance(v, Column) for cols in series.values() for v in cols.values()):
        return
    import numpy as np

    for cols in series.values():
        for k, v in cols.items():
            if isinstance(v, Column):
                cols[k] = np.asarray(v)


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
    import shutil

    with open(src, "rb") as s:
        shutil.copyfileobj(s, f)
