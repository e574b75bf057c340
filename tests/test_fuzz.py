"""Bounded fuzzing of the CLI/API error paths and the trace reader
(issue 15): any input gives a result or one clear error line, never a
traceback or a hang. CI runs ``QOSLAB_FUZZ_EXAMPLES`` (default 60) examples
per property; ``benchmarks/fuzz_campaign.sh`` runs thousands."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import numpy as np
import pytest
import qoslab
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from qoslab.cli import main
from qoslab.traceio import TraceFileError, open_trace, read_trace

EXAMPLES = int(os.environ.get("QOSLAB_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)
#: The trace-reader property alone (the campaign gives it >= 10,000).
TRACE_EXAMPLES = int(os.environ.get("QOSLAB_FUZZ_TRACE_EXAMPLES", EXAMPLES))
TRACE_FUZZ = settings(FUZZ, max_examples=TRACE_EXAMPLES)
TRACE = Path(__file__).resolve().parents[1] / "examples" / "trace.csv"
KINDS = sorted(qoslab.kind_families())
KEYS = ["rate", "cir", "pir", "eir", "cbs", "ebs", "pbs", "burst", "limit", "mir", "buffer",
        "target", "interval", "tupdate", "min", "max", "avpkt", "probability", "bands", "cf",
        "mode", "violate", "exceed", "preset", "quantum", "perturb", "seed", "ctr",
        "ptr"]  # fmt: skip
VALUES = ["1mbit", "0", "-1", "1bit", "100gbit", "3000B", "0B", "4000000000p", "1e308", "nan",
          "5ms", "0ms", "999999999s", "x", "", "drop", "rfc2963", "18446744073709551616",
          "1" * 400, "1.5", "yes"]  # fmt: skip


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(argv)
    return rc, err.getvalue()


@FUZZ
@given(
    cmd=st.sampled_from(["meter", "shape"]),
    kind=st.sampled_from([*KINDS, "bogus"]),
    params=st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from(VALUES)), max_size=6),
)
def test_cli_parameters_give_a_result_or_one_line(
    cmd: str, kind: str, params: list[tuple[str, str]]
) -> None:
    argv = [cmd, kind, "--input", str(TRACE), "--json"]
    for k, v in params:
        argv += [f"--{k}={v}"]
    rc, err = _run(argv)
    assert rc in (0, 2), err
    if rc:
        assert err.startswith("qoslab: error:") and err.count("\n") == 1, err


#: Lines a careless or hostile trace holds besides its rows.
JUNK = [b"", b"  ", b'"1,2",3', b'"unterminated', b"\xff\xfe", b"1,2,3", b"\x00", b"\r", b"# c"]


def _streamed(path: str, chunk: int) -> tuple[object, object] | str:
    """The whole trace through the streaming reader in chunks of ``chunk``,
    or its error line."""
    try:
        with open_trace(path) as ts:
            parts = list(ts.chunks(chunk))
    except TraceFileError as e:
        return str(e)
    times = np.concatenate([c.times_ns for c in parts]) if parts else np.zeros(0, np.uint64)
    sizes = np.concatenate([c.sizes for c in parts]) if parts else np.zeros(0, np.uint32)
    return times, sizes


@TRACE_FUZZ
@given(
    rows=st.lists(
        st.one_of(
            st.tuples(
                st.one_of(st.integers(-5, 2**64), st.text(max_size=6)),
                st.one_of(st.integers(-5, 70000), st.text(max_size=6)),
            ).map(lambda r: f"{r[0]},{r[1]}".encode("utf-8", "surrogatepass")),
            st.sampled_from(JUNK),
        ),
        max_size=30,
    ),
    header=st.sampled_from(["time_ns,size_bytes", "size_bytes,time_ns", "time_ns", "", "a,b"]),
    chunk=st.sampled_from([1, 2, 7, 4096]),
)
def test_any_trace_reads_or_fails_with_its_line(
    tmp_path_factory: pytest.TempPathFactory, rows: list[bytes], header: str, chunk: int
) -> None:
    """The whole-file reader and the streaming one (any chunk size) agree:
    the same packets, or both a one-line error naming the file (not always
    the same one: the streaming reader reports the first bad chunk's
    problem, the whole-file one checks each kind of problem over the whole
    file in turn). What reads then shapes with no departure before its
    arrival, or fails at a packet."""
    p = tmp_path_factory.mktemp("t") / "t.csv"
    p.write_bytes(header.encode() + b"\n" + b"".join(r + b"\n" for r in rows))
    streamed = _streamed(str(p), chunk)
    try:
        tf = read_trace(str(p))
    except TraceFileError as e:
        assert str(e).startswith(str(p)) and "\n" not in str(e)
        assert isinstance(streamed, str) and streamed.startswith(f"{p}:"), streamed
        assert "\n" not in streamed
        return
    assert not isinstance(streamed, str), streamed
    assert (streamed[0] == tf.times_ns).all() and (streamed[1] == tf.sizes).all()
    try:  # the CLI turns a TraceError into file:line with tf.error
        r = qoslab.shape("tbf", tf.times_ns, tf.sizes, rate="1mbit", burst="3000B", limit="30000B")
    except qoslab.TraceError as e:
        assert "\n" not in str(tf.error(e.index, e.message))
        return
    sent = ~r.dropped
    assert (r.departure_ns[sent] >= tf.times_ns[sent].astype(np.int64)).all()


@FUZZ
@given(
    times=st.lists(st.integers(0, 2**62 - 1), min_size=1, max_size=40),
    kind=st.sampled_from(["tbf", "codel", "pie", "red", "pfifo", "sfq"]),
)
def test_api_times_up_to_the_horizon(times: list[int], kind: str) -> None:
    params = {
        "tbf": {"rate": "1mbit", "burst": "3000B", "limit": "30000B"},
        "red": {"rate": "1mbit", "limit": "60kb", "avpkt": "1000"},
    }.get(kind, {"rate": "1mbit"})
    t = np.sort(np.array(times, dtype=np.uint64))
    r = qoslab.shape(kind, t, np.full(len(t), 1500, dtype=np.uint32), **params)
    sent = ~r.dropped
    assert (r.departure_ns[sent] >= t[sent].astype(np.int64)).all()
