"""Writes docs/scenarios.md and python/qoslab/data/scenario.schema.json from
the scenario key table (crates/qoslab-scenario/keys.toml) and from the parser
itself (the kinds, their parameters and the TCP profile defaults are asked of
``qoslab._core``, so they cannot drift from the Rust code).

    python scripts/gen_scenario_reference.py          # rewrite both files
    python scripts/gen_scenario_reference.py --check  # exit 1 if either is stale

tests/test_scenario_reference.py checks that both files are up to date and
that the key table says exactly what the parser accepts.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import string
import sys
from pathlib import Path
from typing import Any

import tomllib

ROOT = Path(__file__).resolve().parent.parent
KEYS = ROOT / "crates" / "qoslab-scenario" / "keys.toml"
DOC = ROOT / "docs" / "scenarios.md"
SCHEMA = ROOT / "python" / "qoslab" / "data" / "scenario.schema.json"
SCHEMA_URL = "https://qoslab.invalid/scenario.schema.json"
BOGUS = "zzz_not_a_key"

_VALID = re.compile(r"valid: ([^;]*?)\s*$")


def load_keys() -> dict[str, Any]:
    with KEYS.open("rb") as f:
        return tomllib.load(f)


def expand(text: str, templates: dict[str, str]) -> str:
    """``$name`` → the template (templates end with a newline)."""
    return string.Template(text).substitute({k: v.rstrip("\n") for k, v in templates.items()})


def probe_text(table: dict[str, Any], templates: dict[str, str], insert: str = "") -> str:
    """The table's probe scenario with ``insert`` at ``@@`` (inline tables
    get ``, insert``; an empty inline table gets ``insert`` alone)."""
    text = expand(table["probe"], templates)
    if insert and table.get("inline") and not table.get("alone"):
        insert = ", " + insert
    return text.replace("@@", insert)


def parse_error(text: str) -> str | None:
    """The parser's error message for ``text`` (None if it parses)."""
    from qoslab import _core

    try:
        _core.scenario_info(text, "probe.toml")
    except ValueError as e:
        return str(e)
    return None


def valid_list(message: str | None) -> list[str] | None:
    """The ``valid: a, b, c`` list of an unknown-key error."""
    if message is None:
        return None
    if BOGUS not in message and BOGUS.replace("_", "-") not in message:
        return None
    m = _VALID.search(message)
    return [k.strip() for k in m.group(1).split(",") if k.strip()] if m else None


def parser_keys(table: dict[str, Any], templates: dict[str, str]) -> list[str] | None:
    """The keys the parser accepts in ``table`` (from its unknown-key error)."""
    return valid_list(parse_error(probe_text(table, templates, f"{BOGUS} = 1")))


# --------------------------------------------------------------- the kinds

_SCENARIO = """[scenario]
duration = "1s"
[topology]
access = { rate = "1gbit" }
bottleneck = { rate = "10mbit" }
[[traffic]]
kind = "udp"
rate = "1mbit"
"""


def _policy(body: str) -> str:
    return _SCENARIO + "[policy.bottleneck.egress]\n" + body


def root_kinds() -> list[str]:
    """Every key that may name a root qdisc (from the parser's error)."""
    keys = valid_list(parse_error(_policy(f"{BOGUS} = 1\n"))) or []
    flat = {"police", "shape", "fifo", "class", "filter", "qdisc", "stab"}
    return [k for k in keys if k not in flat]


#: The parameters a kind refuses to be built without, so that the parser
#: reaches its unknown-parameter check (a kind missing here shows no
#: parameters, which tests/test_scenario_reference.py refuses).
MINIMAL = {
    "police": 'cir = "1mbit"',
    "linux-police": 'rate = "1mbit", burst = "10kb"',
    "srtcm": 'cir = "1mbit", cbs = "10kb", ebs = "10kb"',
    "trtcm": 'cir = "1mbit", cbs = "10kb", pir = "2mbit", pbs = "10kb"',
    "tswtcm": 'ctr = "1mbit", ptr = "2mbit"',
    "mef": 'cir = "1mbit", cbs = "10kb", eir = "1mbit", ebs = "10kb"',
    "tbf": 'rate = "1mbit", burst = "10kb", limit = "10kb"',
    "shape": 'cir = "1mbit"',
    "srras": 'cir = "1mbit", mir = "2mbit", buffer = "64kb", cir_th = "3000B", mir_th = "6000B"',
    "trras": 'cir = "1mbit", pir = "2mbit", mir = "3mbit", buffer = "64kb", cir_th = "3000B", '
    'pir_th = "4500B", mir_th = "6000B"',
    "g-srras": 'cir = "1mbit", mir = "2mbit", buffer = "64kb", cbs = "10kb", ebs = "10kb"',
    "g-trras": 'cir = "1mbit", pir = "2mbit", mir = "3mbit", buffer = "64kb", '
    'cbs = "10kb", pbs = "10kb"',
    "red": 'limit = "100kb", avpkt = 1000, min = "10kb", max = "30kb", bandwidth = "10mbit"',
    "wred": 'limit = "1000p", preset = "rfc2963"',
    "rio": 'limit = "1000p", preset = "rfc2963"',
}
#: The same for a class of a classful root.
MINIMAL_CLASS = {"htb": 'rate = "1mbit"'}

#: Classful roots take `default` (read by the tree builder, not listed by
#: the kinds' parameter check).
DEFAULT_KEY = ("htb", "hfsc", "drr")


def kind_params(family: str, kind: str) -> list[str] | None:
    """The parameters of ``kind`` as the parser lists them: a meter
    (``police = {kind}``), a shaper (``shape = {kind}``), a root qdisc or
    its classes."""
    need = MINIMAL.get(kind, "")
    need = need + ", " if need else ""
    if family == "meter":
        body = f'police = {{ kind = "{kind}", {need}{BOGUS} = 1 }}\n'
    elif family == "shaper":
        body = f'shape = {{ kind = "{kind}", {need}{BOGUS} = 1 }}\n'
    elif family == "root":
        body = f'"{kind}" = {{ {need}{BOGUS} = 1 }}\n'
        ps = valid_list(parse_error(_policy(body)))
        if ps is not None and kind in DEFAULT_KEY:
            ps = sorted({*(p for p in ps if p), "default"})
        return ps
    else:  # the classes of a classful root
        body = (
            f'"{kind}" = {{ default = "1" }}\n'
            f'[[policy.bottleneck.egress.class]]\nid = "1"\n'
            f"{MINIMAL_CLASS.get(kind, '')}\n{BOGUS} = 1\n"
        )
    return valid_list(parse_error(_policy(body)))


def kinds() -> dict[str, Any]:
    """Kinds with their family, description and parameters, from the parser."""
    from qoslab import _core

    out: dict[str, Any] = {"meter": [], "shaper": [], "root": [], "class": []}
    for name, family, desc in _core.meter_kinds():
        out["meter"].append((name, family, desc, kind_params("meter", name)))
    shaper_names = set()
    for name, family, desc in _core.shaper_kinds():
        shaper_names.add(name)
        how = "shaper" if family == "shaper" else "root"
        if family == "policy tree":
            continue  # `qoslab shape tree`: a scenario writes the tree itself
        out["shaper"].append((name, family, desc, kind_params(how, name)))
    for name in root_kinds():
        out["root"].append((name, kind_params("root", name)))
        classes = kind_params("class", name)
        if classes is not None:
            out["class"].append((name, classes))
    return out


def profiles() -> dict[str, list[tuple[str, str]]]:
    from qoslab import _core

    names = ["linux", "linux-3.x", "linux-2.6", "windows10", "windows7", "windows-xp"]
    return {p: _core.tcp_profile_defaults(p) for p in names}


# --------------------------------------------------------------- markdown


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


TYPE_TEXT = {
    "string": "string",
    "integer": "integer",
    "count": "positive integer",
    "bool": "true / false",
    "rate": "rate",
    "time": "time",
    "size": "size (bytes)",
    "limit": "queue limit",
    "loss": "probability",
    "dscp": "DSCP",
    "node": "node name",
    "scalar": "string or number",
    "text": "multi-line string",
    "timer": "timer",
    "window": 'size or "auto"',
    "ssthresh": 'size or "infinite"',
    "delayed_ack": "time or bool",
    "match": "table or string",
    "array-time": "array of times",
    "array-string": "array of strings",
    "array-choice": "array of names",
    "table": "table",
    "tables": "array of tables",
    "policy": "policy table",
    "qdisc": "kind name or table",
    "open": "table of names",
}


def type_text(k: dict[str, Any]) -> str:
    t = k["type"]
    if t in ("choice", "array-choice"):
        names = " \\| ".join(f'`"{c}"`' for c in k["choices"])
        return names if t == "choice" else f"array of {names}"
    return TYPE_TEXT[t]


def render_table(table: dict[str, Any], by_id: dict[str, Any]) -> list[str]:
    out = [f"### {table['title']}", "", table["doc"], ""]
    if table.get("include"):
        parts = ", ".join(f"*{by_id[i]['title']}*" for i in table["include"])
        out += [f"Also the keys of {parts}.", ""]
    keys = table.get("key", [])
    if keys:
        out += [
            "| key | type, unit | default | example | meaning |",
            "|---|---|---|---|---|",
        ]
        for k in keys:
            unit = type_text(k) + (f"; {k['unit']}" if k.get("unit") else "")
            default = "**required**" if k.get("required") else k.get("default", "—")
            example = f"`{k['name']} = {k['example']}`" if "\n" not in k["example"] else "see below"
            out.append(
                f"| `{k['name']}` | {_cell(unit)} | {_cell(default)} | {_cell(example)} "
                f"| {_cell(k['doc'])} |"
            )
        out.append("")
        for k in keys:
            if "\n" in k["example"]:
                out += [f"`{k['name']}`, for example:", "", "```toml"]
                out += [f"{k['name']} = {k['example']}", "```", ""]
    return out


def render_doc(keys: dict[str, Any], kind_info: dict[str, Any], profs: dict[str, Any]) -> str:
    by_id = {t["id"]: t for t in keys["table"]}
    out = [
        "<!-- Generated by scripts/gen_scenario_reference.py from "
        "crates/qoslab-scenario/keys.toml and the parser; do not edit. -->",
        "",
        keys["doc"]["intro"].rstrip("\n"),
        "",
    ]
    for section in keys["doc"]["sections"]:
        out += [f"## {section['title']}", ""]
        if section.get("text"):
            out += [section["text"].rstrip("\n"), ""]
        for tid in section.get("tables", []):
            out += render_table(by_id[tid], by_id)
        if section.get("insert") == "profiles":
            out += render_profiles(profs)
        if section.get("insert") == "kinds":
            out += render_kinds(kind_info)
    return "\n".join(out).rstrip("\n") + "\n"


def render_profiles(profs: dict[str, list[tuple[str, str]]]) -> list[str]:
    names = list(profs)
    out = [
        "### TCP profile defaults",
        "",
        "The value each TCP key takes when a `[[traffic]]` table does not set it "
        "(read from the simulator's profiles).",
        "",
        "| key | " + " | ".join(f"`{n}`" for n in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    rows = [dict(profs[n]) for n in names]
    for key, _ in profs[names[0]]:
        out.append(f"| `{key}` | " + " | ".join(f"`{r[key]}`" for r in rows) + " |")
    return [*out, ""]


def _params(ps: list[str] | None) -> str:
    return ", ".join(f"`{p}`" for p in ps) if ps else "—"


def render_kinds(info: dict[str, Any]) -> list[str]:
    out = [
        "### Meters (`police = { kind = … }`)",
        "",
        "| kind | what | parameters |",
        "|---|---|---|",
    ]
    for name, _family, desc, ps in info["meter"]:
        out.append(f"| `{name}` | {_cell(desc)} | {_params(ps)} |")
    out += [
        "",
        "### Shapers, queues, AQMs and schedulers (`shape = { kind = … }`, a root qdisc)",
        "",
        "| kind | family | what | parameters |",
        "|---|---|---|---|",
    ]
    for name, family, desc, ps in info["shaper"]:
        out.append(f"| `{name}` | {family} | {_cell(desc)} | {_params(ps)} |")
    out += [
        "",
        "### Root qdiscs of a policy tree (`KIND = { … }` in a policy table)",
        "",
        "Besides their parameters, classful roots take `default` (the class of "
        'unclassified packets; htb/drr need it: `"direct"` or `"drop"` for Linux\'s '
        "behaviour).",
        "",
        "| key | parameters | class parameters |",
        "|---|---|---|",
    ]
    classes = dict(info["class"])
    for name, ps in info["root"]:
        out.append(f"| `{name}` | {_params(ps)} | {_params(classes.get(name))} |")
    return [*out, ""]


# --------------------------------------------------------------- JSON Schema

_SCALAR = {"type": ["string", "number", "boolean"]}


def key_schema(k: dict[str, Any]) -> dict[str, Any]:
    t = k["type"]
    s: dict[str, Any]
    if t in ("string", "node", "text", "time"):
        s = {"type": "string"}
    elif t == "integer":
        s = {"type": "integer"}
    elif t == "count":
        s = {"type": "integer", "minimum": 1}
    elif t == "bool":
        s = {"type": "boolean"}
    elif t in ("rate", "size", "limit", "window", "ssthresh"):
        s = {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]}
    elif t == "loss":
        s = {"anyOf": [{"type": "string"}, {"type": "number", "minimum": 0}]}
    elif t == "dscp":
        s = {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0, "maximum": 63}]}
    elif t == "scalar":
        s = {"anyOf": [_SCALAR, {"type": "array", "items": _SCALAR}]}
    elif t == "choice":
        s = {"enum": k["choices"]}
    elif t == "array-choice":
        s = {"type": "array", "items": {"enum": k["choices"]}}
    elif t in ("array-time", "array-string"):
        s = {"type": "array", "items": {"type": "string"}}
    elif t == "delayed_ack":
        s = {"type": ["string", "boolean"]}
    elif t == "timer":
        s = {"anyOf": [{"type": "string"}, {"$ref": "#/definitions/timer"}]}
    elif t == "match":
        s = {"anyOf": [{"type": "string"}, {"$ref": "#/definitions/match"}]}
    elif t == "table":
        s = {"$ref": f"#/definitions/{k['table']}"}
    elif t == "tables":
        s = {"type": "array", "items": {"$ref": f"#/definitions/{k['table']}"}}
    elif t == "policy":
        s = {"$ref": "#/definitions/policy"}
    elif t == "qdisc":
        s = {"anyOf": [{"type": "string"}, {"$ref": "#/definitions/qdisc"}]}
    elif t == "open":
        s = {"type": "object", "additionalProperties": {"type": "string"}}
    else:
        raise ValueError(f"unknown type {t!r} of key {k['name']}")
    s["description"] = k["doc"]
    if k.get("default"):
        s["markdownDescription"] = f"{k['doc']} Default: {k['default']}."
    return s


def object_schema(tables: list[dict[str, Any]], doc: str) -> dict[str, Any]:
    props: dict[str, Any] = {}
    required: list[str] = []
    for t in tables:
        for k in t.get("key", []):
            props[k["name"]] = key_schema(k)
            if k.get("required"):
                required.append(k["name"])
    s: dict[str, Any] = {
        "type": "object",
        "description": doc,
        "properties": props,
        "additionalProperties": False,
    }
    if required:
        s["required"] = required
    return s


def _spellings(params: list[str] | None) -> list[str]:
    """The parser compares parameter names with `_` and `-` alike."""
    out: set[str] = set()
    for p in params or []:
        out |= {p, p.replace("-", "_")}
    return sorted(out)


def _by_kind(entries: list[tuple[str, list[str] | None]], default: str) -> dict[str, Any]:
    """An object whose allowed keys depend on its `kind` (default `default`)."""
    names = [n for n, _ in entries]
    rules: list[dict[str, Any]] = []
    for name, ps in entries:
        if ps is None:
            continue
        allowed = {"propertyNames": {"enum": ["kind", *_spellings(ps)]}}
        rules.append(
            {
                "if": {"properties": {"kind": {"const": name}}, "required": ["kind"]},
                "then": allowed,
            }
        )
        if name == default:
            rules.append({"if": {"not": {"required": ["kind"]}}, "then": allowed})
    return {
        "type": "object",
        "properties": {"kind": {"enum": names}},
        "additionalProperties": _SCALAR,
        "allOf": rules,
    }


def render_schema(keys: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
    by_id = {t["id"]: t for t in keys["table"]}

    def with_includes(tid: str) -> list[dict[str, Any]]:
        t = by_id[tid]
        return [*(by_id[i] for i in t.get("include", [])), t]

    defs: dict[str, Any] = {}
    for tid in (
        "scenario",
        "topology",
        "link_params",
        "timer",
        "node",
        "link",
        "policy_dumbbell",
        "policy_bottleneck",
        "policy_access",
        "policy_link",
        "ingress",
        "fifo",
        "stab",
        "filter",
        "match",
        "record",
        "capture",
    ):
        defs[tid] = object_schema(with_includes(tid), by_id[tid]["doc"])
    # An ingress policy may also be embedded text.
    defs["ingress"] = {"anyOf": [defs["ingress"], {"$ref": "#/definitions/embedded"}]}
    defs["embedded"] = object_schema([by_id["embedded"]], by_id["embedded"]["doc"])
    defs["embedded"]["anyOf"] = [{"required": ["tc"]}, {"required": ["mqc"]}]

    meters = [(n, ps) for n, _, _, ps in info["meter"]]
    shapers = [(n, ps) for n, _, _, ps in info["shaper"]]
    defs["police"] = {**_by_kind(meters, "police"), "description": by_id["police"]["doc"]}
    defs["shape"] = {**_by_kind(shapers, "shape"), "description": by_id["shape"]["doc"]}

    # A tree: the policy table's own keys plus one root kind, under any of
    # the spellings the parser takes (`fq_codel` / `fq-codel`, and the
    # aliases its kind descriptions name: "(alias wfq)").
    aliases: dict[str, list[str]] = {}
    for name, _family, desc, _ps in info["shaper"]:
        aliases[name] = re.findall(r"\(alias ([\w-]+)\)", desc)
    tree = object_schema([by_id["policy"]], by_id["policy"]["doc"])
    for name, _ps in info["root"]:
        for spelling in sorted(
            {
                name,
                name.replace("-", "_"),
                name.replace("_", "-"),
                *aliases.get(name, []),
            }
        ):
            if spelling in tree["properties"]:
                continue
            tree["properties"][spelling] = {
                "type": "object",
                "description": f"A root qdisc of kind {name} and its parameters.",
                "additionalProperties": _SCALAR,
            }
    defs["tree"] = tree
    defs["policy"] = {
        "anyOf": [{"$ref": "#/definitions/embedded"}, {"$ref": "#/definitions/tree"}],
        "description": by_id["policy"]["doc"],
    }
    # A nested qdisc: `kind`, its parameters, its own classes/filters/qdisc.
    defs["qdisc"] = {
        "type": "object",
        "required": ["kind"],
        "properties": {
            "kind": {"type": "string"},
            "class": {"type": "array", "items": {"$ref": "#/definitions/class"}},
            "filter": {"type": "array", "items": {"$ref": "#/definitions/filter"}},
            "qdisc": {"anyOf": [{"type": "string"}, {"$ref": "#/definitions/qdisc"}]},
        },
        "additionalProperties": _SCALAR,
    }
    cls = object_schema([by_id["class"]], by_id["class"]["doc"])
    class_params: set[str] = set()
    for _, ps in info["class"]:
        class_params |= set(_spellings(ps))
    cls["additionalProperties"] = _SCALAR
    cls["propertyNames"] = {"enum": sorted(set(cls["properties"]) | class_params)}
    defs["class"] = cls

    # Traffic: the keys allowed depend on `kind`.
    kinds = {"tcp-bulk": "tcp_bulk", "tcp-fetch": "tcp_fetch", "udp": "udp"}
    kinds |= {"onoff": "onoff", "ping": "ping"}
    props: dict[str, Any] = {}
    rules = []
    for kind, tid in kinds.items():
        tables = with_includes(tid)
        names = []
        for t in tables:
            for k in t.get("key", []):
                props.setdefault(k["name"], key_schema(k))
                names.append(k["name"])
        rules.append(
            {
                "if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]},
                "then": {"propertyNames": {"enum": sorted(set(names))}},
            }
        )
    defs["traffic"] = {
        "type": "object",
        "description": by_id["traffic_common"]["doc"],
        "required": ["kind"],
        "properties": props,
        "allOf": rules,
    }
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": SCHEMA_URL,
        "title": "qoslab scenario",
        "description": "A qoslab scenario file (generated by scripts/gen_scenario_reference.py; "
        "reference: docs/scenarios.md).",
        "type": "object",
        "required": ["scenario"],
        "additionalProperties": False,
        "properties": {
            "scenario": {"$ref": "#/definitions/scenario"},
            "topology": {"$ref": "#/definitions/topology"},
            "node": {"type": "array", "items": {"$ref": "#/definitions/node"}},
            "link": {"type": "array", "items": {"$ref": "#/definitions/link"}},
            "policy": {
                "anyOf": [
                    {"$ref": "#/definitions/policy_dumbbell"},
                    {
                        "type": "object",
                        "additionalProperties": {"$ref": "#/definitions/policy_link"},
                    },
                ]
            },
            "traffic": {"type": "array", "items": {"$ref": "#/definitions/traffic"}},
            "record": {"$ref": "#/definitions/record"},
            "capture": {"$ref": "#/definitions/capture"},
        },
        "definitions": defs,
    }


def generate() -> tuple[str, str]:
    """(markdown, schema JSON text)."""
    keys = load_keys()
    info = kinds()
    doc = render_doc(keys, info, profiles())
    schema = json.dumps(render_schema(keys, info), indent=1, ensure_ascii=False) + "\n"
    return doc, schema


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if a file is stale")
    args = ap.parse_args()
    doc, schema = generate()
    stale = (
        [p for p, text in ((DOC, doc), (SCHEMA, schema)) if p.read_text() != text]
        if args.check
        else []
    )
    if args.check:
        for p in stale:
            print(f"{p.relative_to(ROOT)} is stale: run python scripts/gen_scenario_reference.py")
        return 1 if stale else 0
    for path, text in ((DOC, doc), (SCHEMA, schema)):
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)  # atomic: a reader never sees half a file
    print(f"wrote {DOC.relative_to(ROOT)}, {SCHEMA.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
