"""``tcp-fetch`` end to end from the CLI: per-chunk results in ``qoslab run --json``;
and validation/usc_truth.py's case parsing, scenarios and truth extraction."""

from __future__ import annotations

import importlib.util
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import qoslab
from qoslab.cli import main

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "fetch-policed.toml"


def _load():
    spec = importlib.util.spec_from_file_location("usc_truth", ROOT / "validation" / "usc_truth.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["usc_truth"] = mod
    spec.loader.exec_module(mod)
    return mod


ut = _load()


def test_run_json_has_every_chunk(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(SCENARIO), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    flow = out["flows"][0]
    chunks = flow["chunks"]
    assert [c["index"] for c in chunks] == [0, 1, 2, 3, 4]
    assert flow["bytes"] == 5 * 2_000_000
    for prev, c in itertools.pairwise(chunks):
        # The next request leaves the pause after the client had the last byte.
        assert c["request_s"] == pytest.approx(prev["client_done_s"] + 1.0, abs=1e-9)
    for c in chunks:
        assert c["end_s"] > c["client_done_s"] > c["start_s"] > c["request_s"]
        assert c["duration_s"] == pytest.approx(c["end_s"] - c["start_s"])
        # Sanity check: a 1.5 Mbit/s policer with a 100 kB bucket cannot carry a
        # 2 MB chunk much faster than CIR plus the bucket.
        assert c["goodput_bps"] < 1.5e6 * (1 + 100_000 / 2_000_000) * 1.05
        assert c["retransmits"] >= c["packets_lost"] - 5


def test_a_bulk_flow_has_no_chunks() -> None:
    s = qoslab.simulate(ROOT / "scenarios" / "example.toml").summary
    assert all("chunks" not in f for f in s["flows"])


def test_every_capture_is_a_case_with_a_unique_name() -> None:
    cases = ut.cases()
    assert len(cases) == 53
    assert len({c["name"] for c in cases}) == 53
    c = ut.parse_name(
        "C=5-L=2000000-CD1=1000-CD2=1000-ID=0-PCIR=1500000-PBC=100000-RTT=100-RTTV=0-"
        "RTTC=0%-LOSS=0%-XT=1-TCP=cubic-T=1-CP1=16392-CP2=16393.pcap.xz"
    )
    assert c["name"] == "police1.5M-bc100k-2conn-xt"
    assert (c["pcir"], c["pbc"], c["ports"], c["pauses_ms"]) == (
        1_500_000,
        100_000,
        [16392, 16393],
        [1000, 1000],
    )
    with pytest.raises(ValueError, match="KEY=VALUE"):
        ut.parse_name("C=5-oops.pcap.xz")


def test_scenarios_are_valid_and_say_the_configuration() -> None:
    by = {c["name"]: c for c in ut.cases()}
    s = ut.scenario(by["shape10M-qdef-loss2%-cd500"])
    assert s["policy"]["bottleneck"]["egress"]["shape"]["rate"] == "10000000bit"
    assert s["topology"]["bottleneck"]["loss"] == "2%"
    assert s["traffic"][0]["pause"] == "500ms"
    s = ut.scenario(by["police1.5M-bc8k-2conn-xt"])
    assert s["traffic"][0]["flows"] == 2
    assert s["traffic"][1]["kind"] == "tcp-bulk"
    # Every scenario parses (a 1 s run checks the whole file, keys and values).
    for c in ut.cases():
        sc = ut.scenario(c)
        sc["scenario"]["duration"] = "1s"
        qoslab.simulate(sc)


def test_truth_chunks_follow_the_requests() -> None:
    """Sanity check of the extraction on the capture shipped as an example: five
    requests, chunks in order, the last cut by the capture's end."""
    c = {x["name"]: x for x in ut.cases()}["police1.5M-bc100k"]
    (conn,) = ut.truth(c)
    chunks = conn["chunks"]
    assert len(chunks) == 5
    starts = [x["start_s"] for x in chunks]
    assert starts == sorted(starts)
    assert [x["end_s"] is None for x in chunks] == [False] * 4 + [True]
    for x in chunks[:4]:
        assert 1.3e6 < x["goodput_bps"] < 1.6e6
        assert x["losses"] is not None
    assert not conn["complete"]


def test_render_marks_hits_and_misses() -> None:
    c = {x["name"]: x for x in ut.cases()}["police1.5M-bc100k"]
    chunk = {"index": 0, "start_s": 0.0, "end_s": 10.0, "retransmits": 10, "losses": 12}
    truth = [
        {"port": 1, "chunks": [{**chunk, "goodput_bps": 1.6e6}], "timeouts": 2, "complete": True}
    ]
    sim = [
        {
            "chunks": [{**chunk, "goodput_bps": 1.6e6 * 1.2, "end_s": 10 / 1.2, "timeouts": 0}],
            "timeouts": 0,
        }
    ]
    (row,) = ut.chunk_rows(c, truth, sim)
    assert row["goodput_ok"] is False and row["rtx_ok"] is True
    case = ut.case_row(c, truth, sim)
    assert case["rto_ok"] is True  # 0 vs 2: within ±3
    assert not ut.count_ok(20, 10) and ut.count_ok(13, 10) and ut.count_ok(4, 1)


def test_retransmissions_are_counted_by_sequence_in_send_order() -> None:
    """A segment below the highest one sent is a retransmission whatever Wireshark's
    classes say (out-of-order included); the order is the time stamps', not the file's."""
    import numpy as np

    seg = {
        "flow": np.array([0, 0, 0, 0, 0, 1, 0]),
        "len": np.array([100, 100, 100, 100, 100, 100, 0]),
        # file order: the segment at seq 200 is written after 300, stamped before it
        "seq": np.array([0, 100, 300, 200, 100, 0, 400]),
        "time_ns": np.array([10, 20, 40, 30, 50, 60, 70]),
    }
    # 0, 100, 200 (sent at 30), 300, then 100 again: one retransmission, at 50 ns; the
    # other flow and the empty segment do not count.
    assert ut.retransmission_times(seg, 0).tolist() == [50]
    assert ut.retransmission_times(seg, 1).tolist() == []
    assert ut.retransmission_times(seg, 7).tolist() == []


def _pcap(stamps_us: list[int]) -> bytes:
    """A classic little-endian pcap with one 4-byte record per time stamp (µs); the
    record's payload is its index in the file."""
    import struct

    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for i, us in enumerate(stamps_us):
        out.append(struct.pack("<IIII", us // 1_000_000, us % 1_000_000, 4, 4))
        out.append(struct.pack("<I", i))
    return b"".join(out)


def test_time_ordered_puts_late_written_records_in_time_stamp_order() -> None:
    """The lab's files hold some records after later-stamped ones; the analysis then
    takes them for retransmissions. Both sides are sorted (stably) before it."""
    import struct

    late = _pcap([10, 30, 40, 20, 20, 1_000_050])
    ordered = ut.time_ordered(late)
    assert len(ordered) == len(late)
    payloads = [struct.unpack_from("<I", ordered, 24 + k * 20 + 16)[0] for k in range(6)]
    assert payloads == [0, 3, 4, 1, 2, 5]
    in_order = _pcap([1, 2, 2, 3])
    assert ut.time_ordered(in_order) is in_order
    with pytest.raises(SystemExit, match="not a little-endian classic pcap"):
        ut.time_ordered(b"\x0a\x0d\x0d\x0a" + bytes(40), "x.pcapng")
    with pytest.raises(SystemExit, match="runs past the end"):
        ut.time_ordered(late[:-2], "cut.pcap")


def test_timer_retransmissions_are_the_head_resent_without_an_ack() -> None:
    """Only a retransmission of the segment at the cumulative ACK, sent more than
    ACK_CLOCK_NS after the last ACK, counts; a run of them counts once."""
    import numpy as np

    ms = 1_000_000
    seg = {
        "flow": np.zeros(8, dtype=np.int64),
        "len": np.full(8, 100),
        # 0, 100, 200, 300 sent; 100 resent at 100 ms (on an ACK), 200 at 101 ms (not the
        # head), then 100 at 402 ms and again at 402.5 ms (one timer event), 400 new.
        "seq": np.array([0, 100, 200, 300, 100, 200, 100, 400]),
        "time_ns": np.array([0, 1, 2, 3, 100, 101, 402, 403]) * ms,
    }
    seg["time_ns"][6:] = [402 * ms, 402 * ms + 500_000]
    seg["seq"][7] = 100
    ack = {"flow": np.zeros(2, dtype=np.int64), "ack": np.array([100, 100])}
    ack["time_ns"] = np.array([100 * ms - 1000, 101 * ms - 1000])
    assert ut.timer_retransmissions(seg, ack, 0) == 1
    ack["time_ns"] = np.array([100 * ms - 1000, 401 * ms])  # 1 ms before: on that ACK
    assert ut.timer_retransmissions(seg, ack, 0) == 0
    ack["ack"] = np.array([100, 200])  # the head is 200 by then: 100 is not the head
    ack["time_ns"] = np.array([100 * ms - 1000, 101 * ms - 1000])
    assert ut.timer_retransmissions(seg, ack, 0) == 0
    assert ut.timer_retransmissions(seg, ack, 1) == 0


def test_each_capture_has_its_own_seed() -> None:
    """The three 1 % loss captures (differing in the pause) are three realizations."""
    loss = [c for c in ut.cases() if c["loss_pct"] == 1.0]
    seeds = {ut.case_seed(c) for c in loss}
    assert len(loss) == 3 and len(seeds) == 3
    c = loss[0]
    assert ut.scenario(c)["scenario"]["seed"] == ut.case_seed(c) == ut.case_seed(c, 0)
    assert ut.case_seed(c, 2) == ut.case_seed(c) + 2


def _rows(**cols: list[int]) -> dict[str, Any]:
    import numpy as np

    return {k: np.array(v, dtype=np.int64) for k, v in cols.items()}


def _reorder_capture(retransmit_third: bool) -> tuple[dict[str, Any], ...]:
    """Seven 100-byte segments sent 1 us apart (one burst); the client receives the
    third after the next three (its SACKs say so) and with the seventh, or, with
    `retransmit_third`, the third is lost and resent before the ACKs."""
    times = [0, 1000, 2000, 3000, 4000, 5000, 6000]
    seqs = [1, 101, 201, 301, 401, 501, 601]
    if retransmit_third:
        times.append(50_000_000)
        seqs.append(201)
    seg = _rows(time_ns=times, flow=[1] * len(times), seq=seqs, len=[100] * len(times))
    ms = 1_000_000
    ack = _rows(
        time_ns=[100 * ms, 101 * ms, 102 * ms, 103 * ms, 104 * ms, 105 * ms],
        flow=[1] * 6,
        ack=[101, 201, 201, 201, 201, 701],
    )
    sack = _rows(
        time_ns=[102 * ms, 103 * ms, 104 * ms],
        flow=[1] * 3,
        left=[301, 301, 301],
        right=[401, 501, 601],
    )
    return seg, ack, sack


def test_reordering_finds_the_overtaken_segment_and_linux_degree() -> None:
    seg, ack, sack = _reorder_capture(retransmit_third=False)
    r = ut.reordering(seg, ack, sack, 1, chunk_starts=[0])
    assert r["originals"] == 7
    [s] = r["segments"]
    assert s["seq"] == 201
    # Overtaken by seq 301, 401 and 501, not by 601 (acknowledged with it).
    assert s["displacement_segments"] == 3
    assert s["displacement_us"] == pytest.approx(3.0)  # sent 3 us before seq 501
    assert (s["burst_pos"], s["burst_size"], s["burst_start"]) == (2, 7, False)
    assert s["chunk_first_rtt"] and not s["burst_rtx"]
    # fackets_out - fack_count: from seq 201 to the highest SACKed byte 601 (not to the
    # cumulative ACK 701), 4 segments, above Linux's initial tp->reordering of 3, so FACK
    # would go off at 105 ms.
    assert r["events"] == [{"t_ns": 105_000_000, "degree": 4}]
    assert r["bursts_by_size"] == [[0, 0], [1, 1], [0, 0], [0, 0], [0, 0]]  # one of 5-9
    pooled = ut.reordering_pooled({"x": [r]})
    assert pooled["blocks"] == 1 and pooled["block_pct"] == [1.0, 1.0, 1.0]
    row = ut.reordering_summary("x", [r])
    assert row["per_1000"] == pytest.approx(1000 / 7)
    assert row["linux_events"] == 1


def test_reordering_does_not_count_a_lost_segment() -> None:
    seg, ack, sack = _reorder_capture(retransmit_third=True)
    r = ut.reordering(seg, ack, sack, 1)
    assert r["originals"] == 7
    assert r["segments"] == [] and r["events"] == []
    assert r["base"]["burst_lost"] == pytest.approx(1.0)


def test_reordering_in_order_delivery_is_clean() -> None:
    seg, _, _ = _reorder_capture(retransmit_third=False)
    ms = 1_000_000
    ack = _rows(
        time_ns=[100 * ms + k * ms for k in range(7)],
        flow=[1] * 7,
        ack=[101, 201, 301, 401, 501, 601, 701],
    )
    sack = _rows(time_ns=[], flow=[], left=[], right=[])
    r = ut.reordering(seg, ack, sack, 1)
    assert r["segments"] == []
    assert ut.reordering_pooled({"x": [r]})["overtaken"] == 0
