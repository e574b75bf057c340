"""Rows from runs: what a checker records for one run (one seed, one value
of the assumptions), and the verdict over all runs.

The rules (stated in every output):

- a **number** holds when the mean over the seeds is within ±``TOLERANCE``
  of the published value, is *off* within ±``OFF_TOLERANCE``, and fails
  beyond that;
- a **claim** holds when it holds on a clear majority of the seeds
  (``MAJORITY``) *and*, where the source gives a magnitude, the median
  effect over the seeds is within a factor ``EFFECT_FACTOR`` of the
  source's; a claim that holds on a clear majority with the wrong
  magnitude is *off*; anything less fails;
- a **sanity** row holds only when it holds on every seed at the chosen
  values (it checks our configuration, which the variants change);
- every number and claim verdict is the worst over the assumptions'
  ranges (the chosen value and every variant), and a measurement missing
  in any run fails its row.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from qoslab.reproduce.model import Published, PublishedClaim, Row

#: Relative tolerance of a published number ("holds").
TOLERANCE = 0.15
#: Beyond TOLERANCE but within this, a number is "off"; beyond, it fails.
OFF_TOLERANCE = 0.50
#: A claim needs this share of the seeds.
MAJORITY = 0.75
#: A claim's median effect must be within this factor of the source's.
EFFECT_FACTOR = 2.0

VERDICTS = ("holds", "off", "fails")
RULES = (
    f"numbers: the mean over the seeds within ±{TOLERANCE:.0%} of the published value holds, "
    f"within ±{OFF_TOLERANCE:.0%} is off, beyond fails; "
    f"claims: hold on at least {MAJORITY:.0%} of the seeds and, where the source gives a "
    f"magnitude, a median effect within a factor {EFFECT_FACTOR:g} of the source's "
    "(right direction, wrong magnitude: off); sanity rows follow from our configuration "
    "and must hold on every seed at the chosen values; each number and claim verdict is the "
    "worst over the assumptions' ranges; "
    "a missing measurement fails its row"
)


@dataclass
class Spec:
    """What a row is, independent of the run."""

    case: str
    metric: str
    kind: str
    source: str | None
    published: Any
    published_value: float | None = None  # numbers
    effect: float | None = None  # claims: the source's magnitude
    effect_is: str = ""
    note: str = ""


@dataclass
class Obs:
    """One run's measurement of a row: ``value`` (number, or the text shown),
    ``holds`` (claims and sanity; None = not measured), ``effect``."""

    value: Any
    holds: bool | None = None
    effect: float | None = None
    missing: bool = False


@dataclass
class Checks:
    """What a checker writes into for one run."""

    specs: dict[tuple[str, str], Spec] = field(default_factory=dict)
    obs: dict[tuple[str, str], Obs] = field(default_factory=dict)

    def _add(self, spec: Spec, obs: Obs) -> None:
        key = (spec.case, spec.metric)
        if key in self.obs:
            raise ValueError(f"row {key} recorded twice")
        self.specs[key] = spec
        self.obs[key] = obs

    def number(
        self, case: str, metric: str, pub: Published, ours: float | None, note: str = ""
    ) -> None:
        missing = ours is None or (isinstance(ours, float) and math.isnan(ours))
        self._add(
            Spec(case, metric, "number", pub.at, pub.value, pub.value, note=note),
            Obs(None if missing else float(ours), missing=missing),  # type: ignore[arg-type]
        )

    def claim(
        self,
        case: str,
        metric: str,
        pub: PublishedClaim,
        ours: str | None,
        holds: bool | None,
        effect: float | None = None,
        note: str = "",
    ) -> None:
        missing = ours is None or holds is None or (pub.effect is not None and effect is None)
        self._add(
            Spec(
                case,
                metric,
                "claim",
                pub.at,
                pub.text,
                effect=pub.effect,
                effect_is=pub.effect_is,
                note=note,
            ),
            Obs(ours, None if missing else bool(holds), effect, missing),
        )

    def sanity(
        self,
        case: str,
        metric: str,
        expected: str,
        ours: str | None,
        holds: bool | None,
        note: str = "",
    ) -> None:
        missing = ours is None or holds is None
        self._add(
            Spec(case, metric, "sanity", None, expected, note=note),
            Obs(ours, None if missing else bool(holds), missing=missing),
        )


def _worst(verdicts: list[str]) -> str:
    return max(verdicts, key=VERDICTS.index) if verdicts else "fails"


def _number_verdict(mean: float | None, published: float) -> tuple[str, float | None]:
    if mean is None:
        return "fails", None
    rel = (mean - published) / published if published else None
    if rel is None:
        return ("holds" if mean == 0 else "fails"), None
    a = abs(rel)
    return ("holds" if a <= TOLERANCE else "off" if a <= OFF_TOLERANCE else "fails"), rel


def _claim_verdict(obs: list[Obs], spec: Spec) -> tuple[str, int, float | None]:
    n = len(obs)
    k = sum(1 for o in obs if o.holds)
    if any(o.missing for o in obs):
        return "fails", k, None
    effect = None
    if spec.effect is not None:
        effect = statistics.median(o.effect for o in obs if o.effect is not None)
    if k < MAJORITY * n:
        return "fails", k, effect
    if spec.effect is None or effect is None:
        return "holds", k, effect
    ratio = effect / spec.effect if spec.effect else math.inf
    ok = 1 / EFFECT_FACTOR <= ratio <= EFFECT_FACTOR
    return ("holds" if ok else "off"), k, effect


def _fmt_effect(x: float | None) -> str:
    return "-" if x is None else f"{x:+.3g}"


def aggregate(
    experiment: str,
    runs: dict[str, list[Checks]],
    seeds: list[int],
) -> list[Row]:
    """Rows from ``runs``: by variant label (``"chosen"`` first), the checks
    of each seed in order."""
    chosen = runs["chosen"]
    order = list(chosen[0].specs)
    rows = []
    for key in order:
        spec = chosen[0].specs[key]
        per_variant = []
        for label, checks in runs.items():
            if spec.kind == "sanity" and label != "chosen":
                continue
            obs = [c.obs.get(key, Obs(None, missing=True)) for c in checks]
            per_variant.append((label, obs))
        rows.append(_row(experiment, spec, per_variant, len(seeds)))
    return rows


def _row(experiment: str, spec: Spec, per_variant: list[tuple[str, list[Obs]]], n: int) -> Row:
    variants: list[dict[str, Any]] = []
    verdicts = []
    holding = []
    base_ours: Any = None
    base_rel = None
    notes = [spec.note] if spec.note else []
    for label, obs in per_variant:
        v: dict[str, Any] = {"assumption": label}
        if spec.kind == "number":
            vals = [o.value for o in obs if not o.missing]
            mean = statistics.fmean(vals) if len(vals) == len(obs) and vals else None
            verdict, rel = _number_verdict(mean, spec.published_value or 0.0)
            v.update(
                ours=None if mean is None else round(mean, 4),
                seed_min=round(min(vals), 4) if vals else None,
                seed_max=round(max(vals), 4) if vals else None,
                rel_diff=None if rel is None else round(rel, 4),
            )
            if label == "chosen":
                base_ours, base_rel = v["ours"], v["rel_diff"]
                if vals and min(vals) != max(vals):
                    notes.append(f"seeds {min(vals):.4g}..{max(vals):.4g}")
        elif spec.kind == "claim":
            verdict, k, effect = _claim_verdict(obs, spec)
            holding.append(k)
            v.update(seeds_holding=k, effect=None if effect is None else round(effect, 4))
            if label == "chosen":
                shown = next((o.value for o in obs if o.value is not None), None)
                base_ours = f"{k}/{n}: {shown}" if shown is not None else f"{k}/{n}"
                if spec.effect is not None:
                    base_ours += f"; effect {_fmt_effect(effect)}"
        else:
            k = sum(1 for o in obs if o.holds)
            verdict = "holds" if k == len(obs) and not any(o.missing for o in obs) else "fails"
            holding.append(k)
            v.update(seeds_holding=k)
            if label == "chosen":
                shown = next((o.value for o in obs if o.value is not None), None)
                base_ours = f"{k}/{n}: {shown}" if shown is not None else f"{k}/{n}"
        if any(o.missing for o in obs):
            v["missing"] = True
            notes.append(f"not measured ({label})")
        v["verdict"] = verdict
        verdicts.append(verdict)
        variants.append(v)
    verdict = _worst(verdicts)
    bad = [v["assumption"] for v in variants if v["verdict"] != "holds"]
    if len(variants) > 1 and bad and len(bad) < len(variants):
        notes.append("does not hold at: " + ", ".join(bad))
    published = spec.published
    if spec.kind == "claim" and spec.effect is not None:
        published = f"{spec.published} [effect {_fmt_effect(spec.effect)}: {spec.effect_is}]"
    return Row(
        experiment,
        spec.case,
        spec.metric,
        spec.kind,
        spec.source,
        published,
        base_ours,
        base_rel,
        verdict,
        n,
        None if spec.kind == "number" else min(holding),
        "; ".join(notes),
        variants,
    )
