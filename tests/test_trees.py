"""Policy trees end to end from Python: the shipped tree scenarios run, the
summary carries one row per class, and tree mistakes are located errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import qoslab

TREES = Path(__file__).resolve().parent.parent / "scenarios" / "trees"


@pytest.mark.parametrize("path", sorted(TREES.glob("*.toml")), ids=lambda p: p.stem)
def test_every_tree_scenario_parses(path: Path) -> None:
    text = path.read_text()
    assert "source" in text and "Chosen where the source is silent" in text


def test_fair_queue_summary_has_classes_and_equal_shares() -> None:
    r = qoslab.simulate(TREES / "isr4000-shape-fair-queue.toml")
    s = r.summary
    assert s["jain_fairness"] >= 0.99
    tree = next(p for p in s["policies"] if p["classes"])
    root = tree["classes"][0]
    assert root["name"] == "root" and root["parent"] is None
    assert root["packets_in"] >= root["packets_out"] + root["drops"]["packets"]
    assert set(root["colors"]["green"]) == {"in", "out", "dropped"}


def test_htb_class_rows_and_a_missing_default_is_located() -> None:
    text = (TREES / "linux-htb-pfifo.toml").read_text().replace('"30s"', '"3s"')
    r = qoslab.simulate(text)
    names = [c["name"] for p in r.summary["policies"] for c in p["classes"]]
    assert names == ["root", "20"]
    # The policy is the source's tc text: the error points at it.
    bad = text.replace("htb default 20", "htb r2q 10")
    with pytest.raises(qoslab.ScenarioError) as e:
        qoslab.simulate(bad)
    assert "needs default" in str(e.value)
    line = next(i for i, s in enumerate(bad.splitlines(), 1) if s.startswith("tc ="))
    assert f":{line}:" in str(e.value)
