"""Reports of captures: `qoslab analyze --report` of a real capture and
`qoslab run --report --capture` both hold a time-sequence graph with the
ACK, receive-window and SACK lines the capture analysis gives."""

from __future__ import annotations

import re

from qoslab.cli import main
from vizdata import ALL_SERIES, POLICE, ROOT, scenario

CAPTURE = next((ROOT / "tests/data/usc-nsl-policing").glob("*PCIR=1500000-RTT=100*CP=10045*"))


def test_analyze_report_of_a_real_capture_has_the_time_sequence_graph(tmp_path):
    out = tmp_path / "r.html"
    assert main(["analyze", str(CAPTURE), "--report", str(out)]) == 0
    names = re.findall(r'data-figure="([^"]+)"', out.read_text())
    assert names[:2] == ["io_graph", "time_sequence"]
    assert "image/svg" not in out.read_text()


def test_run_report_with_a_capture_adds_its_time_sequence_graph(tmp_path):
    scen = tmp_path / "s.toml"
    scen.write_text(scenario(POLICE, ALL_SERIES, "1s"))
    out = tmp_path / "out"
    assert main(["run", str(scen), "--out", str(out), "--capture", "r1->r2", "--report"]) == 0
    html = (out / "report.html").read_text()
    names = re.findall(r'data-figure="([^"]+)"', html)
    assert "time_sequence" in names and "time_sequence_capture0" in names
    assert "from the capture of r1-&gt;r2 (r1-r2.pcap)" in html
