"""Points -> full scenarios: set each swept key in the scenario's TOML document,
validate every point with the simulator's own parser, and key each run.

The document is edited with tomlkit, which keeps the file's layout, so a
value the parser rejects is reported at the line of the user's file where
that key is (``file:line:col: key: message``), prefixed with the point.

Key paths: dotted table names with ``[i]`` for an array of tables,
``policy.bottleneck.egress.police.bc``, ``topology.bottleneck.delay``,
``traffic[0].flows``, ``traffic[0].cc``. Every table on the way must exist
in the scenario (a typo is not silently created); the last key may be new
(``bc`` in a ``police = { cir = "10mbit" }`` table), and the parser then
decides whether it is a key that table takes.

Sweeps record summaries only, so ``[record] series`` is emptied (the series
cost time and memory and are not stored); this is part of the resolved
scenario and of its hash.

The run key is the SHA-256 of the resolved scenario as data (parsed back
from TOML, ``[scenario] seed`` set to the run's seed, serialised as JSON with
sorted keys): independent of comments, layout and key order, so the same
configuration is the same run whichever sweep asked for it.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions

from qoslab import _core
from qoslab._core import ScenarioError
from qoslab.sweep.spec import SweepSpec, SweepSpecError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["Run", "parse_key", "resolve"]

_SEGMENT = re.compile(r"([A-Za-z0-9_-]+)((?:\[\d+\])*)")


@dataclass(frozen=True)
class Run:
    """One simulation to run: a point of the sweep with one seed."""

    hash: str
    point: dict[str, Any]
    seed: int
    text: str
    filename: str


def parse_key(key: str) -> list[str | int]:
    """``traffic[0].cc`` -> ``['traffic', 0, 'cc']``."""
    segs: list[str | int] = []
    for part in key.split("."):
        m = _SEGMENT.fullmatch(part)
        if not m:
            raise SweepSpecError(
                f"key '{key}': '{part}' is not a key name "
                "(expected e.g. policy.bottleneck.egress.police.bc or traffic[0].flows)"
            )
        segs.append(m.group(1))
        segs.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
    return segs


def _path(segs: list[str | int]) -> str:
    out = ""
    for s in segs:
        out += f"[{s}]" if isinstance(s, int) else (f".{s}" if out else s)
    return out


def _set(doc: Any, segs: list[str | int], value: Any, key: str, file: str) -> None:
    node = doc
    for i, s in enumerate(segs[:-1]):
        here = _path(segs[: i + 1])
        if isinstance(s, int):
            if not isinstance(node, list):
                raise SweepSpecError(f"{file}: key '{key}': '{_path(segs[:i])}' is not an array")
            if s >= len(node):
                raise SweepSpecError(
                    f"{file}: key '{key}': '{_path(segs[:i])}' has {len(node)} entries, no [{s}]"
                )
            node = node[s]
        else:
            if not isinstance(node, dict):
                raise SweepSpecError(f"{file}: key '{key}': '{_path(segs[:i])}' is not a table")
            if s not in node:
                have = ", ".join(str(k) for k in node) or "nothing"
                raise SweepSpecError(
                    f"{file}: key '{key}': the scenario has no '{here}' (there: {have})"
                )
            node = node[s]
    last = segs[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or last >= len(node):
            raise SweepSpecError(f"{file}: key '{key}': no entry [{last}] to set")
    elif not isinstance(node, dict):
        raise SweepSpecError(f"{file}: key '{key}': '{_path(segs[:-1])}' is not a table")
    node[last] = value


def run_hash(data: dict[str, Any], seed: int) -> str:
    """The key of one run: ``data`` is the resolved scenario as parsed from
    TOML (see the module doc)."""
    scenario = data.setdefault("scenario", {})
    old = scenario.get("seed")
    scenario["seed"] = int(seed)
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    if old is None:
        del scenario["seed"]
    else:
        scenario["seed"] = old
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _label(point: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in point.items()) or "(the scenario as is)"


def resolve(scenario: Path, spec: SweepSpec) -> list[Run]:
    """Every (point, seed) as a validated scenario, duplicates removed.

    Raises ``SweepSpecError`` (a key path the scenario lacks) or
    ``ScenarioError`` (a value the parser rejects), naming the point and
    how many points are invalid."""
    filename = str(scenario)
    base_text = scenario.read_text(encoding="utf-8")
    _core.scenario_info(base_text, filename)  # the scenario itself first
    try:
        doc = tomlkit.parse(base_text)
    except tomlkit.exceptions.ParseError as e:  # pragma: no cover - the parser above caught it
        raise SweepSpecError(f"{filename}: {e}") from None
    rec = doc.get("record")
    if isinstance(rec, dict) and "series" in rec:
        rec["series"] = []
    keyed = [(a.key, parse_key(a.key)) for a in spec.axes]
    runs: list[Run] = []
    seen: set[str] = set()
    bad: list[tuple[dict[str, Any], ScenarioError]] = []
    for point in spec.points():
        for key, segs in keyed:
            _set(doc, segs, point[key], key, filename)
        text = tomlkit.dumps(doc)
        try:
            _core.scenario_info(text, filename)
        except ScenarioError as e:
            bad.append((point, e))
            continue
        data = tomllib.loads(text)
        for seed in spec.seeds:
            h = run_hash(data, seed)
            if h in seen:
                continue
            seen.add(h)
            runs.append(Run(h, dict(point), seed, text, filename))
    if bad:
        point, first = bad[0]
        n = len(bad)
        msg = f"{n} point{'s' if n > 1 else ''} invalid, the first ({_label(point)}): {first}"
        err = ScenarioError(msg)
        err.file, err.line, err.column = first.file, first.line, first.column
        err.path, err.message = first.path, msg
        raise err
    return runs
