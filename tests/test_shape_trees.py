"""Queues, schedulers and whole policy trees on traces (`qoslab shape`,
`qoslab.shape`, `qoslab.shape_policy`), through the one kind registry."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import qoslab
from qoslab.cli import main

ROOT = Path(__file__).resolve().parent.parent
HTB = ROOT / "examples" / "htb-two-classes.toml"
TWO_FLOWS = ROOT / "examples" / "two-flows.csv"
TRACE = ROOT / "examples" / "trace.csv"
S = 1_000_000_000


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def cbr(rates_bps: list[int], seconds: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Evenly spaced 1500-byte packets per flow, merged by time: (times, sizes, flow)."""
    times, flows = [], []
    for f, r in enumerate(rates_bps):
        t = np.arange(f * 1000, seconds * S, 1500 * 8 * S // r, dtype=np.int64)
        times.append(t)
        flows.append(np.full(len(t), f))
    t, f = np.concatenate(times), np.concatenate(flows)
    order = np.argsort(t, kind="stable")
    return t[order], np.full(len(t), 1500), f[order]


def test_htb_gives_each_of_two_flows_its_class_rate(capsys, tmp_path) -> None:
    """examples/two-flows.csv: 8 and 12 Mbit/s into classes of 4 and 6 Mbit/s
    (filter on dst_port): within the trace's 2 s each gets its rate +- 3 %."""
    out = tmp_path / "shaped.csv"
    rc, text, err = run(
        capsys, "shape", "tree", "--policy", HTB, "--input", TWO_FLOWS, "--output", out, "--json"
    )
    assert rc == 0, err
    summary = json.loads(text)
    assert summary["kind"] == "htb" and summary["policy"] == str(HTB)
    rows = {c["name"]: c for c in summary["classes"]}
    assert list(rows) == ["root", "1", "10", "20"]
    assert rows["10"]["packets_in"] == 1334 and rows["20"]["packets_in"] == 2000
    got = {1: 0, 2: 0}
    with out.open() as f:
        for row in csv.DictReader(f):
            if row["departure_ns"] and int(row["departure_ns"]) <= 2 * S:
                got[int(row["flow"])] += int(row["size_bytes"]) * 8
    for flow, want in ((1, 4_000_000), (2, 6_000_000)):
        assert abs(got[flow] / 2 / want - 1) < 0.03, got


def test_a_trace_without_the_filtered_column_goes_to_the_default_class() -> None:
    t, s, _ = cbr([8_000_000, 12_000_000], 1)
    r = qoslab.shape_policy(HTB, t, s)
    rows = {c["name"]: c for c in r.classes}
    assert rows["10"]["packets_in"] == 0
    assert rows["20"]["packets_in"] == len(t)


def test_sfq_serves_the_light_flow_a_fifo_starves_it() -> None:
    """20 Mbit/s heavy + 1 Mbit/s light into a 10 Mbit/s link, 100-packet queue."""
    t, s, f = cbr([20_000_000, 1_000_000], 3)
    light = f == 1
    r = qoslab.shape("sfq", t, s, columns={"flow": f}, rate="10mbit", limit=100)
    assert not r.dropped[light].any()
    assert r.dropped[~light].mean() > 0.4
    assert r.classes[0]["name"] == "root" and r.classes[0]["kind"] == "sfq"
    fifo = qoslab.shape("pfifo", t, s, columns={"flow": f}, rate="10mbit", limit=100)
    assert fifo.dropped[light].mean() > 0.3, "a FIFO shares the loss"


@pytest.mark.parametrize("kind", ["pfifo", "bfifo", "sfq", "fq_codel", "fair-queue", "prio"])
def test_every_work_conserving_kind_runs_behind_rate(capsys, kind: str) -> None:
    rc, text, err = run(capsys, "shape", kind, "--rate", "2mbit", "--input", TRACE, "--json")
    assert rc == 0, err
    summary = json.loads(text)
    assert summary["params"]["rate"] == "2mbit"
    assert summary["classes"][0]["packets_in"] == summary["packets"]
    rc, _, err = run(capsys, "shape", kind, "--input", TRACE)
    assert rc == 2 and "rate: missing" in err, err


def test_unknown_kind_lists_the_registry_kinds(capsys) -> None:
    rc, _, err = run(capsys, "shape", "sfqq", "--rate", "1mbit", "--input", TRACE)
    assert rc == 2 and "did you mean 'sfq'" in err, err
    for kind in qoslab.shaper_kinds():
        assert kind in err


def test_list_shows_each_family_from_the_registry(capsys) -> None:
    rc, text, _ = run(capsys, "shape", "--list", "--json")
    assert rc == 0
    families = {r["kind"]: r["family"] for r in json.loads(text)}
    assert families["htb"] == "classful scheduler" and families["sfq"] == "classless scheduler"
    assert families["codel"] == "aqm" and families["tbf"] == "shaper"
    assert families["pfifo"] == "queue" and families["tree"] == "policy tree"
    assert families == {k: v for k, v in qoslab.kind_families().items() if k in families}
    rc, text, _ = run(capsys, "meter", "--list")
    assert rc == 0 and "srtcm" in text and "meter" in text


def test_inline_policy_and_its_errors(capsys, tmp_path) -> None:
    rc, text, err = run(
        capsys, "shape", "tree", "--policy", 'fair_queue = { dynamic_queues = 16 }',
        "--rate", "2mbit", "--input", TRACE, "--json",
    )  # fmt: skip
    assert rc == 0, err
    assert json.loads(text)["kind"] == "fair-queue"
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'htb = { default = "20" }\n[[class]]\nid = "20"\nrate = "6mbit"\nceil = "1mbit"\n'
    )
    rc, _, err = run(capsys, "shape", "tree", "--policy", bad, "--input", TRACE)
    assert rc == 2 and f"{bad}:5:8: policy.class[0].ceil: ceil 1mbit is below rate" in err, err
    rc, _, err = run(capsys, "shape", "tree", "--policy", "sfq = {}", "--input", TRACE)
    assert rc == 2 and "rate: missing" in err, err
    rc, _, err = run(capsys, "shape", "tree", "--policy", HTB, "--limit", "5", "--input", TRACE)
    assert rc == 2 and "only --rate" in err, err
    rc, _, err = run(capsys, "shape", "sfq", "--policy", HTB, "--rate", "1mbit", "--input", TRACE)
    assert rc == 2 and "--policy goes with KIND tree" in err, err
    rc, _, err = run(capsys, "shape", "htb", "--rate", "1mbit", "--input", TRACE)
    assert rc == 2 and "qoslab shape tree --policy" in err, err


def test_bad_header_column_is_located(capsys, tmp_path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("time_ns,size_bytes,dscp\n0,100,10\n5,100,64\n")
    rc, _, err = run(capsys, "shape", "sfq", "--rate", "1mbit", "--input", p)
    assert rc == 2 and f"{p}:3: column dscp: expected a DSCP, 0 to 63, got '64'" in err, err
    # The meter passes the same column through untouched.
    rc, _, err = run(capsys, "meter", "police", "--cir", "1mbit", "--input", p)
    assert rc == 0, err


HFSC = (ROOT / "examples" / "hfsc-two-classes.toml").read_text()


def test_hfsc_from_the_cli_shares_the_ul_by_ls_ratio(capsys, tmp_path) -> None:
    """examples/two-flows.csv (8 and 12 Mbit/s) through the HFSC tree of
    examples/hfsc-two-classes.toml given inline (TOML text):
    the 10 Mbit/s ul of class 1 is shared 1:3 by the leaves' ls curves
    (tc-hfsc(7): link sharing goes by the ratio of the curves), 2.5 and 7.5
    Mbit/s within 3 %; the tree paces itself (every leaf is under the ul)."""
    out = tmp_path / "shaped.csv"
    rc, text, err = run(
        capsys, "shape", "tree", "--policy", HFSC, "--input", TWO_FLOWS, "--output", out, "--json"
    )
    assert rc == 0, err
    summary = json.loads(text)
    assert summary["kind"] == "hfsc"
    assert [c["name"] for c in summary["classes"]] == ["root", "1", "10", "20"]
    got = {1: 0, 2: 0}
    with out.open() as f:
        for row in csv.DictReader(f):
            t = row["departure_ns"]
            if t and 200_000_000 <= int(t) < 2 * S:
                got[int(row["flow"])] += int(row["size_bytes"]) * 8
    for flow, want in ((1, 2_500_000), (2, 7_500_000)):
        assert abs(got[flow] / 1.8 / want - 1) < 0.03, got
    bad = HFSC.replace('ls = "rate 1mbit"', 'ls = "rate 1mbit d 5ms"')
    rc, _, err = run(capsys, "shape", "tree", "--policy", bad, "--input", TWO_FLOWS)
    assert rc == 2 and "policy.class[1].ls: unexpected 'd'" in err, err
