"""``qoslab meter`` and ``qoslab shape`` over a trace file, streamed.

The trace is read in chunks (:func:`qoslab.traceio.open_trace`), each chunk
runs through the conditioner with its state carried over
(``_core.MeterRun`` / ``_core.ShapeRun``), and the output CSV is written as
the run goes, through one atomic temporary. Nothing holds the whole trace:
resident memory is a chunk plus what is queued in the conditioner.

A meter colours every packet at once, so its output rows follow each chunk.
A shaper's departure is known only once the packet leaves, possibly many
chunks later, so ``qoslab shape --output`` reads the trace twice: the run
writes each departure (8 bytes) to an unnamed temporary file as it becomes
known, in trace order, and a second pass joins them to the rows. (Holding
the rows of every packet still queued instead would make memory grow with
the queue, without bound.)
"""

from __future__ import annotations

import csv
import os
import tempfile
from typing import IO, Any

import numpy as np

from qoslab import _core
from qoslab._core import TraceError
from qoslab.api import (
    ACTION_NAMES,
    COLOR_NAMES,
    _param_value,
    meter_summary,
    params_dict,
    policy_text,
    shape_summary,
)
from qoslab.cli import UsageError
from qoslab.traceio import LoadedTrace, TraceFileError, TraceStream, open_trace, replacing

#: Departure of a dropped packet in ``ShapeRun.take``.
_DROPPED = np.uint64(2**64 - 1)


def _refuse_columns(ts: TraceStream, names: list[str], new: tuple[str, ...]) -> None:
    for name in new:
        if name in names:
            raise TraceFileError(ts.path, ts.line_of(-1), f"input already has column '{name}'")


def run_meter(kind: str, params: dict[str, str], path: str, output: str | None) -> dict[str, Any]:
    """Meters trace ``path`` (writing ``output`` with ``color``/``action``
    columns); returns the summary the CLI prints."""
    run = _core.MeterRun(kind, params)
    described = params_dict(run.describe())
    packets, size_bytes = 0, 0
    color_names, action_names = np.array(COLOR_NAMES), np.array(ACTION_NAMES)
    with open_trace(path) as ts:
        # The incoming colour is kept as color_in, beside the new one.
        names = zip(ts.header, ts.names, strict=True)
        header = ["color_in" if n == "color" else h for h, n in names]
        if output:
            _refuse_columns(ts, [h.lower() for h in header], ("color", "action"))
        with _maybe_replacing(output) as f:
            w = csv.writer(f, lineterminator="\n") if f is not None else None
            if w is not None:
                w.writerow([*header, "color", "action"])
            for chunk in ts.chunks():
                try:
                    colors, actions = run.push(chunk.times_ns, chunk.sizes, chunk.colors)
                except TraceError as e:
                    raise ts.error(e.index, e.message) from None
                packets += len(chunk.rows)
                size_bytes += int(chunk.sizes.sum(dtype=np.uint64))
                if w is not None:
                    cn, an = color_names[colors].tolist(), action_names[actions].tolist()
                    w.writerows(map(_append2, chunk.rows, cn, an))
    s = meter_summary(run.summary())
    return {
        "command": "meter",
        "kind": described.get("kind", kind),
        "params": described,
        "input": path,
        "output": output,
        "packets": packets,
        "bytes": size_bytes,
        "colors": {c: {"packets": s["packets"][c], "bytes": s["bytes"][c]} for c in COLOR_NAMES},
        "dropped": s["dropped"],
        "remarked": s["remarked"],
    }


def shape_run(kind: str, params: dict[str, str], policy: str | None) -> Any:
    """The ``_core.ShapeRun`` of ``qoslab shape KIND`` / ``shape tree --policy``."""
    if kind.lower() != "tree":
        if policy is not None:
            raise UsageError(f"shape: --policy goes with KIND tree, not '{kind}'")
        return _core.ShapeRun.kind(kind, params)
    if policy is None:
        raise UsageError(
            "shape tree: --policy FILE.toml (or the TOML inline) is required "
            "(see 'qoslab shape --help')"
        )
    params = dict(params)
    rate = params.pop("rate", None)
    if params:
        extra = ", ".join(f"--{k}" for k in params)
        raise UsageError(
            f"shape tree: {extra}: a tree's parameters go in its --policy; "
            "only --rate (the link draining it) is given here"
        )
    text, file = policy_text(policy)
    return _core.ShapeRun.tree(text, file, None if rate is None else _param_value("rate", rate))


def run_shape(
    kind: str, params: dict[str, str], policy: str | None, path: str, output: str | None
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """Shapes trace ``path`` (writing ``output`` with ``departure_ns`` /
    ``dropped`` columns); returns (summary, class rows, parameters)."""
    run = shape_run(kind, params, policy)
    packets, size_bytes = 0, 0
    with open_trace(path) as ts:
        if output:
            _refuse_columns(ts, ts.names, ("departure_ns", "dropped"))
        with _departures_file(output) as deps:
            for chunk in ts.chunks():
                try:
                    run.push(chunk.times_ns, chunk.sizes, ts.header_columns(chunk))
                except TraceError as e:
                    raise ts.error(e.index, e.message) from None
                packets += len(chunk.rows)
                size_bytes += int(chunk.sizes.sum(dtype=np.uint64))
                _keep(run.take(), deps)
            try:
                raw = run.finish()
            except TraceError as e:
                raise ts.error(e.index, e.message) from None
            _keep(run.take(), deps)
            if deps is not None and output:
                deps.seek(0)
                # A trace read whole (stdin, a capture) is joined from memory.
                _join(path, ts.header, deps, output, ts if isinstance(ts, LoadedTrace) else None)
    summary = shape_summary(raw, packets, size_bytes)
    return summary, run.classes(), params_dict(run.describe())


def _keep(dep: Any, deps: IO[bytes] | None) -> None:
    if deps is not None:
        dep.tofile(deps)


def _join(
    path: str,
    header: list[str],
    deps: IO[bytes],
    output: str,
    loaded: LoadedTrace | None = None,
) -> None:
    """Second pass: the trace's rows with their departures (read back from
    ``deps`` chunk by chunk) written to ``output``."""
    with loaded if loaded is not None else open_trace(path) as ts, replacing(output) as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow([*header, "departure_ns", "dropped"])
        for chunk in ts.chunks():
            dep = np.fromfile(deps, dtype=np.uint64, count=len(chunk.rows))
            dropped = dep == _DROPPED
            text = dep.astype(str)
            text[dropped] = ""
            flag = np.where(dropped, "1", "0")
            w.writerows(map(_append2, chunk.rows, text.tolist(), flag.tolist()))


class _maybe_replacing:
    """``replacing(output)`` when there is an output, else ``None``."""

    def __init__(self, output: str | None) -> None:
        self._cm = replacing(output) if output else None

    def __enter__(self) -> IO[str] | None:
        return self._cm.__enter__() if self._cm is not None else None

    def __exit__(self, *exc: Any) -> bool | None:
        return self._cm.__exit__(*exc) if self._cm is not None else None


class _departures_file:
    """An unnamed temporary file for the departures, in the output's
    directory (so it counts against that disk, not memory; it vanishes when
    closed, even after SIGKILL), else the system's temporary directory
    (an output that is a FIFO or device); ``None`` without an output."""

    def __init__(self, output: str | None) -> None:
        self._output = output
        self._f: IO[bytes] | None = None

    def __enter__(self) -> IO[bytes] | None:
        if self._output:
            directory = os.path.dirname(os.path.realpath(self._output)) or "."
            try:
                self._f = tempfile.TemporaryFile(dir=directory)
            except OSError:
                self._f = tempfile.TemporaryFile()
        return self._f

    def __exit__(self, *exc: Any) -> None:
        if self._f is not None:
            self._f.close()


def _append2(row: list[str], a: str, b: str) -> list[str]:
    return [*row, a, b]
