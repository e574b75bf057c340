"""Scenario warnings (a filter matching no flow) and dict scenarios' errors."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import qoslab
from qoslab.scenario import ScenarioWarning, scenario_info

TREE = """[scenario]
duration = "1s"
[topology]
access = { rate = "1gbit" }
bottleneck = { rate = "10mbit" }
[policy.bottleneck.egress]
htb = { default = "20" }
[[policy.bottleneck.egress.class]]
id = "10"
rate = "5mbit"
[[policy.bottleneck.egress.class]]
id = "20"
rate = "5mbit"
[[policy.bottleneck.egress.filter]]
match = { dst_port = MATCH_PORT, protocol = "udp" }
class = "10"
[[traffic]]
kind = "udp"
rate = "1mbit"
"""


def test_a_filter_matching_no_flow_warns_at_its_line(tmp_path: Path) -> None:
    p = tmp_path / "f.toml"
    p.write_text(TREE.replace("MATCH_PORT", "5001"))
    with pytest.warns(ScenarioWarning) as got:
        info = scenario_info(p.read_text(), str(p))
    assert len(got) == 1
    w = got[0]
    assert (w.filename, w.lineno) == (str(p), 15)
    assert "filter[0]" in str(w.message) and "no packet has this dst_port" in str(w.message)
    assert "5201" in str(w.message)  # says which port flows use
    assert [x["line"] for x in info["warnings"]] == [15]


def test_a_filter_matching_the_flows_is_silent() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        info = scenario_info(TREE.replace("MATCH_PORT", "5201"))
    assert info["warnings"] == []


def test_qoslab_run_prints_the_warning(tmp_path: Path) -> None:
    p = tmp_path / "f.toml"
    p.write_text(TREE.replace("MATCH_PORT", "5001"))
    r = subprocess.run(
        [sys.executable, "-m", "qoslab.cli", "run", str(p)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert f"{p}:15: ScenarioWarning:" in r.stderr
    assert "match = { dst_port = 5001" in r.stderr  # the line itself


def test_no_shipped_scenario_has_a_dead_filter() -> None:
    root = Path(__file__).resolve().parent.parent
    for p in sorted((root / "scenarios").rglob("*.toml")):
        assert scenario_info(p.read_text(), str(p), warn=False)["warnings"] == [], p


def test_a_dict_error_names_the_key_path() -> None:
    d = {
        "scenario": {"duration": "1s"},
        "node": [{"name": "a"}, {"name": "b"}],
        "link": [{"a": "a", "b": "b", "rate": "10mbit"}, {"a": "b", "b": "a", "rate": "fast"}],
        "traffic": [{"kind": "udp", "from": "a", "to": "b", "rate": "1mbit"}],
    }
    with pytest.raises(qoslab.ScenarioError) as e:
        qoslab.simulate(d)
    assert str(e.value).startswith("<dict>: link[1].rate: "), str(e.value)
    assert e.value.path == "link[1].rate"


def test_a_dict_warning_has_no_line() -> None:
    from qoslab.scenario import load_scenario

    d = {
        "scenario": {"duration": "1s"},
        "topology": {"access": {"rate": "1gbit"}, "bottleneck": {"rate": "10mbit"}},
        "policy": {
            "bottleneck": {
                "egress": {
                    "htb": {"default": "20"},
                    "class": [{"id": "10", "rate": "5mbit"}, {"id": "20", "rate": "5mbit"}],
                    "filter": [{"match": {"dst_port": 5001}, "class": "10"}],
                }
            }
        },
        "traffic": [{"kind": "udp", "rate": "1mbit"}],
    }
    with pytest.warns(ScenarioWarning, match=r"policy\.bottleneck\.egress\.filter\[0\]") as got:
        scenario_info(*load_scenario(d))
    assert (got[0].filename, got[0].lineno) == ("<dict>", 0)


def test_the_api_simulate_issues_the_warning_once(tmp_path: Path) -> None:
    p = tmp_path / "f.toml"
    p.write_text(TREE.replace("MATCH_PORT", "5001"))
    with pytest.warns(qoslab.ScenarioWarning) as got:
        qoslab.simulate(str(p))
    assert [(w.filename, w.lineno) for w in got if w.category is ScenarioWarning] == [(str(p), 15)]
