"""The pieces of a reproduction: published values with their location,
cases, assumptions and their sensitivity variants, experiments, rows.

Published values are read from the package's ``data/reference/*.toml``
(never written in Python): a value ``key`` of table ``T`` stands with its
location ``key_at`` (or the table's ``at``), and a published claim is a
``[claims.ID]`` table with the quoted ``text``, its location ``at`` and,
where the source gives a magnitude, ``effect`` (same definition as the
checker's, stated in ``effect_is``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "Assumption",
    "Case",
    "Experiment",
    "Published",
    "PublishedClaim",
    "Reference",
    "Row",
    "Variant",
    "data_dir",
    "tomllib",
]


def data_dir() -> Path:
    """The package data holding ``reference/`` and ``scenarios/reproduce/``
    (installed with the package: works from any directory)."""
    return Path(str(resources.files("qoslab") / "data"))


@dataclass(frozen=True)
class Published:
    """A number as the source printed it, and where it stands."""

    value: float
    at: str


@dataclass(frozen=True)
class PublishedClaim:
    """A qualitative statement of the source: quoted, located, and its
    magnitude where the source gives one."""

    id: str
    text: str
    at: str
    effect: float | None = None
    effect_is: str = ""


class Reference:
    """One ``data/reference/*.toml``: the source's numbers and claims, each
    with its location; a missing value or location is an error (KeyError
    names it), never a silent default."""

    def __init__(self, doc: Mapping[str, Any], file: str) -> None:
        self.doc = doc
        self.file = file
        src = doc.get("source", {})
        self.citation = "; ".join(
            str(src[k]) for k in ("title", "author", "url", "date") if src.get(k)
        )

    @classmethod
    def load(cls, file: str) -> Reference:
        path = data_dir() / "reference" / file
        return cls(tomllib.loads(path.read_text(encoding="utf-8")), file)

    def _table(self, path: str) -> tuple[dict[str, Any], str]:
        *tables, key = path.split(".")
        node: Any = self.doc
        for t in tables:
            node = node[t]
        return node, key

    def number(self, path: str, index: int | None = None) -> Published:
        """``path`` = ``table.key``; ``index`` picks an item of a list value."""
        table, key = self._table(path)
        if key not in table:
            raise KeyError(f"{self.file}: no published value {path}")
        value = table[key] if index is None else table[key][index]
        at = table.get(f"{key}_at", table.get("at"))
        if not at:
            raise KeyError(f"{self.file}: {path} has no location ({key}_at or at)")
        return Published(float(value), str(at))

    def value(self, path: str) -> Any:
        table, key = self._table(path)
        return table[key]

    def claim(self, cid: str) -> PublishedClaim:
        c = self.doc.get("claims", {}).get(cid)
        if c is None:
            raise KeyError(f"{self.file}: no [claims.{cid}]")
        for k in ("text", "at"):
            if not c.get(k):
                raise KeyError(f"{self.file}: [claims.{cid}] has no {k}")
        effect = c.get("effect")
        return PublishedClaim(
            cid,
            str(c["text"]),
            str(c["at"]),
            None if effect is None else float(effect),
            str(c.get("effect_is", "")),
        )


#: A change to a parsed scenario: a dotted key and its value (list items by
#: index, e.g. ``policy.bottleneck.egress.class.0.rate``), or a function.
Edit = tuple[str, Any] | Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Case:
    name: str
    scenario: str  # file under data/scenarios/reproduce/
    quick_s: float = 5.0  # duration under --quick
    set: tuple[tuple[str, Any], ...] = ()  # keys changed before the run
    series: tuple[str, ...] = ()  # series recorded in addition to the file's


@dataclass(frozen=True)
class Variant:
    """One value of an assumption other than the chosen one: the edits it
    makes, by case name (``"*"``: every case of the experiment)."""

    label: str
    edits: tuple[tuple[str, Edit], ...]

    def cases(self, all_cases: tuple[Case, ...]) -> list[str]:
        names = {c for c, _ in self.edits}
        return [c.name for c in all_cases if "*" in names or c.name in names]

    def edits_for(self, case: str) -> list[Edit]:
        return [e for c, e in self.edits if c in ("*", case)]


@dataclass(frozen=True)
class Assumption:
    """A scenario choice the source does not state: what we chose, why, the
    plausible range, and the variants that run the rest of that range (none
    only with ``no_run``, the reason)."""

    name: str
    chosen: str
    why: str
    range: str
    variants: tuple[Variant, ...] = ()
    no_run: str = ""


@dataclass(frozen=True)
class Experiment:
    name: str
    title: str
    reference: str  # file in data/reference/
    cases: tuple[Case, ...]
    check: Callable[..., None]
    assumptions: tuple[Assumption, ...] = ()


@dataclass
class Row:
    """One comparison, aggregated over seeds and the assumptions' ranges.

    ``kind``: ``number`` (ours vs a published number, ``tolerance``),
    ``claim`` (a statement the source makes, judged over seeds, with its
    effect size against the source's where it gives one) or ``sanity``
    (follows from our configuration: shown, never counted as a
    reproduction). ``verdict``: ``holds``, ``off`` or ``fails``.
    """

    experiment: str
    case: str
    metric: str
    kind: str
    source: str | None
    published: Any
    ours: Any
    rel_diff: float | None
    verdict: str
    seeds: int
    seeds_holding: int | None = None
    note: str = ""
    variants: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "case": self.case,
            "metric": self.metric,
            "kind": self.kind,
            "source": self.source,
            "published": self.published,
            "ours": self.ours,
            "rel_diff": self.rel_diff,
            "verdict": self.verdict,
            "seeds": self.seeds,
            "seeds_holding": self.seeds_holding,
            "note": self.note,
            "variants": self.variants,
        }
