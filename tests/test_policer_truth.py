"""validation/policer_truth.py without root: the grid, the target evaluation, and
``--render`` from a small committed fixture of real measurements."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).parent / "data" / "policer_truth_fixture.json"


def _load():
    spec = importlib.util.spec_from_file_location(
        "policer_truth", ROOT / "validation" / "policer_truth.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["policer_truth"] = mod
    spec.loader.exec_module(mod)
    return mod


pt = _load()


def test_grid_covers_every_value_of_every_axis():
    g = pt.grid()
    assert 40 <= len(g) <= 60
    names = [pt.case_name(c) for c in g]
    assert len(set(names)) == len(names)
    want = {
        "cir_mbps": {1, 10, 100},
        "bc": set(pt.BC_KINDS),
        "rtt_ms": {5, 50, 100},
        "window": set(pt.WINDOWS),
        "flows": {1, 4},
        "cc": {"cubic", "reno", "bbr"},
    }
    for axis, values in want.items():
        assert {c[axis] for c in g} == values, axis


def test_bc_values():
    assert pt.bc_bytes(10, "cir/32") == 312500  # Cisco default: CIR/32 bytes
    assert pt.bc_bytes(10, "10ms") == 12500
    assert pt.bc_bytes(1, "1s") == 125000
    assert pt.bc_bytes(100, "mtu") == 1514


def test_scenario_rtt_and_window():
    c = {"cir_mbps": 10, "bc": "10ms", "rtt_ms": 5, "window": "32k", "flows": 4, "cc": "reno"}
    s = pt.scenario(c)
    acc = float(s["topology"]["access"]["delay"].removesuffix("ms"))
    bn = float(s["topology"]["bottleneck"]["delay"].removesuffix("us")) / 1000
    assert 2 * (2 * acc + bn) == pytest.approx(5)
    t = s["traffic"][0]
    # iperf3 -w 32k is a socket buffer: the scenario's rcvbuf, not an advertised window
    assert t["rcvbuf"] == "32768B" and "window" not in t
    assert t["cc"] == "reno" and t["header_bytes"] == 66
    assert "rcvbuf" not in pt.scenario(dict(c, window="auto"))["traffic"][0]
    # a perturbed run: only the bottleneck's delay and the seed differ
    p = pt.scenario(c, offset_us=25, seed=2)
    bn2 = float(p["topology"]["bottleneck"]["delay"].removesuffix("us"))
    assert bn2 == pytest.approx(bn * 1000 + 25) and p["scenario"]["seed"] == 2
    assert p["traffic"] == s["traffic"]


def test_medians_of_perturbed_runs_and_of_repeated_truth():
    runs = [
        {"goodput_mbps": g, "retransmits": r, "rtos": o, "loss_episodes": 1, "policer_drops": r}
        for g, r, o in ((9.0, 10, 3), (9.5, 30, 13), (9.2, 20, 8))
    ]
    m = pt.median_figures(runs)
    assert (m["goodput_mbps"], m["retransmits"], m["rtos"]) == (9.2, 20, 8)
    assert pt._span(m, "rtos") == " (3-13)"
    first = dict(runs[0], shares=[1.0])
    c = {"truth": first, "repeats": [runs[1], runs[2]]}
    t = pt.truth_of(c)
    assert (t["goodput_mbps"], t["rtos"]) == (9.2, 8) and t["shares"] == [1.0]
    assert pt._gspan(t) == " (9.00-9.50, 3 runs)"
    assert pt.truth_of({"truth": first}) is first


def test_count_and_goodput_tolerances():
    assert pt.count_ok(13, 10) and pt.count_ok(7, 10) and not pt.count_ok(14, 10)
    assert pt.count_ok(130, 100) and not pt.count_ok(131, 100) and not pt.count_ok(69, 100)
    assert pt.count_ok(0, 3) and not pt.count_ok(0, 4)
    assert pt.goodput_ok(9.0, 10.0) and pt.goodput_ok(11.0, 10.0)
    assert not pt.goodput_ok(8.9, 10.0) and not pt.goodput_ok(11.1, 10.0)
    assert pt.goodput_ok(0.0, 0.0) and not pt.goodput_ok(0.1, 0.0)


def _row(ok: bool) -> dict:
    return {"ok": {"goodput": ok, "retransmits": True, "rtos": not ok}}


def test_summary_counts_against_the_90_percent_share():
    s = pt.summarise([_row(True)] * 9 + [_row(False)])
    assert s["cases"] == 10
    assert s["goodput"] == {"met": 9, "target_met": True}
    assert s["rtos"] == {"met": 1, "target_met": False}
    assert s["retransmits"]["met"] == 10 and s["all_three"] == 0
    s = pt.summarise([_row(True)] * 8 + [_row(False)] * 2)
    assert s["goodput"] == {"met": 8, "target_met": False}


def _fake_sims(data: dict, rto: int) -> dict:
    out = {}
    for name, c in data["cases"].items():
        t = c["truth"]
        out[name] = dict(t, goodput_mbps=t["goodput_mbps"] * 1.05, rtos=rto)
    return out


def test_render_states_counts_and_verdicts():
    data = json.loads(FIXTURE.read_text())
    n = len(data["cases"])
    text = pt.render(data, _fake_sims(data, rto=0), "test")
    assert text.startswith(pt.BEGIN) and text.rstrip().endswith(pt.END)
    assert f"goodput within ±10 %: {n}/{n} (100 %) — **met**" in text
    for name in data["cases"]:
        assert f"`{name}`" in text
    # RTOs: truth has some case with more than 3, the fake simulator none
    many = [c for c in data["cases"].values() if c["truth"]["rtos"] > 3]
    assert many, "the fixture should hold a case with RTO stalls"
    met = n - len(many)
    assert f"RTO count within ±30 % or ±3 events: {met}/{n}" in text
    assert "**not met**" in text


def test_render_command_from_fixture(tmp_path):
    """--render end to end: the simulator runs each fixture case; the section is
    replaced in place and the rest of the document is left alone."""
    doc = tmp_path / "validation.md"
    doc.write_text(f"# head\n\n{pt.BEGIN}\nold\n{pt.END}\n\n## after\n", encoding="utf-8")
    assert pt.main(["--render", "--results", str(FIXTURE), "--doc", str(doc)]) == 0
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("# head\n") and text.rstrip().endswith("## after")
    assert "\nold\n" not in text and text.count(pt.BEGIN) == 1
    data = json.loads(FIXTURE.read_text())
    for name in data["cases"]:
        assert f"`{name}`" in text


def test_bad_results_file_is_one_line(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"cases": {"a": {"params": {}}}}')
    with pytest.raises(SystemExit, match="has no 'truth'"):
        pt.main(["--render", "--results", str(bad), "--doc", str(tmp_path / "d.md")])


# Lines as tracefs printed them on the emulated run of c1-bc1s-rtt50-wauto-f1-cubic
# (kernel 6.18): iperf3's control connection (port 51062), the data connection
# (51066), and a recovery that ended and began again on one ACK.
_PFX = "      qoslab-emu-23414   [000] ..s2. "
_PROBE = (
    "tcp_probe: family=AF_INET src=10.77.0.1:{sport} dest=10.77.0.2:5201 mark=0x0"
    " data_len=0 snd_nxt={nxt} snd_una={una} snd_cwnd={cwnd} ssthresh={ssth}"
    " snd_wnd=297984 srtt=50471 rcv_wnd=64512 sock_cookie=234c"
    " skbaddr=000000005fdbcf83 skaddr=0000000032a278e4"
)
_STATE = (
    "tcp_cong_state_set: family=AF_INET sport=51066 dport=5201 saddr=10.77.0.1"
    " daddr=10.77.0.2 saddrv6=::ffff:10.77.0.1 daddrv6=::ffff:10.77.0.2 cong_state={s}"
)
TRACE = "\n".join(
    [
        "# tracer: nop",
        _PFX
        + "48346.428611: "
        + _PROBE.format(sport=51062, nxt="0xbe05d645", una="0xbe05d620", cwnd=10, ssth=2147483647),
        _PFX
        + "48347.139691: "
        + _PROBE.format(sport=51066, nxt="0x2152a147", una="0x2150c07f", cwnd=8, ssth=73),
        _PFX
        + "48347.188784: "
        + _PROBE.format(sport=51066, nxt="0x00000010", una="0xfffffff0", cwnd=9, ssth=73),
        _PFX + "48349.039816: " + _STATE.format(s=0),
        _PFX + "48349.039816: " + _STATE.format(s=3),
        _PFX + "48349.131462: " + _STATE.format(s=0),
        _PFX + "48349.139051: " + _STATE.format(s=3),
        _PFX + "48349.533735: " + _STATE.format(s=0),
        _PFX + "48349.533736: " + _STATE.format(s=3),
    ]
)


def test_parse_probe_takes_the_data_connection_and_its_states():
    k = pt.parse_probe(TRACE)
    assert k["port"] == 51066
    assert [a["cwnd"] for a in k["acks"]] == [8, 9]
    assert k["acks"][0]["t_s"] == 0.0
    assert k["acks"][0]["flight_bytes"] == 0x2152A147 - 0x2150C07F
    assert k["acks"][1]["flight_bytes"] == 0x20  # across the sequence wrap
    assert [s["state"] for s in k["states"]] == [0, 3, 0, 3, 0, 3]
    assert pt.parse_probe("# tracer: nop\n")["port"] is None


def test_recovery_reentries_counts_only_a_new_recovery_on_the_same_ack():
    states = [{"t_s": 0.0, "state": 3}] + pt.parse_probe(TRACE)["states"]
    # ends at 1.90 (re-entered at once), 1.99 (7.6 ms later), 2.39 (1 us later)
    assert pt.recovery_reentries(states) == (3, 2)


def test_short_segments_skip_the_cookie_control_connection_and_retransmissions():
    rows = [(1, 1, 37)] + [(1, 38 + 1448 * i, 1448) for i in range(120)]
    rows += [(1, 38 + 1448 * 120, 232), (1, 38 + 1448 * 120, 232)]  # sent, then resent
    rows += [(2, 1, 145), (2, 146, 4)]  # a control connection
    assert pt.short_segments(rows) == [(1, 38 + 1448 * 120)]


def test_host_path_stats_times_the_frames_one_ack_releases():
    # Connection 1: ACKs at 0 and 2 ms release 9 full frames 4 us apart each, the ACK
    # at 1 ms 9 frames 2 us apart; connection 2's frame in between is not counted in
    # connection 1's bursts. The forwarder stamps every frame 5 us after the tap.
    mss = pt.MSS_BYTES
    tap = [(1e-5 + i * 4e-6, 1, i * mss, mss) for i in range(9)]
    tap += [(5e-4, 2, 0, mss)]
    tap += [(1e-3 + 1e-5 + i * 2e-6, 1, (9 + i) * mss, mss) for i in range(9)]
    tap += [(2e-3 + 1e-5 + i * 4e-6, 1, (18 + i) * mss, mss) for i in range(9)]
    tap.sort()
    acks = [(0.0, 1, 1), (1e-3, 1, 2), (2e-3, 1, 3)]
    fwd = [(t + 5e-6, c, q, n) for t, c, q, n in tap]
    s = pt.host_path_stats(tap, acks, fwd)
    assert s["bursts"] == 3
    assert s["us_per_frame"]["p10"] == pytest.approx(2.0)
    assert s["us_per_frame"]["median"] == pytest.approx(4.0)
    assert s["forwarder_lag_us"]["median"] == pytest.approx(5.0)
    # A release of fewer than 8 frames is no burst.
    short = [x for x in tap if x[0] < 5e-4][:7]
    assert pt.host_path_stats(short, acks[:1], short)["bursts"] == 0


_INFO = "\t bbr wscale:7,7 rto:204 rtt:50.1/0.1 mss:1448 "
SS_BBR = "\n".join(
    [
        "@1000.000",
        "ESTAB 0 0 10.77.0.1:40000 10.77.0.2:5201",
        _INFO + "cwnd:10 bytes_sent:37 unacked:1"
        " bbr:(bw:0bps,mrtt:50.12,pacing_gain:1,cwnd_gain:1) pacing_rate 6.6Mbps",
        "ESTAB 0 0 10.77.0.1:40002 10.77.0.2:5201",
        _INFO + "cwnd:10 bytes_sent:145 bbr:(bw:0bps,mrtt:50.1) pacing_rate 1Mbps",
        "@1000.250",
        "ESTAB 0 0 10.77.0.1:40000 10.77.0.2:5201",
        _INFO + "cwnd:86 ssthresh:218 bytes_sent:1234567 retrans:3/377 lost:180"
        " unacked:304 bbr:(bw:43.4Mbps,mrtt:50,pacing_gain:1.25,cwnd_gain:2)"
        " pacing_rate 53.8Mbps",
        "@1000.270",
    ]
)


def test_parse_ss_bbr_takes_the_data_connection_per_sample():
    rows = pt.parse_ss_bbr(SS_BBR)
    assert [r["t"] for r in rows] == [0.0, 0.25]
    assert rows[0]["mrtt_ms"] == 50.12 and rows[0]["bw_mbps"] == 0.0
    r = rows[1]
    assert (r["bw_mbps"], r["pacing_gain"], r["cwnd_gain"]) == (43.4, 1.25, 2.0)
    assert (r["cwnd"], r["ssthresh"], r["retrans"], r["lost"], r["unacked"]) == (
        86,
        218,
        377,
        180,
        304,
    )
    assert r["pacing"] == 53.8
    assert pt.parse_ss_bbr("") == []
