from __future__ import annotations

import numpy as np
import pytest
import qoslab
from matplotlib.figure import Figure
from qoslab import plots
from vizdata import ROOT, goodput_only, police, scenario, shape

COMPARED = ("overview",)  # figures of a comparison only
TREES = ("classes",)  # figures of policy trees only


@pytest.mark.parametrize("name", list(plots.FIGURES))
def test_every_figure_draws_one_run_and_a_comparison(name):
    fn = plots.FIGURES[name][1]
    one = fn(police())
    two = fn({"police": police(), "shape": shape()})
    if name in TREES:
        assert one is None and two is None  # no tree in these runs
        return
    for fig in (two,) if name in COMPARED else (one, two):
        assert isinstance(fig, Figure), name
        assert fig.axes and any(ax.lines or ax.collections or ax.patches for ax in fig.axes)
    if name in COMPARED:
        assert one is None


def test_figures_skip_what_was_not_recorded():
    figs = plots.figures(goodput_only())
    assert list(figs) == ["io_graph", "goodput_cdf"]
    assert plots.rtt_time(goodput_only()) is None
    assert plots.time_sequence(goodput_only()) is None
    assert plots.queue(goodput_only()) is None
    assert plots.colors(goodput_only()) is None


def test_io_graph_sum_is_the_sum_of_the_flows_and_the_bin_is_printed():
    fig = plots.io_graph(police())
    ax = fig.axes[0]
    lines = {ln.get_label(): ln for ln in ax.lines}
    flows = [ln for lab, ln in lines.items() if lab.startswith("flow")]
    assert len(flows) == 2  # the ping is not a data flow
    total = sum(ln.get_ydata() for ln in flows)
    assert list(lines["goodput, sum"].get_ydata()) == pytest.approx(list(total))
    assert "bin 100 ms" in fig._suptitle.get_text()


def test_io_graph_wire_rate_is_what_the_policer_passed():
    r = police()
    wire = next(ln for ln in plots.io_graph(r).axes[0].lines if "wire rate" in ln.get_label())
    c = r.colors
    passed = (c.green_bytes + c.yellow_bytes + c.red_bytes - c.dropped_bytes) * 8 / 0.1 / 1e6
    assert list(wire.get_ydata()) == pytest.approx(list(passed))
    # The policer passes at most its 10 Mbit/s plus the bucket: never the offered load.
    assert max(wire.get_ydata()) < max(
        ((c.green_bytes + c.yellow_bytes + c.red_bytes) * 8 / 0.1 / 1e6).tolist()
    )


def test_small_multiples_one_titled_panel_per_run_each_on_its_own_scale():
    runs = {"police": police(), "shape": shape(), "goodput only": goodput_only()}
    fig = plots.io_graph(runs)
    assert len(fig.axes) == len(runs)
    assert [ax.get_title() for ax in fig.axes] == list(runs)
    # Scale one run up 1000x: the others' axes do not change.
    raw = police().raw
    g = raw["series"]["goodput"]
    big = qoslab.SimulationResult(
        {**raw, "series": {**raw["series"], "goodput": {**g, "bytes": g["bytes"] * 1000}}}
    )
    assert (
        plots.io_graph(big).axes[0].get_ylim()[1]
        > 100 * plots.io_graph(police()).axes[0].get_ylim()[1]
    )  # sanity check: the scaling reaches the figure
    alone = plots.io_graph({"shape": shape(), "police": police()}).axes[0].get_ylim()
    with_big = plots.io_graph({"shape": shape(), "big": big}).axes[0].get_ylim()
    assert alone == with_big
    for name in ("rtt", "cwnd", "ping"):
        f = plots.FIGURES[name][1]({"police": police(), "shape": shape()})
        assert [ax.get_title() for ax in f.axes] == ["police", "shape"], name


def test_time_sequence_marks_retransmissions_without_hiding_the_sends():
    r = police()
    seg = r.segments
    flow = int(seg.loc[seg["retransmit"], "flow"].iloc[0])
    fig = plots.time_sequence(r, flow)
    full, zoom = fig.axes  # the whole flow, and the zoom on its first retransmission
    by = {ln.get_label(): ln for ln in full.lines}
    assert {"sent", "retransmitted"} <= set(by)
    n_retx = int(seg.loc[seg["flow"] == flow, "retransmit"].sum())
    assert 0 < len(by["retransmitted"].get_xdata()) <= n_retx
    assert by["sent"].get_zorder() > by["retransmitted"].get_zorder()  # sends on top
    assert f"flow {flow}" in fig._suptitle.get_text()
    assert "around the first retransmission" in zoom.get_title()
    assert zoom.collections  # I-beams in the zoom
    assert plots.time_sequence(r, flow=99) is None


def test_time_sequence_of_a_capture_has_ack_window_and_sack_lines():
    from qoslab.analyze import analyze

    cap = next((ROOT / "tests/data/usc-nsl-policing").glob("*PCIR=1500000-RTT=100*CP=10045*"))
    fig = plots.time_sequence(analyze(cap).result)
    labels = {ln.get_label() for ln in fig.axes[1].lines}
    assert {"sent", "retransmitted", "ACK", "receive window", "SACK block"} <= labels


def test_rtt_panel_with_rto_outliers_is_logarithmic_and_marks_them():
    r = police()
    v = r.rtt["rtt_ms"].to_numpy()
    assert v.max() > 4 * np.percentile(v, 95)  # RTO-inflated samples in this run
    ax = plots.rtt_time(r).axes[0]
    assert ax.get_yscale() == "log"
    marked = next(ln for ln in ax.lines if "above 4x p95" in ln.get_label())
    assert len(marked.get_xdata()) == int((v > 4 * np.percentile(v, 95)).sum())
    # a run without such outliers keeps a linear axis from 0
    s = shape().rtt["rtt_ms"].to_numpy()
    assert s.max() <= 4 * np.percentile(s, 95)
    ax = plots.rtt_time(shape()).axes[0]
    assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0
    assert ax.get_ylim()[1] >= s.max()  # the whole body in view


def test_cdf_x_axis_turns_logarithmic_when_the_range_spans_ten_times():
    v = police().rtt["rtt_ms"].to_numpy()
    assert v.max() > 10 * v.min()
    assert plots.rtt_cdf(police()).axes[0].get_xscale() == "log"
    g = goodput_only().goodput
    g = g[g["goodput_bps"] > 0]["goodput_bps"]
    expected = "log" if g.max() > 10 * g.min() else "linear"
    assert plots.goodput_cdf(goodput_only()).axes[0].get_xscale() == expected


def test_ping_panels_each_on_its_own_scale():
    from qoslab.results import SimulationResult

    r = police()
    ping = r.raw["series"]["ping"]
    slow = SimulationResult(
        {**r.raw, "series": {**r.raw["series"], "ping": {**ping, "rtt_ns": ping["rtt_ns"] * 1000}}}
    )
    fig = plots.ping({"fast": r, "slow": slow})
    fast_top, slow_top = (ax.get_ylim()[1] for ax in fig.axes)
    assert slow_top > 100 * fast_top


def test_queue_shows_tokens_for_a_policer_and_the_queue_for_a_shaper():
    pol = plots.queue(police())
    assert [ax.get_ylabel() for ax in pol.axes] == ["tokens (KB)"]
    shp = plots.queue(shape())
    assert "queue (packets)" in [ax.get_ylabel() for ax in shp.axes]


def test_colour_panels_share_one_y_scale():
    fig = plots.colors({"police": police(), "police again": police()})
    limits = {ax.get_ylim() for ax in fig.axes}
    assert len(limits) == 1
    assert len(fig.axes) % 2 == 0 and len(fig.axes) >= 4  # colours x runs


def test_decimation_bounds_the_points_drawn_and_keeps_the_peaks():
    x = np.linspace(0, 100, 1_000_000)
    y = np.sin(x) + (x == x[123_456]) * 50.0
    dx, dy = plots.decimate_line(x, y, 800)
    assert len(dx) <= 2 * 800 + 2
    assert dy.max() == y.max() and dy.min() == y.min()  # the peak survives
    idx = plots.decimate_points(x, y, (0, 100), (-1, 51), (800, 300))
    assert len(idx) <= 800 * 302
    short = plots.decimate_line(x[:100], y[:100], 800)
    assert len(short[0]) == 100  # nothing to cut


def test_a_long_run_draws_no_more_than_the_screen_holds():
    long = qoslab.simulate(
        scenario('police = { cir = "10mbit" }', '["goodput", "rtt", "segments"]', "20s").replace(
            'interval = "100ms"\nseries', 'interval = "1ms"\nseries'
        )
    )
    assert len(long.goodput) > 4 * plots.PIXELS
    for ln in plots.io_graph(long).axes[0].lines:
        assert len(ln.get_xdata()) <= 2 * plots.PIXELS + 2
    ts = plots.time_sequence(long)
    sent = next(ln for ln in ts.axes[0].lines if ln.get_label() == "sent")
    assert len(sent.get_xdata()) < len(long.segments) / 2


def test_policy_tree_classes_figure_uses_the_users_class_ids():
    r = qoslab.simulate(ROOT / "scenarios/trees/linux-hfsc.toml")
    fig = plots.policy_classes(r)
    classes = [c["name"] for p in r.summary["policies"] for c in p["classes"]]
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == [str(c) for c in classes]
    out = [p.get_width() for p in fig.axes[0].patches]
    dur = r.summary["duration_s"]
    got = [c["bytes_out"] * 8 / dur / 1e6 for p in r.summary["policies"] for c in p["classes"]]
    assert out == pytest.approx(got)


def test_overview_totals_boxes_and_latency_cdf():
    runs = {"police": police(), "shape": shape()}
    fig = plots.overview(runs)
    totals, boxes, cdf = fig.axes
    assert [p.get_width() for p in totals.patches] == pytest.approx(
        [r.summary["sum_goodput_bps"] / 1e6 for r in runs.values()]
    )
    assert len(boxes.patches) == 4  # two data flows per run
    assert "ping" in cdf.get_title() and len(cdf.lines) == 2


def test_save_writes_png_by_default_and_svg_on_request(tmp_path):
    paths = plots.save(plots.io_graph(police()), tmp_path / "sub" / "io")
    assert [p.name for p in paths] == ["io.png"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    both = plots.save(plots.io_graph(police()), tmp_path / "io2", formats=("png", "svg"))
    assert b"<svg" in both[1].read_bytes()[:2000]


def test_ticks_are_few_labelled_and_log_axes_have_no_minor_ticks():
    """Start-up speed (issue 14): every tick is artists made and drawn, so
    each axis has at most 6 labelled steps (matplotlib's automatic locator
    fits up to 10 on a full-width axis), a log axis labels 1-2-5 or 1-3
    steps as plain numbers and draws no minor ticks."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    r = qoslab.simulate(ROOT / "scenarios/isr4000-police.toml")
    figs = plots.figures(r)
    logs = 0
    for name, fig in figs.items():
        FigureCanvasAgg(fig).draw()  # tick labels get their text when drawn
        for ax in fig.axes:
            for axis in (ax.xaxis, ax.yaxis):
                lo, hi = sorted(axis.get_view_interval())
                inside = [t for t in axis.get_majorticklocs() if lo <= t <= hi]
                assert len(inside) <= 7, (name, inside)
                if axis.get_scale() == "log":
                    logs += 1
                    assert len(axis.get_minorticklocs()) == 0, name
                    labels = [t.get_text() for t in axis.get_ticklabels() if t.get_text()]
                    assert labels and all("$" not in t for t in labels), (name, labels)
                    assert len(inside) >= 3, (name, inside)  # 1-2-5 / 1-3 steps, not decades
    assert logs >= 2  # the RTT panel and the CDFs of this run are on log axes
