"""The summary tables of ``qoslab run`` / ``compare`` drawn by rich: plain
text off a terminal, numbers never cut, text columns give way to the width."""

from __future__ import annotations

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
