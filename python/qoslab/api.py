"""Vectorised Python API: run whole traces (NumPy arrays) through qoslab-core.

Every function takes the conditioner ``kind`` plus its parameters as keyword
arguments. Values may be strings in tc units (``cir="20mbit"``, ``cbs="3000B"``)
or numbers, which mean what a bare number means to tc (bit/s for rates, bytes for
sizes, µs for times, not ns); they are handed to Rust as strings, where all unit
parsing happens.

There is no Python loop per packet: arrays are validated with NumPy and the
packets run in Rust with the GIL released, in slices of 16,384 packets with a
signal check between them (Ctrl-C raises ``KeyboardInterrupt`` at once).

Errors: every exception qoslab raises is a :class:`QoslabError`, and also the
built-in class it always was:

- :class:`ConfigError` (a ``ValueError``): a bad parameter or kind;
  ``.param`` names it, ``.message`` says why.
- :class:`TraceError` (a ``ValueError``): a bad packet; ``.index`` is its
  0-based index, ``.message`` says why. Arrays of the wrong shape, length or
  type are also ``TraceError``s (``.index`` 0).
- :class:`ScenarioError` (a ``ValueError``): a bad policy tree or scenario,
  located ``file:line:col``; a missing policy file too.
- :class:`ResourceError` (a ``MemoryError``): a result that cannot be
  allocated, or a simulation over its memory limit.

A ``KeyboardInterrupt`` (``qoslab.Cancelled`` from ``simulate``) is not an
error and is not a ``QoslabError``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from qoslab import _core
from qoslab._core import ConfigError, ResourceError, ScenarioError, TraceError

# Re-exported: they lived here first (tracecmd, report and tests import them from here).
from qoslab._params import LIST_KEYS as LIST_KEYS
from qoslab._params import params_dict as params_dict
from qoslab._params import params_lines as params_lines
from qoslab.errors import QoslabError

__all__ = [
    "COLOR_NAMES",
    "ConfigError",
    "PoliceResult",
    "QoslabError",
    "ResourceError",
    "ScenarioError",
    "ShapeResult",
    "TraceError",
    "color",
    "describe",
    "meter_kinds",
    "police",
    "shape",
    "shaper_kinds",
]

#: Colour codes used in arrays: index = code.
COLOR_NAMES: tuple[str, str, str] = ("green", "yellow", "red")
#: Action codes used in arrays (``qoslab_core::Action::code``): index = code.
ACTION_NAMES: tuple[str, str, str] = ("transmit", "drop", "remark")

#: Arrival times must be below 2^62 ns (about 146 years): the core's time
#: horizon (``qoslab_core::time::TIME_HORIZON_NS``), which leaves room for
#: every delay below the 2^63 ns of the int64 departures returned.
TIME_HORIZON_NS = 2**62
_TIME_MAX = TIME_HORIZON_NS - 1


F = TypeVar("F", bound=Callable[..., Any])


def _resource_errors(f: F) -> F:
    """Turns a ``MemoryError`` that NumPy raises while checking or converting
    the arrays into a :class:`ResourceError` (also a ``MemoryError``)."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return f(*args, **kwargs)
        except ResourceError:
            raise
        except MemoryError as e:
            raise ResourceError(
                f"out of memory: {e or 'an array could not be allocated'}"
            ) from None

    return wrapper  # type: ignore[return-value]


def meter_kinds() -> dict[str, str]:
    """Meter kinds and their one-line descriptions (the kind registry's)."""
    return {k: d for k, _family, d in _core.meter_kinds()}


def shaper_kinds() -> dict[str, str]:
    """Kinds ``shape`` runs and their one-line descriptions, in the kind
    registry's order: queues, AQMs, classless and classful schedulers,
    shapers; all but the shapers also need ``rate`` (the link draining
    them), and htb / drr need a whole tree (``shape_policy``)."""
    return {k: d for k, _family, d in _core.shaper_kinds()}


def kind_families() -> dict[str, str]:
    """Every kind's family (meter, queue, aqm, classless scheduler, classful
    scheduler, shaper; ``tree`` is a policy tree), from the kind registry."""
    return {k: f for k, f, _ in [*_core.meter_kinds(), *_core.shaper_kinds()]}


def _param_value(key: str, value: object) -> str:
    # bool before int: True is an int in Python.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if not np.isfinite(v):
            raise _config_error(key, f"expected a finite number, got {v!r}")
        return str(int(v)) if v.is_integer() else repr(v)
    raise _config_error(key, f"expected a str or a number, got {type(value).__name__}")


def _config_error(param: str, message: str) -> ConfigError:
    """A ``ConfigError`` raised from Python, shaped like the ones from Rust."""
    e = ConfigError(f"{param}: {message}")
    e.param = param
    e.message = message
    return e


def _params(params: Mapping[str, object]) -> dict[str, str]:
    return {str(k): _param_value(str(k), v) for k, v in params.items()}


#: The largest packet a trace may hold: 1 GiB, the deepest bucket qoslab-core
#: accepts (a bigger packet could never conform; token arithmetic in
#: qoslab-core overflows past 2**31 bytes).
MAX_PACKET_BYTES = 1 << 30


def _trace_error(index: int, message: str) -> TraceError:
    e = TraceError(f"packet {index}: {message}")
    e.index = index
    e.message = message
    return e


def as_uint_array(
    values: Any, name: str, dtype: type[np.unsignedinteger], maximum: int, why: str = ""
) -> Any:
    """Converts ``values`` (any integer array or list) to a contiguous 1-D
    array of ``dtype``; rejects negatives, NaN, non-integral floats and values
    above ``maximum`` with a ``TraceError`` naming the first bad packet."""
    try:
        a = np.asarray(values)
    except (ValueError, TypeError) as e:  # ragged lists, objects NumPy cannot hold
        raise _trace_error(0, f"{name}: not an array of integers ({e})") from None
    if a.ndim != 1:
        raise _trace_error(0, f"{name} must be one-dimensional, got shape {a.shape}")
    if a.size == 0:
        return np.zeros(0, dtype=dtype)
    kind = a.dtype.kind
    if kind == "b":
        raise _trace_error(0, f"{name} must hold integers, got booleans")
    if kind == "f":
        bad = ~np.isfinite(a) | (a != np.floor(a))
        if bad.any():
            i = int(np.argmax(bad))
            raise _trace_error(i, f"{name} must be whole numbers, got {a[i].item()!r}")
    elif kind not in "iu":
        raise _trace_error(0, f"{name} must hold integers (at most 64-bit), got dtype {a.dtype}")
    neg = a < 0
    if neg.any():
        i = int(np.argmax(neg))
        raise _trace_error(i, f"{name} must not be negative, got {a[i].item()}")
    big = a > maximum
    if big.any():
        i = int(np.argmax(big))
        raise _trace_error(i, f"{name} must be at most {maximum}{why}, got {a[i].item()}")
    return np.ascontiguousarray(a, dtype=dtype)


def _colors_array(colors: Any, n: int) -> Any:
    a = np.asarray(colors)
    if a.dtype.kind in "USO":
        names = np.char.lower(np.char.strip(a.astype(str)))
        codes = np.full(names.shape, 255, dtype=np.int64)
        for code, nm in enumerate(COLOR_NAMES):
            codes[(names == nm) | (names == nm[0]) | (names == str(code))] = code
        bad = codes == 255
        if bad.any():
            i = int(np.argmax(bad))
            raise _trace_error(i, f"color must be green, yellow or red, got {a.tolist()[i]!r}")
        a = codes
    out = as_uint_array(a, "colors", np.uint8, 2)
    if len(out) != n:
        raise _trace_error(0, f"colors has {len(out)} entries but there are {n} packets")
    return out


def _trace(times_ns: Any, sizes: Any) -> tuple[Any, Any]:
    t = as_uint_array(
        times_ns, "times_ns", np.uint64, _TIME_MAX, " (below 2^62 ns, qoslab's time horizon)"
    )
    s = as_uint_array(sizes, "sizes", np.uint32, MAX_PACKET_BYTES)
    if len(t) != len(s):
        raise _trace_error(0, f"times_ns has {len(t)} entries but sizes has {len(s)}")
    return t, s


@dataclass(frozen=True)
class PoliceResult:
    """Per-packet colour (0 green, 1 yellow, 2 red) and action (0 transmit,
    1 drop, 2 remark) codes, plus totals."""

    colors: npt.NDArray[np.uint8]
    actions: npt.NDArray[np.uint8]
    summary: dict[str, Any]
    times_ns: npt.NDArray[np.uint64] | None = field(default=None, repr=False)
    sizes: npt.NDArray[np.uint32] | None = field(default=None, repr=False)

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per packet, with the columns of
        ``qoslab meter --output`` (``time_ns``, ``size_bytes``, ``color``,
        ``action``; colour and action by name)."""
        import pandas as pd

        return pd.DataFrame(
            {
                "time_ns": self.times_ns,
                "size_bytes": self.sizes,
                "color": pd.Categorical.from_codes(self.colors, COLOR_NAMES),
                "action": pd.Categorical.from_codes(self.actions, ACTION_NAMES),
            }
        )


@dataclass(frozen=True)
class ShapeResult:
    """Per-packet departure time (ns; -1 when dropped), drop mask, totals
    (``delay_ns`` max and mean of sent packets, the mean floored to whole ns),
    and, for a queue, scheduler or tree, one row per class (root first;
    packets, bytes, drops, colours, largest queue)."""

    departure_ns: npt.NDArray[np.int64]
    dropped: npt.NDArray[np.bool_]
    summary: dict[str, Any]
    classes: list[dict[str, Any]] = field(default_factory=list)
    params: dict[str, str | list[str]] = field(default_factory=dict)
    times_ns: npt.NDArray[np.uint64] | None = field(default=None, repr=False)
    sizes: npt.NDArray[np.uint32] | None = field(default=None, repr=False)

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per packet, with the columns of
        ``qoslab shape --output`` (``time_ns``, ``size_bytes``,
        ``departure_ns`` -- missing (``<NA>``) when dropped -- and
        ``dropped``)."""
        import pandas as pd

        dep = pd.array(self.departure_ns, dtype="Int64")
        dep[self.dropped] = pd.NA
        return pd.DataFrame(
            {
                "time_ns": self.times_ns,
                "size_bytes": self.sizes,
                "departure_ns": dep,
                "dropped": self.dropped,
            }
        )

    def classes_frame(self) -> Any:
        """The per-class rows (``classes``) as a pandas DataFrame."""
        import pandas as pd

        return pd.json_normalize(self.classes, sep=".") if self.classes else pd.DataFrame()


@_resource_errors
def police(
    kind: str, times_ns: Any, sizes: Any, colors: Any = None, **params: object
) -> PoliceResult:
    """Runs a trace through meter ``kind`` with per-colour actions
    (``conform``/``exceed``/``violate`` params; markers default to transmit).

    >>> r = police("srtcm", [0, 0, 0], [1000, 1000, 1000], cir="8mbit", cbs=1000, ebs=1000)
    >>> r.colors.tolist(), r.summary["packets"]["red"]
    ([0, 1, 2], 1)
    """
    if not isinstance(kind, str):
        raise _config_error("kind", f"expected a kind name (a str), got {kind!r}")
    run = _core.MeterRun(kind, _params(params))
    t, s = _trace(times_ns, sizes)
    c = None if colors is None else _colors_array(colors, len(t))
    out_c, out_a = run.push(t, s, c)
    return PoliceResult(out_c, out_a, meter_summary(run.summary()), t, s)


def meter_summary(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A meter's totals (``MeterRun.summary()``) by colour."""
    pk, by = raw["packets"], raw["bytes"]
    summary: dict[str, Any] = {
        "packets": dict(zip(COLOR_NAMES, pk, strict=True)),
        "bytes": dict(zip(COLOR_NAMES, by, strict=True)),
        "dropped": {"packets": raw["dropped_packets"], "bytes": raw["dropped_bytes"]},
        "remarked": {"packets": raw["remarked_packets"]},
    }
    return summary


@_resource_errors
def color(kind: str, times_ns: Any, sizes: Any, colors: Any = None, **params: object) -> Any:
    """Colours of a trace through meter ``kind``: uint8 array, 0 green,
    1 yellow, 2 red. ``colors`` are the incoming colours (for ``mode="aware"``).

    >>> color("srtcm", [0, 0, 0], [1000, 1000, 1000], cir="8mbit", cbs=1000, ebs=1000).tolist()
    [0, 1, 2]
    """
    return police(kind, times_ns, sizes, colors, **params).colors


#: Packet header columns ``shape`` takes: name -> (dtype, largest value).
HEADER_COLUMNS: dict[str, tuple[type[np.unsignedinteger], int]] = {
    "flow": (np.uint32, 2**32 - 1),
    "dscp": (np.uint8, 63),
    "src": (np.uint32, 2**32 - 1),
    "dst": (np.uint32, 2**32 - 1),
    "src_port": (np.uint16, 65535),
    "dst_port": (np.uint16, 65535),
    "proto": (np.uint8, 255),
}


def _columns(columns: Mapping[str, Any] | None, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, values in (columns or {}).items():
        if name == "color":
            out[name] = _colors_array(values, n)
            continue
        if name not in HEADER_COLUMNS:
            valid = ", ".join(["color", *HEADER_COLUMNS])
            raise _trace_error(0, f"unknown trace column '{name}'; columns: {valid}")
        dtype, maximum = HEADER_COLUMNS[name]
        a = as_uint_array(values, name, dtype, maximum)
        if len(a) != n:
            raise _trace_error(0, f"{name} has {len(a)} entries but there are {n} packets")
        out[name] = np.ascontiguousarray(a)
    return out


def _run_shape(run: Any, t: Any, s: Any, cols: dict[str, Any]) -> ShapeResult:
    run.push(t, s, cols)
    raw = run.finish()
    dep = run.take()
    dropped = dep == np.uint64(2**64 - 1)
    departure = dep.view(np.int64)  # below 2^63, or 2^64 - 1 = -1 when dropped
    summary = shape_summary(raw, len(t), int(s.sum(dtype=np.uint64)))
    return ShapeResult(
        departure,
        dropped,
        summary,
        run.classes(),
        params_dict(run.describe()),
        times_ns=t,
        sizes=s,
    )


def shape_summary(raw: Mapping[str, Any], packets: int, size_bytes: int) -> dict[str, Any]:
    """A shaper's totals (``ShapeRun.finish()``) for ``packets`` packets of
    ``size_bytes`` in all."""
    sent = int(raw["sent_packets"])
    summary: dict[str, Any] = {
        "packets": packets,
        "bytes": size_bytes,
        "sent": {"packets": sent, "bytes": raw["sent_bytes"]},
        "dropped": {"packets": raw["dropped_packets"], "bytes": raw["dropped_bytes"]},
        "delay_ns": {
            "max": raw["max_delay_ns"] if sent else 0,
            "mean": raw["total_delay_ns"] // sent if sent else 0,  # floor, ns
        },
        "max_backlog_packets": raw["max_backlog_packets"],
    }
    if raw["warnings"]:
        summary["warnings"] = list(raw["warnings"])
    return summary


@_resource_errors
def shape(
    kind: str,
    times_ns: Any,
    sizes: Any,
    columns: Mapping[str, Any] | None = None,
    **params: object,
) -> ShapeResult:
    """Runs a trace through ``kind``: departure times (int64 ns, -1 for
    dropped packets), a drop mask, totals (sent, dropped, delays) and, but
    for a shaper or AQM, one row per class.

    ``kind`` is a shaper (``tbf``, ``shape``, RAS), or an AQM, queue,
    classless scheduler (``sfq``, ``fq_codel``, ``fair-queue``) or ``prio``,
    which have no service rate of their own: they need ``rate``, the link
    draining their queue, and a packet's departure is when it leaves the
    queue for that link. ``columns`` are optional per-packet header fields
    (``color``, ``flow``, ``dscp``, ``src``, ``dst``, ``src_port``,
    ``dst_port``, ``proto``); a missing one is 0 for every packet.

    >>> r = shape("codel", [0, 0, 0], [1000, 1000, 1000], rate="8mbit")
    >>> r.departure_ns.tolist()
    [0, 1000000, 2000000]
    """
    if not isinstance(kind, str):
        raise _config_error("kind", f"expected a kind name (a str), got {kind!r}")
    run = _core.ShapeRun.kind(kind, _params(params))
    t, s = _trace(times_ns, sizes)
    return _run_shape(run, t, s, _columns(columns, len(t)))


@_resource_errors
def shape_policy(
    policy: str | os.PathLike[str],
    times_ns: Any,
    sizes: Any,
    rate: str | None = None,
    columns: Mapping[str, Any] | None = None,
) -> ShapeResult:
    """Runs a trace through a whole policy tree: ``policy`` is a TOML file or
    TOML text holding what a scenario writes under ``[policy.LINK.DIR]``
    (``htb = { default = "20" }``, ``[[class]]``, ``[[filter]]``, …).
    ``rate`` is the link draining the tree, required unless its root paces
    itself (a shaper or htb). Errors in the policy are ``ScenarioError``s
    located in it. ``columns`` as for ``shape``: filters on 5-tuple fields
    or DSCP see 0 where a column is missing, so such packets go to the
    default class.

    >>> r = shape_policy('prio = {}', [0, 0], [1000, 1000], rate="8mbit")
    >>> r.departure_ns.tolist(), [c["name"] for c in r.classes]
    ([0, 1000000], ['root', '1', '2', '3'])
    """
    text, file = policy_text(policy)
    if rate is not None and not isinstance(rate, str):
        rate = _param_value("rate", rate)
    run = _core.ShapeRun.tree(text, file, rate)
    t, s = _trace(times_ns, sizes)
    return _run_shape(run, t, s, _columns(columns, len(t)))


def policy_text(policy: str | os.PathLike[str]) -> tuple[str, str]:
    """(TOML text, name for errors) of ``policy``: a path to an existing
    file, or TOML text (anything holding '=' that is not a file)."""
    if not isinstance(policy, (str, os.PathLike)):
        raise _policy_error("<policy>", f"expected TOML text or a file, got {policy!r}")
    p = Path(policy)
    is_path = isinstance(policy, os.PathLike) or (
        "\n" not in str(policy) and ("=" not in str(policy) or p.is_file())
    )
    if not is_path:
        return str(policy), "<policy>"
    try:
        return p.read_text(encoding="utf-8"), str(policy)
    except UnicodeDecodeError:
        raise _policy_error(str(policy), "not UTF-8 text") from None
    except OSError as e:
        raise _policy_error(str(policy), e.strerror or str(e)) from None


def _policy_error(file: str, message: str) -> ScenarioError:
    """A ``ScenarioError`` about a policy file as a whole (no line)."""
    e = ScenarioError(f"{file}: {message}")
    e.file, e.line, e.column, e.path, e.message = file, 0, 0, "", message
    return e


def describe(kind: str, **params: object) -> dict[str, str | list[str]]:
    """The effective parameters of meter, shaper or AQM ``kind`` (including
    derived defaults and, for meters, the actions; an AQM needs ``rate``)."""
    if not isinstance(kind, str):
        raise _config_error("kind", f"expected a kind name (a str), got {kind!r}")
    p = _params(params)
    if kind.lower() in shaper_kinds():
        return params_dict(_core.describe_shaper(kind, p))
    if kind.lower() in meter_kinds():
        return params_dict(_core.describe_meter(kind, p))
    all_kinds = [*meter_kinds(), *shaper_kinds()]
    import difflib

    near = difflib.get_close_matches(kind.lower(), all_kinds, n=1)
    hint = f" (did you mean '{near[0]}'?)" if near else ""
    raise _config_error("kind", f"unknown kind '{kind}'{hint}; valid: {', '.join(all_kinds)}")
