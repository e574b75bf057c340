"""A policy tree's description names classes by the user's ids (``default =
"20"`` shows as ``default=20``, not the core's index) and keeps every class
(not only the last): in ``qoslab shape tree`` (human and ``--json``), in
``qoslab.describe``-style params of a run's results and in its report row."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import qoslab
from qoslab.api import params_dict, params_lines
from qoslab.cli import main
from qoslab.report import policy_rows

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
TREES = ["htb-two-classes.toml", "hfsc-two-classes.toml"]


def _shape(capsys: pytest.CaptureFixture[str], policy: str, *more: str) -> str:
    argv = ["shape", "tree", "--policy", str(ROOT / "examples" / policy)]
    argv += ["--input", str(ROOT / "examples" / "two-flows.csv"), *more]
    assert main(argv) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("policy", TREES)
def test_shape_tree_human_output_names_every_class_by_id(capsys, policy: str) -> None:
    out = _shape(capsys, policy)
    head = out.splitlines()[0]
    assert " default=20 " in f"{head} ", head
    classes = [ln.strip() for ln in out.splitlines() if ln.startswith("  class ")]
    assert [c.split()[1] for c in classes] == ["id=1", "id=10", "id=20"], out
    assert all(c.split()[2] == "parent=1" for c in classes[1:]), classes
    assert classes[0].split()[2] == "parent=root", classes


@pytest.mark.parametrize("policy", TREES)
def test_shape_tree_json_keeps_every_class(capsys, policy: str) -> None:
    s = json.loads(_shape(capsys, policy, "--json"))
    assert s["params"]["default"] == "20"
    assert [c.split()[0] for c in s["params"]["class"]] == ["id=1", "id=10", "id=20"]


def test_params_dict_lists_repeated_keys() -> None:
    pairs = [("kind", "prio"), ("bands", "2"), ("band", "a"), ("band", "b"), ("x", "1"), ("x", "2")]
    d = params_dict(pairs)
    assert d == {"kind": "prio", "bands": "2", "band": ["a", "b"], "x": ["1", "2"]}
    assert params_dict([("class", "only")]) == {"class": ["only"]}
    assert params_lines(d) == ["bands=2", "band a", "band b", "x 1", "x 2"]


def test_run_results_keep_every_class_with_its_id() -> None:
    doc = tomllib.loads((ROOT / "scenarios" / "example.toml").read_text(encoding="utf-8"))
    doc["scenario"]["duration"] = "1s"
    policy = tomllib.loads((ROOT / "examples" / "htb-two-classes.toml").read_text("utf-8"))
    doc["policy"] = {"bottleneck": {"egress": policy}}
    r = qoslab.simulate(doc)
    (p,) = r.summary["policies"]
    assert p["params"]["default"] == "20"
    assert [c.split()[0] for c in p["params"]["class"]] == ["id=1", "id=10", "id=20"]
    (row,) = policy_rows(r.summary)
    assert "default=20" in row[2] and "class id=10 parent=1" in row[2], row
    assert any(c.startswith("id=20 parent=1") for c in r.policies["params.class"].iloc[0])
    # Each class carries its own parameters, under the user's id.
    by_name = {c["name"]: c for c in p["classes"]}
    assert by_name["10"]["params"]["parent"] == "1"
    assert by_name["20"]["params"]["id"] == "20"
    assert set(r.classes["name"]) >= {"1", "10", "20"}
