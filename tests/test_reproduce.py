from __future__ import annotations

import json
import os
import sys
from functools import cache
from pathlib import Path

import pytest
from qoslab import reproduce as rp
from qoslab.cli import main
from qoslab.reproduce import checks, packetlife, rfc2963
from qoslab.reproduce.model import Published, PublishedClaim, Reference

ROOT = Path(__file__).resolve().parent.parent
SEEDS = rp.DEFAULT_SEEDS  # the multi-seed claims are judged at --quick lengths


@cache
def quick() -> tuple[rp.Reproduction, ...]:
    return tuple(rp.reproduce(n, quick=True, seeds=SEEDS) for n in rp.EXPERIMENTS)


def _rows() -> list[rp.Row]:
    return [r for x in quick() for r in x.rows]


def _row(exp: str, case: str, metric: str) -> rp.Row:
    (row,) = [r for r in _rows() if (r.experiment, r.case, r.metric) == (exp, case, metric)]
    return row


def test_every_row_has_a_kind_a_source_and_a_verdict():
    rows = _rows()
    assert {x.experiment.name for x in quick()} == {"packetlife", "isr4000", "rfc2963", "linux"}
    assert {r.kind for r in rows} == {"number", "claim", "sanity"}
    for r in rows:
        assert r.verdict in ("holds", "off", "fails"), r
        assert r.seeds == SEEDS
        if r.kind == "sanity":
            assert r.source is None and r.verdict != "off"
        else:
            assert isinstance(r.source, str) and len(r.source) > 10, r
        if r.kind == "number":
            assert r.seeds_holding is None
            if r.ours is not None:
                assert r.rel_diff == pytest.approx((r.ours - r.published) / r.published, abs=1e-3)
        else:
            assert 0 <= r.seeds_holding <= SEEDS
        # every value of every assumption was judged (sanity: the chosen values only)
        labels = [v["assumption"] for v in r.variants]
        assert labels[0] == "chosen"
        if r.kind != "sanity":
            exp = rp.EXPERIMENTS[r.experiment]
            assert labels[1:] == [v[1] for v in rp.variants(exp)]


def test_every_case_ran_and_every_row_is_present_in_every_run():
    for x in quick():
        assert sorted(x.results) == sorted(c.name for c in x.experiment.cases)
        assert not [r for r in x.rows if any(v.get("missing") for v in r.variants)], [
            (r.case, r.metric) for r in x.rows if any(v.get("missing") for v in r.variants)
        ]
    cases = {r.case for r in _rows() if r.experiment == "rfc2963"}
    assert {"unshaped", "trras", "g_trras"} <= cases
    linux = {r.case for r in _rows() if r.experiment == "linux"}
    assert {"htb-pfifo-0.18", "htb-pfifo-2", "htb-pfifo-128", "htb-bfifo", "sfq"} <= linux


# Verdicts at --quick lengths over 8 seeds: what reproduces and what does not
# (docs/reproductions.md says why). A change in the engine that moves one of
# these must update this list and the docs.
EXPECTED = {
    ("isr4000", "shape", "no drops with queue-limit 200"): "holds",
    ("isr4000", "shape-fair-queue", "no pauses: no flow idle for 20 ms or more"): "holds",
    ("isr4000", "shape-83", "queue-limit 83 drops packets in slow start"): "holds",
    ("isr4000", "shape vs police", "shaper sum > policer sum"): "fails",
    ("packetlife", "police", "unequal shares under policing: Jain's index <= 0.97"): "fails",
    ("packetlife", "shape vs police", "shaper sum > policer sum"): "off",
    ("rfc2963", "g_trras vs trras", "G-trRAS customers' total > trRAS customers' total"): "fails",
    ("linux", "sfq-flows-1", "sfq flows 1: nearly every ping lost (>= 90 %)"): "holds",
}


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_known_verdicts(key):
    row = _row(*key)
    assert row.verdict == EXPECTED[key], (row.published, row.ours, row.note, row.variants)


def test_summary_counts_each_kind_separately():
    def row(kind, verdict):
        return rp.Row("e", "c", f"{kind}{verdict}", kind, None, 1, 1, None, verdict, 8)

    rows = [row("number", "holds"), row("number", "off"), row("number", "fails")]
    rows += [row("claim", "holds"), row("claim", "fails"), row("sanity", "holds")]
    assert rp.summary_line(rows) == (
        "3 numbers: 1 hold, 1 off, 1 fail; 2 claims: 1 hold, 0 off, 1 fail; "
        "1 sanity: 1 hold, 0 fail"
    )


PUB = Published(100.0, "table 1")
CLAIM = PublishedClaim("x", "it grows", "page 2", effect=0.4, effect_is="gain")


def _aggregate(record, seeds=8, variants=()):
    runs = {}
    for label in ("chosen", *variants):
        runs[label] = []
        for seed in range(seeds):
            c = checks.Checks()
            record(c, label, seed)
            runs[label].append(c)
    (row,) = checks.aggregate("e", runs, list(range(1, seeds + 1)))
    return row


@pytest.mark.parametrize("ours,verdict", [(110.0, "holds"), (130.0, "off"), (160.0, "fails")])
def test_number_verdicts(ours, verdict):
    row = _aggregate(lambda c, label, seed: c.number("c", "m", PUB, ours))
    assert (row.verdict, row.ours, row.kind, row.source) == (verdict, ours, "number", "table 1")


def test_a_missing_measurement_fails_its_row():
    row = _aggregate(lambda c, label, seed: c.number("c", "m", PUB, None if seed == 3 else 100.0))
    assert row.verdict == "fails" and "not measured" in row.note
    row = _aggregate(lambda c, label, seed: c.claim("c", "m", CLAIM, "x", True, None))
    assert row.verdict == "fails"  # the source gives a magnitude: ours must be measured


@pytest.mark.parametrize(
    "k,effect,verdict",
    [(8, 0.4, "holds"), (6, 0.3, "holds"), (5, 0.4, "fails"), (8, 0.1, "off"), (8, 0.9, "off")],
)
def test_claim_needs_a_clear_majority_and_the_sources_magnitude(k, effect, verdict):
    row = _aggregate(lambda c, label, seed: c.claim("c", "m", CLAIM, "x", seed < k, effect))
    assert (row.verdict, row.seeds_holding, row.seeds) == (verdict, k, 8)
    assert row.source == "page 2"


def test_a_verdict_covers_the_whole_assumption_range():
    def record(c, label, seed):
        c.claim("c", "m", CLAIM, "x", label != "delay 2ms", 0.4)

    row = _aggregate(record, variants=("delay 0.5ms", "delay 2ms"))
    assert row.verdict == "fails" and row.seeds_holding == 0
    assert "does not hold at: delay 2ms" in row.note
    assert [v["verdict"] for v in row.variants] == ["holds", "holds", "fails"]


def test_sanity_must_hold_on_every_seed():
    row = _aggregate(lambda c, label, seed: c.sanity("c", "m", "x", "y", seed != 0))
    assert (row.kind, row.source, row.verdict, row.seeds_holding) == ("sanity", None, "fails", 7)


def test_published_values_come_from_the_reference_file(monkeypatch):
    ref = Reference.load("packetlife-1mbit.toml")
    doc = json.loads(json.dumps(ref.doc))
    doc["police"]["sum_kbps"] = 1234
    doc["claims"]["shape_gain"]["effect"] = 0.5
    results = next(x for x in quick() if x.experiment.name == "packetlife").results
    c = checks.Checks()
    packetlife.check(c, Reference(doc, "x.toml"), results)
    assert c.specs[("police", "sum kbit/s")].published == 1234
    assert c.specs[("shape vs police", "shaper sum > policer sum")].effect == 0.5
    del doc["police"]["at"]
    with pytest.raises(KeyError, match="no location"):
        packetlife.check(checks.Checks(), Reference(doc, "x.toml"), results)


def _published_numbers() -> set[float]:
    """Every figure the sources printed, as the reference files hold them."""
    out: set[float] = set()
    for f in (rp.data_dir() / "reference").glob("*.toml"):
        doc = rp.tomllib.loads(f.read_text())
        for name, table in doc.items():
            if name == "claims":
                out |= {float(c["effect"]) for c in table.values() if "effect" in c}
                continue
            for key, value in table.items():
                if key == "rows":  # [cir (configured), green, yellow, total]
                    out |= {float(x) for row in value for x in row[1:]}
                elif key == "ping_ms" and isinstance(value, list):  # [rate, ping]
                    out |= {float(p) for _, p in value}
                elif f"{key}_at" in table or (
                    key.startswith(("per_flow", "sum_")) and "at" in table
                ):
                    out |= {float(x) for x in (value if isinstance(value, list) else [value])}
    return out


def test_no_published_number_is_written_in_python():
    """The figures the sources printed live in data/reference only: no
    numeric literal of the checkers equals one."""
    import ast

    published = _published_numbers()
    assert {841.0, 17.1, 65400.0, 75.0, 0.14, 9.77} <= published
    # small whole numbers (2 seeds, 10 flows, 2 Mbit/s) say nothing about where a value came from
    published = {x for x in published if not (x.is_integer() and abs(x) <= 10)}
    hits = []
    for p in (ROOT / "python/qoslab/reproduce").glob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Constant) and type(node.value) in (int, float):
                if float(node.value) in published:
                    hits.append((p.name, node.lineno, node.value))
    assert not hits, hits


def test_rfc2963_colours_split_the_same_bytes_over_the_same_interval():
    r = next(x for x in quick() if x.experiment.name == "rfc2963").results["trras"]
    rates = rfc2963.customer_rates(r)
    assert sorted(rates) == list(range(1, 11))
    for i, row in rates.items():
        assert row["green"] + row["yellow"] + row["red"] == pytest.approx(row["total"]), i
        assert 0 <= row["green"] <= row["total"]


def test_every_assumption_is_run_over_its_range_or_says_why_not():
    for exp in rp.EXPERIMENTS.values():
        for a in exp.assumptions:
            assert a.chosen and a.why and a.range
            assert a.variants or a.no_run, a.name
    labels = {v[1] for e in rp.EXPERIMENTS.values() for v in rp.variants(e)}
    assert {"link delay 2ms", "FIFO under the shaper (64 p)"} <= labels
    assert "UDP load 1000 x R (link-capped)" in labels


def test_cases_and_variants_use_existing_files_and_keys():
    for exp in rp.EXPERIMENTS.values():
        for case in exp.cases:
            assert case.quick_s > 0
            text = rp.scenario_text(case, quick=False)  # a wrong Case.set key raises
            for key, value in case.set:
                assert f"{key} = {value!r}" in text
            for series in case.series:
                assert f'"{series}"' in text
        for _, label, edits in rp.variants(exp):
            assert edits, label
            for cname, es in edits.items():
                case = next(c for c in exp.cases if c.name == cname)
                text = rp.scenario_text(case, True, 3, es, label)
                assert f"({label})" in text.splitlines()[0] and "seed = 3" in text


def test_a_sweep_case_changes_only_its_keys():
    case = next(c for c in rp.EXPERIMENTS["linux"].cases if c.name == "htb-pfifo-128")
    text = rp.scenario_text(case, quick=True, seed=2)
    doc = rp.tomllib.loads(text)
    cls = doc["policy"]["bottleneck"]["egress"]["class"][0]
    assert (cls["rate"], cls["ceil"]) == ("128mbit", "128mbit")
    assert doc["traffic"][1]["rate"] == "12800kbit"
    assert doc["scenario"]["duration"] == "5s" and doc["scenario"]["seed"] == 2
    assert "linux-htb-pfifo.toml as run" in text.splitlines()[0]


def test_rfc2963_scenarios_are_what_the_generator_writes():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen", ROOT / "scripts" / "gen_rfc2963.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    for name, shaper in gen.FILES.items():
        path = rp.data_dir() / "scenarios" / "reproduce" / name
        assert path.read_text() == gen.render(shaper), f"run python scripts/gen_rfc2963.py ({name})"


def test_quick_shortens_the_scenario():
    case = rp.EXPERIMENTS["isr4000"].cases[0]
    assert 'duration = "6s"' in rp.scenario_text(case, quick=True)
    assert 'duration = "20s"' in rp.scenario_text(case, quick=False)


def test_json_rows_and_exit_status(capsys):
    status = main(["reproduce", "isr4000", "--quick", "--json", "--seeds", "2"])
    out, err = capsys.readouterr()
    rows = json.loads(out)  # progress goes to stderr only
    assert status == 0
    lines = err.splitlines()
    assert lines[0] == "reproduce [1/1] isr4000: running 4 cases x 2 seeds + assumption variants..."
    assert lines[1].startswith("reproduce [1/1] isr4000: done in ")
    assert len(lines) == 2 and "\r" not in err  # no progress bar off a terminal
    for r in rows:
        assert {"kind", "source", "verdict", "seeds", "seeds_holding", "published", "ours"} <= set(
            r
        )
    claim = next(r for r in rows if r["metric"] == "shaper sum > policer sum")
    assert claim["kind"] == "claim" and claim["seeds"] == 2 and claim["verdict"] == "fails"
    assert "conclusions" in claim["source"]
    assert main(["reproduce", "isr4000", "--quick", "--json", "--seeds", "1", "--strict"]) == 1


def test_report_and_markdown(tmp_path, capsys):
    rep, md = tmp_path / "r.html", tmp_path / "docs" / "rep.md"
    md.parent.mkdir()
    main(
        [
            "reproduce",
            "isr4000",
            "--quick",
            "--seeds",
            "1",
            "--report",
            str(rep),
            "--markdown",
            str(md),
        ]
    )
    out = capsys.readouterr().out
    assert "== Cisco ISR 4000" in out and "assumptions" in out
    html = rep.read_text()
    assert 'data-figure="isr4000-io_graph"' in html and "shape-fair-queue" in html
    text = md.read_text()
    assert text.startswith("# Reproductions")
    assert "**What does not**" in text and "| assumption |" in text
    assert "qoslab reproduce --all --markdown docs/reproductions.md" in text
    assert "](rep/isr4000-io_graph.png)" in text
    assert (md.parent / "rep" / "isr4000-io_graph.png").exists()


def test_progress_lines_and_bar_on_a_terminal(capsys, monkeypatch):
    monkeypatch.setattr(rp.registry, "EXPERIMENTS", {"isr4000": rp.EXPERIMENTS["isr4000"]})
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    main(["reproduce", "--all", "--quick", "--json", "--seeds", "1"])
    out, err = capsys.readouterr()
    assert json.loads(out)
    lines = err.split("\n")
    assert lines[0].startswith("reproduce [1/1] isr4000: running 4 cases x 1 seed ")
    # The bars (tqdm's rendering is not checked): each run's label with its
    # place in the experiment, and its simulated seconds as the total.
    bars = lines[1].split("\r")
    for j, case in enumerate(("police", "shape", "shape-83", "shape-fair-queue")):
        assert any(b.startswith(f"isr4000 [{j + 1}/20] {case} seed 1: ") for b in bars)
    assert any("[links 100 Mbit/s]: " in b for b in bars)
    assert any("[delayed ACK 40 ms]: " in b for b in bars)
    assert any("[IP packets counted]: " in b for b in bars)
    assert any("/6.0 s" in b for b in bars)
    # Final state: the last bar is cleared before the closing line.
    assert bars[-2].strip() == ""
    assert bars[-1].startswith("reproduce [1/1] isr4000: done in ")
    assert lines[2:] == [""]


def _earlier_markdown(md, figures):
    md.write_text("earlier\n")
    for png in figures:
        png.parent.mkdir(parents=True, exist_ok=True)
        png.write_bytes(b"earlier")


def _files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("fail", ["drawing", "2nd figure", "text"])
def test_markdown_failure_keeps_the_earlier_files(tmp_path, monkeypatch, fail):
    md = tmp_path / "docs" / "rep.md"
    md.parent.mkdir()
    reps = quick()
    _, figures = rp.markdown(reps, rp.markdown_figures_dir(md), md, True)
    assert len(figures) >= 3
    _earlier_markdown(md, figures)
    before = _files(tmp_path)
    if fail == "drawing":
        monkeypatch.setattr("matplotlib.figure.Figure.savefig", _raise(RuntimeError))
    else:  # Ctrl-C while writing a file: the 2nd figure, or the text (written last)
        calls = {"n": 0}
        stop = 2 if fail == "2nd figure" else len(figures) + 1
        real = os.fsync

        def fsync(fd):
            calls["n"] += 1
            if calls["n"] == stop:
                raise KeyboardInterrupt
            real(fd)

        monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(RuntimeError if fail == "drawing" else KeyboardInterrupt):
        rp.write_markdown(reps, md, True)
    assert _files(tmp_path) == before  # no temporary left
    assert md.read_text() == "earlier\n"
    # One unit (issue 15): no new figure beside the earlier text.
    assert [p for p in figures if p.read_bytes() != b"earlier"] == []
    monkeypatch.undo()
    rp.write_markdown(reps, md, True)
    assert md.read_text().startswith("# Reproductions")
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in figures)
    assert _files(tmp_path) == before


def _raise(exc):
    def f(*a, **k):
        raise exc("injected")

    return f


def test_ctrl_c_in_markdown_keeps_the_earlier_doc(tmp_path, monkeypatch, capsys):
    md = tmp_path / "rep.md"
    md.write_text("earlier\n")
    monkeypatch.setattr(os, "fsync", _raise(KeyboardInterrupt))
    assert (
        main(["reproduce", "packetlife", "--quick", "--seeds", "1", "--markdown", str(md)]) == 130
    )
    assert capsys.readouterr().err.splitlines()[-1] == "qoslab: cancelled"
    assert md.read_text() == "earlier\n"
    assert _files(tmp_path) == ["rep.md"]  # the figures' directory is made, but empty


@pytest.mark.parametrize("what", ["markdown-dir", "figures-file", "report-dir"])
def test_bad_output_paths_are_refused_before_the_runs(tmp_path, monkeypatch, capsys, what):
    (tmp_path / "d").mkdir()
    (tmp_path / "rep").write_text("x")
    monkeypatch.setattr(rp.registry, "reproduce", _raise(AssertionError))  # must not be reached
    option, path = {
        "markdown-dir": ("--markdown", tmp_path / "d"),
        "figures-file": ("--markdown", tmp_path / "rep.md"),
        "report-dir": ("--report", tmp_path / "d"),
    }[what]
    assert main(["reproduce", "--all", option, str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("qoslab: error: ") and len(err.splitlines()) == 1, err
    assert _files(tmp_path) == ["rep"]


def test_usage_errors(capsys):
    assert main(["reproduce"]) == 2
    assert "--all" in capsys.readouterr().err
    assert main(["reproduce", "nosuch"]) == 2
    assert "unknown experiment 'nosuch'" in capsys.readouterr().err
    assert main(["reproduce", "isr4000", "--seeds", "0"]) == 2
    assert "--seeds" in capsys.readouterr().err
