"""The experiments, and running one: every case over the seeds, and the
cases an assumption touches again at each other value of its range."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from qoslab.reproduce import isr4000, linux_tbf_htb, packetlife, rfc2963
from qoslab.reproduce.checks import Checks, aggregate
from qoslab.reproduce.model import Case, Edit, Experiment, Reference, Row, data_dir, tomllib
from qoslab.results import SimulationResult

EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in (
        packetlife.EXPERIMENT,
        isr4000.EXPERIMENT,
        rfc2963.EXPERIMENT,
        linux_tbf_htb.EXPERIMENT,
    )
}

#: Seeds per case unless ``--seeds`` says otherwise.
DEFAULT_SEEDS = 8


def _set_key(doc: dict[str, Any], path: str, value: Any) -> None:
    """Sets ``a.b.0.c`` in a parsed scenario (list items by index); the key
    must exist up to its parent, so a typo in a Case fails loudly."""
    *parents, last = path.split(".")
    node: Any = doc
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


def _describe(edit: Edit) -> str:
    if callable(edit):
        return str(edit.__doc__ or getattr(edit, "__name__", "edit"))
    key, value = edit
    return f"{key} = {value!r}"


def scenario_text(
    case: Case,
    quick: bool,
    seed: int | None = None,
    edits: tuple[Edit, ...] | list[Edit] = (),
    variant: str = "",
) -> str:
    """The scenario of ``case`` as run: its file, with ``Case.set`` and an
    assumption's ``edits`` applied, ``Case.series`` recorded, the seed set,
    and ``duration`` shortened by ``--quick``."""
    path = data_dir() / "scenarios" / "reproduce" / case.scenario
    text = path.read_text(encoding="utf-8")
    if not (quick or case.set or case.series or edits or seed is not None):
        return text
    import tomli_w

    doc = tomllib.loads(text)
    changes = []
    for edit in (*case.set, *edits):
        if callable(edit):
            edit(doc)
        else:
            _set_key(doc, *edit)
        changes.append(_describe(edit))
    if case.series:
        rec = doc.setdefault("record", {})
        have = list(rec.get("series", []))
        rec["series"] = have + [x for x in case.series if x not in have]
        changes.append(f"record.series += {list(case.series)!r}")
    if seed is not None:
        doc["scenario"]["seed"] = seed
        changes.append(f"seed = {seed}")
    if quick:
        doc["scenario"]["duration"] = f"{case.quick_s:g}s"
        changes.append(f"duration = {case.quick_s:g}s (--quick)")
    head = f"# {case.scenario} as run by `qoslab reproduce`, case {case.name!r}"
    head += f" ({variant}):\n" if variant else ":\n"
    head += "".join(f"#   {c}\n" for c in changes)
    head += "# (the file's comments give every choice and its reason)\n"
    return head + tomli_w.dumps(doc)


@dataclass
class Reproduction:
    experiment: Experiment
    rows: list[Row]
    results: dict[str, SimulationResult]  # the chosen scenario, first seed
    texts: dict[str, str]  # ditto, as run
    seeds: list[int]
    quick: bool
    runs: int  # simulations run
    elapsed_s: float = 0.0  # wall time of the runs and checks


def variants(exp: Experiment) -> list[tuple[str, str, dict[str, list[Edit]]]]:
    """``(assumption, label, edits by case)`` of every value other than the
    chosen one, in order."""
    out = []
    for a in exp.assumptions:
        for v in a.variants:
            out.append((a.name, v.label, {c: v.edits_for(c) for c in v.cases(exp.cases)}))
    return out


def reproduce(
    name: str,
    quick: bool = False,
    seeds: int = DEFAULT_SEEDS,
    progress: Callable[[str, int, int], Any] | None = None,
) -> Reproduction:
    """Runs experiment ``name``: every case over seeds ``1..seeds``, then for
    each assumption's other values the cases it changes; checks every run
    and aggregates the rows. ``progress(label, index, count)`` may return
    the progress callback of that run (as in ``qoslab.compare.compare``)."""
    from qoslab.run import simulate

    if seeds < 1:
        raise ValueError(f"--seeds: expected at least 1, got {seeds}")
    t0 = time.monotonic()
    exp = EXPERIMENTS[name]
    ref = Reference.load(exp.reference)
    seed_list = list(range(1, seeds + 1))
    plan: list[tuple[str, str, int, str]] = []  # (variant label, case, seed, text)
    for seed in seed_list:
        for case in exp.cases:
            plan.append(("chosen", case.name, seed, scenario_text(case, quick, seed)))
    by_name = {c.name: c for c in exp.cases}
    for _, label, edits in variants(exp):
        for seed in seed_list:
            for cname, es in edits.items():
                text = scenario_text(by_name[cname], quick, seed, es, label)
                plan.append((label, cname, seed, text))
    done: dict[tuple[str, str, int], SimulationResult] = {}
    for i, (label, cname, seed, text) in enumerate(plan):
        tag = f"{cname} seed {seed}" + ("" if label == "chosen" else f" [{label}]")
        cb = progress(tag, i, len(plan)) if progress is not None else None
        try:
            done[(label, cname, seed)] = simulate(text, progress=cb)
        finally:
            if cb is not None and hasattr(cb, "close"):
                cb.close()
    runs: dict[str, list[Checks]] = {}
    for label in ["chosen", *(v[1] for v in variants(exp))]:
        runs[label] = []
        for seed in seed_list:
            results = {
                c.name: done.get((label, c.name, seed), done[("chosen", c.name, seed)])
                for c in exp.cases
            }
            checks = Checks()
            exp.check(checks, ref, results)
            runs[label].append(checks)
    rows = aggregate(exp.name, runs, seed_list)
    first = {c.name: done[("chosen", c.name, 1)] for c in exp.cases}
    texts = {c.name: scenario_text(c, quick, 1) for c in exp.cases}
    took = time.monotonic() - t0
    return Reproduction(exp, rows, first, texts, seed_list, quick, len(plan), took)
