from __future__ import annotations

import json
import re

import pytest
from qoslab.cli import main
from qoslab.compare import compare, comparison_table, parse_vary, vary
from vizdata import POLICE, SHAPE, scenario


def _files(tmp_path):
    a, b = tmp_path / "police.toml", tmp_path / "shape.toml"
    a.write_text(scenario(POLICE, '["goodput", "rtt", "queue"]', "1s"))
    b.write_text(scenario(SHAPE, '["goodput", "rtt", "queue"]', "1s"))
    return a, b


def test_parse_vary_reads_numbers_and_booleans_as_toml():
    assert parse_vary("a.b=1,2.5,true,20mbit") == ("a.b", [1, 2.5, True, "20mbit"])
    for bad in ("a.b", "a.b=", "=1", "a..b=1"):
        with pytest.raises(ValueError):
            parse_vary(bad)


def test_vary_sets_tables_and_array_items_for_every_combination():
    text = scenario(POLICE)
    docs = vary(
        text,
        [
            parse_vary("policy.bottleneck.egress.police.cir=5mbit,10mbit"),
            parse_vary("traffic.0.flows=1,3"),
        ],
    )
    assert list(docs) == [
        "cir=5mbit flows=1",
        "cir=5mbit flows=3",
        "cir=10mbit flows=1",
        "cir=10mbit flows=3",
    ]
    d = docs["cir=5mbit flows=3"]
    assert d["policy"]["bottleneck"]["egress"]["police"]["cir"] == "5mbit"
    assert d["traffic"][0]["flows"] == 3 and d["traffic"][1]["kind"] == "ping"
    with pytest.raises(ValueError, match="index below 2"):
        vary(text, [parse_vary("traffic.5.flows=1")])
    with pytest.raises(ValueError, match="not a table"):
        vary(text, [parse_vary("scenario.seed.x=1")])


def test_table_puts_runs_side_by_side(tmp_path):
    a, b = _files(tmp_path)
    results, texts = compare({"police": str(a), "shape": str(b)})
    cols, rows = comparison_table(results)
    assert cols == ["metric", "police", "shape"]
    by = {r[0]: r[1:] for r in rows}
    s = {k: r.summary for k, r in results.items()}
    assert by["sum goodput Mbit/s"] == [round(s[k]["sum_goodput_bps"] / 1e6, 3) for k in s]
    assert "flow 1 goodput Mbit/s" in by and "flow 2 goodput Mbit/s" not in by  # no ping
    assert by["policy drops (packets)"][0] > 0
    assert texts["police"] == a.read_text()


def test_compare_command_writes_one_report(tmp_path, capsys):
    a, b = _files(tmp_path)
    rep = tmp_path / "cmp.html"
    figs = tmp_path / "figs"
    assert (
        main(["compare", str(a), str(b), "--report", str(rep), "--figures", str(figs), "--json"])
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert [r["label"] for r in doc["runs"]] == ["viz-police", "viz-shape"]
    assert doc["table"]["columns"] == ["metric", "viz-police", "viz-shape"]
    html = rep.read_text()
    names = re.findall(r'data-figure="([^"]+)"', html)
    assert names[:2] == ["overview", "io_graph"]  # the Flent-like page first
    assert html.count("<pre>") == 2
    # --figures: the report's PNGs (drawn once), no SVG
    assert sorted(p.name for p in figs.iterdir()) == sorted(f"{n}.png" for n in names)


def test_compare_vary_on_one_scenario(tmp_path, capsys):
    _, b = _files(tmp_path)
    rep = tmp_path / "v.html"
    key = "policy.bottleneck.egress.shape.queue_limit=20,200"
    assert main(["compare", str(b), "--vary", key, "--report", str(rep)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^metric\s+queue_limit=20\s+queue_limit=200$", out, re.M)
    assert f"wrote {rep}" in out


def test_compare_usage_errors(tmp_path, capsys):
    a, b = _files(tmp_path)
    assert main(["compare", str(a), "--report", str(tmp_path / "x.html")]) == 2
    assert "two scenarios or more" in capsys.readouterr().err
    assert main(["compare", str(a), str(b), "--vary", "x=1"]) == 2
    assert "exactly one scenario" in capsys.readouterr().err
    assert main(["compare", str(a), "--vary", "nokey"]) == 2
    assert "KEY=V1,V2" in capsys.readouterr().err
