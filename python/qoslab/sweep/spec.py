"""What a sweep varies: axes (``--grid KEY=…``), seeds, ``--random N``, a sweep file.

An axis is a scenario key path and its values. ``KEY=V1,V2,…`` lists values;
``KEY=start:stop:steps[:log]`` spaces ``steps`` values from start to stop
(both included), evenly or geometrically, keeping the unit family of the
endpoints (``10kb:1mb:5:log`` gives sizes, ``10ms:50ms:5`` times,
``1mbit:10mbit:4`` rates; plain numbers stay numbers). Values with units are
parsed by the simulator's own parsers (``qoslab._core.parse_*``, the tc
tables) so a sweep reads ``32kb`` exactly as a scenario does.

Points: the cartesian product of the axes, or ``--random N`` points drawn by
Latin hypercube sampling (McKay, Beckman & Conover, "A Comparison of Three
Methods for Selecting Values of Input Variables in the Analysis of Output
from a Computer Code", Technometrics 21(2), 1979): each axis is cut into N
equal strata, one draw per stratum, the strata paired by a random
permutation per axis — seeded, so the same command gives the same points.
Ranges are sampled continuously (in log space with ``:log``), lists by
stratum index.
"""

from __future__ import annotations

import itertools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from qoslab import _core

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["Axis", "SweepSpec", "SweepSpecError", "parse_grid", "parse_seeds", "read_sweep_file"]

#: Unit family -> (parser, suffix written into the scenario, numeric column suffix).
UNITS: dict[str, tuple[Any, str, str]] = {
    "size": (_core.parse_size, "b", "bytes"),
    "rate": (_core.parse_rate, "bit", "bps"),
    "time": (_core.parse_time, "ns", "ns"),
}

_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_INT = re.compile(r"^[+-]?\d+$")


class SweepSpecError(ValueError):
    """A bad axis, seed list or sweep file (one line, naming where)."""


@dataclass
class Axis:
    """One swept key: its values as written into the scenario, and (for
    values with units) the same in base units (bytes, bit/s, ns)."""

    key: str
    values: list[Any]
    unit: str | None = None  # "size" | "rate" | "time" | None
    # For ranges: the endpoints in base units (or plain numbers) and scale,
    # which --random samples continuously.
    lo: float | None = None
    hi: float | None = None
    log: bool = False
    integer: bool = False

    @property
    def column(self) -> str | None:
        """The numeric column beside a unit-bearing key (``KEY_bytes``...)."""
        return f"{self.key}_{UNITS[self.unit][2]}" if self.unit else None

    def base(self, value: Any) -> float | None:
        """``value`` in base units (None when the axis has none)."""
        if not self.unit:
            return None
        return float(UNITS[self.unit][0](str(value)))

    def from_base(self, x: float) -> Any:
        if self.unit:
            return f"{round(x)}{UNITS[self.unit][1]}"
        return round(x) if self.integer else float(x)


@dataclass
class SweepSpec:
    """Axes, seeds and (optionally) a Latin-hypercube sample size."""

    axes: list[Axis]
    seeds: list[int] = field(default_factory=lambda: [1])
    random: int = 0
    random_seed: int = 0

    def points(self) -> list[dict[str, Any]]:
        """Every point: ``{key: value}`` (cartesian product, or LHS)."""
        if not self.axes:
            return [{}]
        if self.random:
            return latin_hypercube(self.axes, self.random, self.random_seed)
        keys = [a.key for a in self.axes]
        grid = itertools.product(*(a.values for a in self.axes))
        return [dict(zip(keys, vs, strict=True)) for vs in grid]


def _typed(text: str) -> Any:
    """A command-line value as TOML would type it: int, float, bool, else string."""
    t = text.strip()
    if _INT.match(t):
        return int(t)
    if _NUMBER.match(t):
        return float(t)
    if t in ("true", "false"):
        return t == "true"
    return t


def unit_of(text: str) -> str | None:
    """The unit family of ``text`` (``'32kb'`` -> size), None for a plain number
    or a word; the simulator's parsers decide."""
    t = text.strip()
    if not t or _NUMBER.match(t) or (not t[0].isdigit() and t[0] not in ".+"):
        return None
    low = t.lower()
    order = ("rate",) if ("bit" in low or "bps" in low) else ("time", "size")
    for fam in order:
        try:
            UNITS[fam][0](t)
            return fam
        except ValueError:
            continue
    return None


def _range(key: str, parts: list[str], where: str) -> Axis:
    start, stop, steps_s = parts[0].strip(), parts[1].strip(), parts[2].strip()
    scale = parts[3].strip().lower() if len(parts) == 4 else "lin"
    if scale not in ("lin", "log"):
        raise SweepSpecError(f"{where}: the 4th field of a range is 'log' or 'lin', got '{scale}'")
    if not _INT.match(steps_s) or int(steps_s) < 1:
        raise SweepSpecError(f"{where}: steps must be a whole number >= 1, got '{steps_s}'")
    steps = int(steps_s)
    fam_a, fam_b = unit_of(start), unit_of(stop)
    if fam_a != fam_b:
        what = " and ".join(
            f"'{v}' is {f or 'a plain number'}" for v, f in ((start, fam_a), (stop, fam_b))
        )
        raise SweepSpecError(f"{where}: start and stop need the same kind of unit ({what})")
    if fam_a is None:
        if not (_NUMBER.match(start) and _NUMBER.match(stop)):
            raise SweepSpecError(
                f"{where}: a range needs numbers or values with units "
                f"(e.g. 10kb:1mb:5:log, 10ms:50ms:5, 1:8:8), got '{start}:{stop}'"
            )
        lo, hi = float(start), float(stop)
        integer = bool(_INT.match(start) and _INT.match(stop))
    else:
        lo, hi = float(UNITS[fam_a][0](start)), float(UNITS[fam_a][0](stop))
        integer = True
    if scale == "log" and (lo <= 0 or hi <= 0):
        raise SweepSpecError(f"{where}: a log range needs start and stop > 0")
    if steps == 1:
        xs = [lo]
    elif scale == "log":
        xs = list(np.geomspace(lo, hi, steps))
    else:
        xs = list(np.linspace(lo, hi, steps))
    axis = Axis(key, [], fam_a, lo, hi, scale == "log", integer)
    values: list[Any] = []
    for x in xs:
        v = axis.from_base(float(x))
        if v not in values:  # rounding can merge neighbours of a fine int range
            values.append(v)
    axis.values = values
    return axis


def parse_axis(key: str, spec: str | list[Any], where: str) -> Axis:
    """One axis from ``start:stop:steps[:log]``, ``V1,V2,…`` or a TOML array."""
    key = key.strip()
    if not key:
        raise SweepSpecError(f"{where}: the key is empty (expected KEY=VALUES)")
    if isinstance(spec, list):
        values = list(spec)
        if not values:
            raise SweepSpecError(f"{where}: no values")
    else:
        parts = spec.split(":")
        if "," not in spec and len(parts) in (3, 4) and _INT.match(parts[2].strip()):
            return _range(key, parts, where)
        values = [_typed(v) for v in spec.split(",")]
        if any(v == "" for v in values):
            raise SweepSpecError(f"{where}: an empty value in '{spec}' (expected V1,V2,...)")
    fams = {unit_of(v) if isinstance(v, str) else None for v in values}
    unit = fams.pop() if len(fams) == 1 else None
    return Axis(key, values, unit)


def parse_grid(items: list[str]) -> list[Axis]:
    """``--grid KEY=VALUES`` options, in order; a key given twice is an error."""
    axes: list[Axis] = []
    for item in items:
        where = f"--grid {item}"
        key, eq, spec = item.partition("=")
        if not eq:
            raise SweepSpecError(f"{where}: expected KEY=V1,V2,... or KEY=start:stop:steps[:log]")
        axes.append(parse_axis(key, spec, where))
    _no_duplicates(axes)
    return axes


def _no_duplicates(axes: list[Axis]) -> None:
    seen: set[str] = set()
    for a in axes:
        if a.key in seen:
            raise SweepSpecError(f"--grid {a.key}: the key is swept twice")
        seen.add(a.key)


def parse_seeds(text: str) -> list[int]:
    """``N`` (seeds 1..N) or an explicit list ``1,5,9``."""
    t = text.strip()
    try:
        if "," in t:
            seeds = [int(s) for s in t.split(",")]
        else:
            n = int(t)
            if n < 1:
                raise ValueError
            seeds = list(range(1, n + 1))
    except ValueError:
        raise SweepSpecError(
            f"--seeds: expected a count N >= 1 or a list such as 1,5,9, got '{text}'"
        ) from None
    if any(not 0 <= s < 2**64 for s in seeds) or len(set(seeds)) != len(seeds):
        raise SweepSpecError(f"--seeds: seeds must be distinct integers in 0..2**64-1: '{text}'")
    return seeds


def latin_hypercube(axes: list[Axis], n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` points, one per stratum of every axis (see the module doc)."""
    rng = np.random.default_rng(seed)
    cols: list[list[Any]] = []
    for a in axes:
        u = (rng.permutation(n) + rng.random(n)) / n  # one draw in each of n strata
        if a.lo is not None and a.hi is not None:
            if a.log:
                xs = np.exp(np.log(a.lo) + u * (np.log(a.hi) - np.log(a.lo)))
            else:
                xs = a.lo + u * (a.hi - a.lo)
            cols.append([a.from_base(float(x)) for x in xs])
        else:
            idx = np.minimum((u * len(a.values)).astype(int), len(a.values) - 1)
            cols.append([a.values[i] for i in idx])
    return [{a.key: col[i] for a, col in zip(axes, cols, strict=True)} for i in range(n)]


def _line_of(text: str, needle: str) -> int:
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    return 1


def read_sweep_file(path: Path) -> tuple[Path, SweepSpec, dict[str, Any]]:
    """A sweep file: ``[sweep]`` with ``scenario`` (relative to the file),
    ``seeds``, ``random``, ``random_seed`` and a ``[sweep.grid]`` table of
    ``"KEY" = "V1,V2" | "start:stop:steps[:log]" | [values]``.
    Returns (scenario path, spec, the other [sweep] settings)."""
    text = path.read_text(encoding="utf-8")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SweepSpecError(f"{path}: {e}") from None
    sw = doc.get("sweep")
    if not isinstance(sw, dict):
        raise SweepSpecError(f"{path}:1: expected a [sweep] table")
    known = {"scenario", "seeds", "random", "random_seed", "grid", "out"}
    for k in sw:
        if k not in known:
            raise SweepSpecError(
                f"{path}:{_line_of(text, k)}: sweep.{k}: unknown key "
                f"(expected one of {', '.join(sorted(known))})"
            )
    if not isinstance(sw.get("scenario"), str):
        raise SweepSpecError(f"{path}:1: sweep.scenario: expected the scenario file (a string)")
    grid = sw.get("grid", {})
    if not isinstance(grid, dict):
        raise SweepSpecError(f"{path}:{_line_of(text, 'grid')}: sweep.grid: expected a table")
    axes = []
    for key, val in grid.items():
        where = f'{path}:{_line_of(text, key)}: sweep.grid."{key}"'
        if not isinstance(val, (str, list)):
            raise SweepSpecError(f"{where}: expected a string (V1,V2 or a range) or an array")
        axes.append(parse_axis(key, val, where))
    _no_duplicates(axes)
    seeds_v = sw.get("seeds", 1)
    where = f"{path}:{_line_of(text, 'seeds')}: sweep.seeds"
    if isinstance(seeds_v, list):
        seeds_v = ",".join(str(s) for s in seeds_v)
    try:
        seeds = parse_seeds(str(seeds_v))
    except SweepSpecError as e:
        raise SweepSpecError(f"{where}: {str(e).split(': ', 1)[1]}") from None
    rnd = sw.get("random", 0)
    if not isinstance(rnd, int) or rnd < 0:
        raise SweepSpecError(f"{path}:{_line_of(text, 'random')}: sweep.random: expected N >= 0")
    rseed = sw.get("random_seed", 0)
    if not isinstance(rseed, int):
        raise SweepSpecError(
            f"{path}:{_line_of(text, 'random_seed')}: sweep.random_seed: an integer"
        )
    scenario = (path.parent / sw["scenario"]).resolve()
    spec = SweepSpec(axes, seeds, rnd, rseed)
    return scenario, spec, {"out": sw.get("out")}


def is_sweep_file(path: Path) -> bool:
    """True when ``path`` is a TOML file with a top-level ``[sweep]`` table."""
    try:
        return "sweep" in tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
