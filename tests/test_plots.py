from __future__ import annotations

import pytest
from matplotlib.figure import Figure
from qoslab import plots
from vizdata import goodput_only, police, shape


@pytest.mark.parametrize("name", list(plots.FIGURES))
def test_every_figure_draws_one_run_and_an_overlay(name):
    fn = plots.FIGURES[name][1]
    one = fn(police())
    two = fn({"police": police(), "shape": shape()})
    for fig in (one, two):
        assert isinstance(fig, Figure), name
        assert fig.axes and any(ax.lines or ax.collections for ax in fig.axes), name


def test_figures_skip_what_was_not_recorded():
    figs = plots.figures(goodput_only())
    assert list(figs) == ["io_graph", "goodput_cdf"]
    assert plots.rtt_time(goodput_only()) is None
    assert plots.time_sequence(goodput_only()) is None
    assert plots.queue(goodput_only()) is None
    assert plots.colors(goodput_only()) is None


def test_io_graph_sum_is_the_sum_of_the_flows():
    fig = plots.io_graph(police())
    ax = fig.axes[0]
    lines = {ln.get_label(): ln for ln in ax.lines}
    flows = [ln for lab, ln in lines.items() if lab.startswith("flow")]
    assert len(flows) == 2  # the ping is not a data flow
    total = sum(ln.get_ydata() for ln in flows)
    assert list(lines["sum"].get_ydata()) == pytest.approx(list(total))


def test_time_sequence_marks_retransmissions_of_the_chosen_flow():
    r = police()
    seg = r.segments
    flow = int(seg.loc[seg["retransmit"], "flow"].iloc[0])
    fig = plots.time_sequence(r, flow)
    labels = [ln.get_label() for ln in fig.axes[0].lines]
    assert labels == ["sent", "retransmitted"]
    n_retx = int(seg.loc[seg["flow"] == flow, "retransmit"].sum())
    assert len(fig.axes[0].lines[1].get_xdata()) == n_retx
    assert f"flow {flow}" in fig.axes[0].get_title()
    assert plots.time_sequence(r, flow=99) is None


def test_overlay_labels_name_each_run():
    fig = plots.io_graph([police(), shape()])
    labels = [ln.get_label() for ln in fig.axes[0].lines]
    assert "viz-police: sum" in labels and "viz-shape: sum" in labels
    same = plots.labelled([police(), police()])
    assert [lab for lab, _ in same] == ["viz-police", "viz-police (2)"]


def test_save_writes_png_and_svg(tmp_path):
    paths = plots.save(plots.io_graph(police()), tmp_path / "sub" / "io")
    assert [p.name for p in paths] == ["io.png", "io.svg"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in paths[1].read_bytes()[:2000]


def test_ping_axis_turns_logarithmic_only_when_runs_differ_by_orders_of_magnitude():
    import copy

    r = police()
    assert r.ping is not None and len(r.ping)
    assert plots.ping(r).axes[0].get_yscale() == "linear"
    slow = copy.copy(r)
    slow.ping = r.ping.assign(rtt_ms=r.ping["rtt_ms"] * 1000.0)
    assert plots.ping({"fast": r, "slow": slow}).axes[0].get_yscale() == "log"
