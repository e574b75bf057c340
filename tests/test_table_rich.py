"""The summary tables of ``qoslab run`` / ``compare`` drawn by rich: plain
text off a terminal, numbers never cut, text columns give way to the width."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import qoslab
import qoslab.analyze as analyze_mod
from qoslab.cli import main
from qoslab.compare import render_table
from qoslab.table import rich_tables

COLS = [("policy", "left"), ("kind", "left"), ("packets", "right"), ("drop%", "right")]
ROWS = [["r1->r2 egress", "police", "37867", "10.9"], ["r2->r1 ingress", "tbf", "5", "-"]]


def test_plain_text_aligned_and_titled() -> None:
    text = rich_tables([("r1->r2 egress classes", COLS, ROWS)])
    lines = text.splitlines()
    assert lines[0] == "" and lines[1] == "r1->r2 egress classes"
    assert lines[2].split() == ["policy", "kind", "packets", "drop%"]
    assert set(lines[3]) == {"─"}  # the header rule
    assert [c.strip() for c in lines[4].split("   ") if c] == ROWS[0] and lines[5].split()[-2:] == [
        "5",
        "-",
    ]
    # numbers right-aligned: the last characters of their column line up
    assert lines[4].index("37867") + 5 == lines[5].index("5") + 1
    assert "\x1b[" not in text and all(ln == ln.rstrip() for ln in lines)


def test_narrow_width_cuts_text_not_numbers() -> None:
    lines = rich_tables([("", COLS, ROWS)], width=36).splitlines()
    assert all(len(ln) <= 36 for ln in lines)
    assert "37867" in lines[3] and "…" in lines[3]  # the policy name gave way


def test_colour_only_when_asked_and_never_with_no_color(monkeypatch) -> None:
    assert "\x1b[1m" in rich_tables([("", COLS, ROWS)], color=True)
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in rich_tables([("", COLS, ROWS)], color=True)


def test_compare_table_first_column_left_none_as_dash() -> None:
    lines = render_table(["metric", "a", "b"], [["goodput", 1.5, None]]).splitlines()
    assert lines[0].split() == ["metric", "a", "b"]
    assert lines[2].split() == ["goodput", "1.5", "-"]


# --- qoslab meter / shape / analyze: the same rich tables ---------------------

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "examples" / "trace.csv"
SRTCM = ["--cir", "1mbit", "--cbs", "3000B", "--ebs", "6000B", "--input", str(TRACE)]
POLICED = ROOT / "examples" / "policed-1.5mbit.pcap.xz"


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def _rows(text: str, header: list[str]) -> list[list[str]]:
    """The rows under the rich table whose header line splits as ``header``."""
    lines = text.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.split() == header)
    assert set(lines[i + 1]) == {"─"}
    rows = []
    for ln in lines[i + 2 :]:
        if not ln.strip():
            break
        rows.append(ln.split())
    return rows


def test_meter_table_matches_the_json_summary(capsys: pytest.CaptureFixture[str]) -> None:
    s = json.loads(_cli(capsys, "meter", "srtcm", *SRTCM, "--json"))
    rows = _rows(
        _cli(capsys, "meter", "srtcm", *SRTCM), ["colour", "packets", "bytes", "%", "bytes"]
    )
    want = [[c, str(s["colors"][c]["packets"]), str(s["colors"][c]["bytes"])] for c in s["colors"]]
    want.append(["dropped", str(s["dropped"]["packets"]), str(s["dropped"]["bytes"])])
    assert [r[:3] for r in rows] == want
    assert rows[0][3] == f"{100 * s['colors']['green']['bytes'] / s['bytes']:.1f}%"


def test_shape_tree_classes_table_matches_the_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["shape", "tree", "--policy", str(ROOT / "examples" / "htb-two-classes.toml")]
    argv += ["--input", str(ROOT / "examples" / "two-flows.csv")]
    s = json.loads(_cli(capsys, *argv, "--json"))
    text = _cli(capsys, *argv)
    head = ["class", "kind", "in", "out", "dropped", "drop%", "maxq", "pkts"]
    rows = _rows(text, head)
    assert [r[0] for r in rows] == [c["name"] for c in s["classes"]]
    assert [int(r[2]) for r in rows] == [c["packets_in"] for c in s["classes"]]
    assert [int(r[-1]) for r in rows] == [c["max_queue_packets"] for c in s["classes"]]
    sent = _rows(text, ["packets", "bytes", "%", "bytes"])
    assert sent[0][:3] == ["sent", str(s["sent"]["packets"]), str(s["sent"]["bytes"])]


def test_shape_list_is_a_table_of_every_kind(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _rows(_cli(capsys, "shape", "--list"), ["kind", "family", "description"])
    assert {r[0] for r in rows} == set(qoslab.shaper_kinds())


def test_analyze_tables_fit_the_width_and_keep_the_numbers() -> None:
    ca = analyze_mod.analyze(POLICED)
    wide = analyze_mod.render_table(ca)
    flows = _rows(wide, ["[", "ID]", "flow", "interval", "s", "transfer", "bitrate", "retr"])
    tcp = next(
        r for r in flows if r[:6] == ["[", "4]", "tcp", "10.0.0.4:1234", "->", "10.0.0.1:10047"]
    )
    assert tcp[-3:] == ["1.35", "Mbits/sec", "332"]
    rtt = _rows(wide, ["RTT", "(ms)", "min", "p50", "p95", "max", "samples"])
    assert next(r for r in rtt if r[1] == "4]")[-1] == str(
        next(f for f in ca.raw["flows"] if f["id"] == 4)["rtt"]["samples"]
    )
    narrow = analyze_mod.render_table(ca, width=72)
    table_lines = [ln for ln in narrow.splitlines() if "warning" not in ln and "capture " not in ln]
    assert all(len(ln) <= 72 for ln in table_lines)
    assert "…" in narrow and " 332" in narrow  # the flow names gave way, not the numbers


def test_wrap_columns_keep_every_word_at_a_narrow_width() -> None:
    prose = "single-rate three-colour marker (RFC 2697): cir, cbs, ebs, mode"
    cols = [("kind", "left"), ("description", "wrap")]
    lines = rich_tables([("", cols, [["srtcm", prose]])], width=40).splitlines()
    assert all(len(ln) <= 40 for ln in lines)
    assert "…" not in "".join(lines)
    assert " ".join(" ".join(ln.split()) for ln in lines[3:]).replace("srtcm ", "") == prose
