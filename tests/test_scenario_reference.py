"""docs/scenarios.md and the scenario JSON Schema cannot drift from the parser.

The key table (crates/qoslab-scenario/keys.toml) is compared with the parser
both ways: for every table, the keys the parser lists as valid (its
unknown-key error) are exactly the documented ones, and every documented
example parses. The generated files must equal what the generator writes now,
and the schema must accept every shipped scenario and refuse broken ones.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location(
    "gen_scenario_reference", ROOT / "scripts" / "gen_scenario_reference.py"
)
assert _spec and _spec.loader
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)

KEYS = gen.load_keys()
TEMPLATES = KEYS["templates"]
TABLES = {t["id"]: t for t in KEYS["table"]}
PROBED = [t for t in KEYS["table"] if "probe" in t]


def documented(table: dict[str, Any]) -> set[str]:
    names = {k["name"] for k in table.get("key", [])}
    for inc in table.get("include", []):
        names |= documented(TABLES[inc])
    return names


def test_generated_files_are_up_to_date() -> None:
    doc, schema = gen.generate()
    assert gen.DOC.read_text() == doc, "run: python scripts/gen_scenario_reference.py"
    assert gen.SCHEMA.read_text() == schema, "run: python scripts/gen_scenario_reference.py"


@pytest.mark.parametrize("table", PROBED, ids=lambda t: t["id"])
def test_probe_parses(table: dict[str, Any]) -> None:
    if table.get("alone"):
        pytest.skip("an empty match table is refused by design")
    text = gen.probe_text(table, TEMPLATES)
    assert gen.parse_error(text) is None, text


@pytest.mark.parametrize(
    "table",
    [t for t in PROBED if not t.get("part_of") and not t.get("kind_params")],
    ids=lambda t: t["id"],
)
def test_documented_keys_are_exactly_the_parsers(table: dict[str, Any]) -> None:
    """Both ways: nothing the parser takes is undocumented, nothing
    documented is refused."""
    accepted = gen.parser_keys(table, TEMPLATES)
    assert accepted is not None, gen.parse_error(gen.probe_text(table, TEMPLATES, "zzz = 1"))
    accepted_set = set(accepted)
    if table.get("root_kinds"):
        accepted_set -= set(gen.root_kinds())  # documented from the parser itself
    doc = documented(table)
    assert accepted_set - doc == set(), f"{table['id']}: undocumented keys"
    assert doc - accepted_set == set(), f"{table['id']}: documented but refused"


def _examples() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for t in PROBED:
        for k in t.get("key", []):
            if not k.get("in_probe"):
                out.append((t["id"], k))
    return out


@pytest.mark.parametrize(
    "tid,key", _examples(), ids=lambda x: x if isinstance(x, str) else x["name"]
)
def test_each_example_parses_alone(tid: str, key: dict[str, Any]) -> None:
    table = TABLES[tid]
    insert = f"{key['name']} = {key['example']}"
    if key.get("needs"):
        insert += (", " if table.get("inline") else "\n") + key["needs"]
    if key.get("needs_root"):
        # class / filter / qdisc belong to a tree: give it a root.
        insert = {
            "class": 'htb = { default = "10" }\n[[policy.bottleneck.egress.class]]\n'
            'id = "10"\nrate = "5mbit"',
            "filter": 'htb = { default = "10" }\n[[policy.bottleneck.egress.class]]\n'
            'id = "10"\nrate = "5mbit"\n[[policy.bottleneck.egress.filter]]\n'
            'match = { protocol = "udp" }\nclass = "10"',
            "qdisc": 'shape = { kind = "tbf", rate = "5mbit", burst = "10kb", limit = "20kb" }\n'
            'qdisc = "sfq"',
        }[key["name"]]
    probe = table.get("probe_alone", table["probe"])
    text = gen.expand(probe, TEMPLATES)
    if key.get("replaces"):
        # the probe's own `tc = …` line is replaced by the example
        lines = [ln for ln in text.splitlines() if not ln.startswith(f"{key['replaces']} =")]
        text = "\n".join(lines) + "\n"
    if key.get("needs_root"):
        text = text.replace('police = { cir = "5mbit" }\n', "")
    if table.get("inline") and not table.get("alone") and "probe_alone" not in table:
        insert = ", " + insert
    text = text.replace("@@", insert)
    assert gen.parse_error(text) is None, text


def test_every_kind_lists_its_parameters() -> None:
    """A kind whose parameters the generator could not read (a new kind that
    needs an entry in MINIMAL) fails here instead of showing none."""
    info = gen.kinds()
    empty_ok = {"prio"}  # its classes are bands: qdisc and police only
    missing = [n for n, _, _, ps in info["meter"] + info["shaper"] if not ps and n not in empty_ok]
    missing += [n for n, ps in info["root"] if not ps and n not in empty_ok]
    assert missing == []


def test_tcp_profiles_document_every_tcp_key() -> None:
    tcp_keys = {k["name"] for k in TABLES["tcp"]["key"]} - {"profile", "awnd"}
    for profile, rows in gen.profiles().items():
        assert {k for k, _ in rows} == tcp_keys, profile


# ------------------------------------------------------------------ schema


@functools.cache
def schema() -> dict[str, Any]:
    return json.loads(gen.SCHEMA.read_text())


@functools.cache
def validator() -> Any:
    """One compiled validator (checking the schema itself once)."""
    jsonschema.Draft7Validator.check_schema(schema())
    return jsonschema.Draft7Validator(schema())


def shipped() -> list[Path]:
    files = sorted((ROOT / "scenarios").rglob("*.toml"))
    files += sorted((ROOT / "python" / "qoslab" / "data" / "scenarios").rglob("*.toml"))
    return files


def test_there_are_shipped_scenarios() -> None:
    assert len(shipped()) >= 10


@pytest.mark.parametrize("path", shipped(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_scenario_validates(path: Path) -> None:
    doc = tomllib.loads(path.read_text())
    validator().validate(doc)


@pytest.mark.parametrize("table", PROBED, ids=lambda t: t["id"])
def test_schema_accepts_every_probe(table: dict[str, Any]) -> None:
    if table.get("alone"):
        pytest.skip("empty match")
    doc = tomllib.loads(gen.probe_text(table, TEMPLATES))
    validator().validate(doc)


def _base() -> dict[str, Any]:
    return tomllib.loads((ROOT / "scenarios" / "isr4000-police.toml").read_text())


def _broken() -> list[tuple[str, dict[str, Any]]]:
    cases = []
    d = _base()
    d["scenario"]["durationn"] = "20s"
    cases.append(("unknown key in [scenario]", d))
    d = _base()
    d["scenario"]["duration"] = 20
    cases.append(("duration as a bare number", d))
    d = _base()
    d["traffic"][0]["chunks"] = 3
    cases.append(("a tcp-fetch key on tcp-bulk", d))
    d = _base()
    d["traffic"][0]["flows"] = "four"
    cases.append(("flows as a string", d))
    d = _base()
    d["topology"]["bottleneck"]["ratee"] = "1gbit"
    cases.append(("unknown link key", d))
    d = _base()
    d["record"] = {"series": ["goodput", "throughput"]}
    cases.append(("unknown series", d))
    d = copy.deepcopy(_base())
    d["policy"]["bottleneck"]["egress"] = {"police": {"cir": "20mbit", "bcc": "1000B"}}
    cases.append(("unknown police parameter", d))
    d = _base()
    d["tcp"] = {}
    cases.append(("unknown table", d))
    return cases


@pytest.mark.parametrize("what,doc", _broken(), ids=lambda x: x if isinstance(x, str) else "")
def test_schema_refuses_broken_scenarios(what: str, doc: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        validator().validate(doc)


def test_the_schema_is_package_data() -> None:
    from importlib.resources import files

    text = files("qoslab").joinpath("data/scenario.schema.json").read_text()
    assert json.loads(text)["title"] == "qoslab scenario"


@pytest.mark.parametrize("path", shipped(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_scenario_cites_a_publication(path: Path) -> None:
    """`source` names a publication with its URL, never a local path."""
    source = tomllib.loads(path.read_text())["scenario"].get("source", "")
    if path.name == "example.toml":
        assert source == ""  # a teaching example, not a reproduction
        return
    assert "http" in source and "shared/" not in source, source
    assert not source.startswith(("qoslab/", "/", "tests/")), source
