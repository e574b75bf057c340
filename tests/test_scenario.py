"""Scenario input from Python: files, TOML text and dicts go through the one
Rust parser; errors are ``ScenarioError`` with file, line, column, key path
and the nearest valid key."""

from __future__ import annotations

from pathlib import Path

import pytest
import qoslab
from qoslab.scenario import load_scenario, scenario_info, with_seed

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))

MINIMAL = """\
[scenario]
duration = "1s"

[topology]
access = { rate = "1gbit" }
bottleneck = { rate = "10mbit", delay = "2ms" }

[[traffic]]
kind = "tcp-bulk"
"""


def error_of(text: str, filename: str = "s.toml") -> qoslab.ScenarioError:
    with pytest.raises(qoslab.ScenarioError) as info:
        scenario_info(text, filename)
    return info.value


def test_a_valid_scenario_reports_its_settings() -> None:
    info = scenario_info(MINIMAL, "dir/minimal.toml")
    assert info["name"] == "minimal"
    assert info["duration_ns"] == 1_000_000_000
    assert info["seed"] == 1
    assert info["series"] == ["goodput", "ping"]


def test_a_typo_names_file_line_column_key_and_suggestion() -> None:
    e = error_of(MINIMAL + "flow = 4\n")
    assert (e.file, e.line, e.column) == ("s.toml", 10, 1)
    assert e.path == "traffic[0].flow"
    assert "did you mean 'flows'?" in e.message
    assert str(e).startswith("s.toml:10:1: traffic[0].flow: unknown key 'flow'")
    assert isinstance(e, ValueError)


def test_a_bad_unit_points_at_the_value() -> None:
    e = error_of(MINIMAL.replace('"10mbit"', '"10 megabit"'))
    assert (e.line, e.column) == (6, 23)
    assert e.path == "topology.bottleneck.rate"
    assert "expected a rate such as '20mbit'" in e.message


def test_a_conditioner_parameter_typo_is_located_in_the_policy() -> None:
    text = MINIMAL + '\n[policy.bottleneck.egress]\npolice = { cir = "20mbit", bz = "1" }\n'
    e = error_of(text)
    assert e.line == 12
    assert e.path == "policy.bottleneck.egress.police.bz"
    assert "did you mean 'bc'?" in e.message


def test_an_unknown_table_is_refused() -> None:
    e = error_of(MINIMAL + "[recrod]\n")
    assert e.path == "recrod"
    assert "did you mean 'record'?" in e.message


def test_syntax_errors_carry_a_position() -> None:
    e = error_of("[scenario]\nduration = 1s\n")
    assert (e.line, e.column) == (2, 12)
    assert e.message.startswith("invalid TOML")


def test_dicts_and_text_are_parsed_like_files(tmp_path: Path) -> None:
    d = {
        "scenario": {"duration": "1s", "seed": 3},
        "topology": {"access": {"rate": "1gbit"}, "bottleneck": {"rate": "10mbit"}},
        "traffic": [{"kind": "ping", "interval": "100ms"}],
    }
    text, name = load_scenario(d)
    assert name == "<dict>"
    assert scenario_info(text, name)["seed"] == 3
    assert load_scenario(MINIMAL) == (MINIMAL, "<string>")
    p = tmp_path / "x.toml"
    p.write_text(MINIMAL, encoding="utf-8")
    assert load_scenario(p) == (MINIMAL, str(p))
    assert load_scenario(str(p)) == (MINIMAL, str(p))
    d["traffic"][0]["intervall"] = "1s"
    # A dict's error names its key path, not a line of TOML the user never saw.
    with pytest.raises(qoslab.ScenarioError, match=r"^<dict>: traffic\[0\]\.intervall: unknown"):
        qoslab.simulate(d)


def test_a_missing_file_is_a_scenario_error(tmp_path: Path) -> None:
    # Every API error is a qoslab exception (issue 15); the OS's reason is kept.
    with pytest.raises(qoslab.ScenarioError, match=r"nope\.toml: No such file"):
        load_scenario(tmp_path / "nope.toml")
    with pytest.raises(TypeError):
        load_scenario(42)  # type: ignore[arg-type]


def test_with_seed_rewrites_only_the_seed() -> None:
    text = with_seed(MINIMAL, 99)
    info = scenario_info(text)
    assert info["seed"] == 99
    assert info["duration_ns"] == 1_000_000_000


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_every_shipped_scenario_parses_and_names_its_source(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    info = scenario_info(text, str(path))
    assert info["description"]
    if path.name != "example.toml":
        # a publication (title, author or site, date), never a path outside the repository
        assert len(info["source"]) > 20 and "shared/" not in info["source"], info["source"]
