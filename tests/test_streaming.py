"""Traces streamed in bounded chunks (issue 15): ``qoslab meter`` / ``shape``
give byte-identical output whatever the chunk size, hold a bounded amount
of memory per row, honour Ctrl-C within a moment, and turn a failed
allocation into a clean ``ResourceError``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import qoslab
from qoslab import traceio
from qoslab.cli import main

ROOT = Path(__file__).resolve().parents[1]
QOSLAB = [sys.executable, "-m", "qoslab.cli"]


def _trace(path: Path, n: int, seed: int = 1, flows: int = 0) -> Path:
    """A bursty trace of ``n`` packets (with a ``color`` column, and a
    ``flow`` column when ``flows``), written fast with NumPy."""
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.integers(0, 4000, n) * (rng.random(n) < 0.8))
    s = rng.integers(40, 1501, n)
    cols = [t, s, rng.integers(0, 3, n)]
    header = "time_ns,size_bytes,color"
    if flows:
        cols.append(rng.integers(0, flows, n))
        header += ",flow"
    text = [c.astype(str) for c in cols]
    rows = text[0]
    for c in text[1:]:
        rows = np.char.add(np.char.add(rows, ","), c)
    path.write_text(header + "\n" + "\n".join(rows.tolist()) + "\n", encoding="ascii")
    return path


CASES = [
    ["meter", "srtcm", "--cir", "2gbit", "--cbs", "30000B", "--ebs", "60000B", "--mode", "aware"],
    ["meter", "tswtcm", "--ctr", "1gbit", "--ptr", "3gbit", "--violate", "drop"],
    ["shape", "tbf", "--rate", "2gbit", "--burst", "30000B", "--limit", "200kb"],
    ["shape", "codel", "--rate", "2gbit", "--target", "50us", "--interval", "1ms"],
    ["shape", "sfq", "--rate", "2gbit", "--limit", "50"],
    ["shape", "tree", "--policy", str(ROOT / "examples" / "htb-two-classes.toml")],
]


@pytest.mark.parametrize("argv", CASES, ids=lambda a: f"{a[0]}-{a[1]}")
def test_chunked_runs_write_byte_identical_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    trace = _trace(tmp_path / "t.csv", 6_000, flows=5)
    outputs = {}
    for chunk in (1, 7, 4096, 10**9):  # 10**9: the whole trace in one chunk
        monkeypatch.setattr(traceio, "CHUNK_ROWS", chunk)
        out = tmp_path / f"out-{chunk}.csv"
        assert main([*argv, "--input", str(trace), "--output", str(out), "--json"]) == 0
        outputs[chunk] = out.read_bytes()
    assert outputs[1] == outputs[7] == outputs[4096] == outputs[10**9]
    lines = outputs[1].decode().splitlines()
    assert len(lines) == 6_001
    # Sanity check against the whole-array API (one call, no file):
    t = np.loadtxt(trace, delimiter=",", skiprows=1, dtype=np.int64)
    if argv[0] == "shape" and argv[1] == "tbf":
        r = qoslab.shape("tbf", t[:, 0], t[:, 1], rate="2gbit", burst="30000B", limit="200kb")
        dep = [line.split(",")[4] for line in lines[1:]]
        want = ["" if d < 0 else str(d) for d in r.departure_ns.tolist()]
        assert dep == want
        assert r.dropped.any() and (~r.dropped).any()


def _rss_kb(argv: list[str]) -> int:
    """Peak RSS (KiB) of ``qoslab ARGV`` in a child process."""
    code = (
        "import resource, subprocess, sys;"
        "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *QOSLAB, *argv], capture_output=True, text=True, check=True
    )
    return int(out.stdout)


@pytest.mark.parametrize("cmd", [CASES[0], CASES[2]], ids=["meter", "shape"])
def test_memory_per_row_is_bounded(tmp_path: Path, cmd: list[str]) -> None:
    """A 4x longer trace costs at most 64 bytes per added row of resident
    memory (before streaming: about 430 B per row, the whole file as
    Python strings)."""
    # Both longer than a chunk (65,536 rows, about 35 MB of Python strings
    # at its peak), so the difference is what grows with the trace.
    small = _trace(tmp_path / "small.csv", 150_000)
    big = _trace(tmp_path / "big.csv", 600_000)
    rss = {}
    for name, trace in (("small", small), ("big", big)):
        rss[name] = _rss_kb([*cmd, "--input", str(trace), "--output", str(tmp_path / "o.csv")])
    per_row = (rss["big"] - rss["small"]) * 1024 / 450_000
    assert per_row <= 64, f"{per_row:.1f} B per row ({rss})"


def test_ctrl_c_stops_a_long_shape_within_half_a_second(tmp_path: Path) -> None:
    """A real SIGINT while `qoslab shape` runs a long trace: status 130,
    'qoslab: cancelled', no output and no temporary left beside it."""
    trace = _trace(tmp_path / "t.csv", 2_000_000)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    log = tmp_path / "strace.log"
    argv = [*CASES[3], "--input", str(trace), "--output", str(out_dir / "o.csv")]
    with open(log, "wb") as err:
        proc = subprocess.Popen([*QOSLAB, *argv], stderr=err, stdout=subprocess.DEVNULL)
        time.sleep(3.0)  # past the imports, into the run (about 10 s)
        assert proc.poll() is None, log.read_text()
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=30)
        took = time.monotonic() - t0
    assert rc == 130, log.read_text()
    assert log.read_text() == "qoslab: cancelled\n"
    assert list(out_dir.iterdir()) == []
    # 0.5 s is the promise; the bound leaves room for a loaded CI machine.
    assert took < 2.0, f"{took:.2f} s from SIGINT to exit"


def test_ctrl_c_interrupts_the_api_on_long_arrays(tmp_path: Path) -> None:
    """``qoslab.shape`` on 10^7 packets in one call: SIGINT raises
    KeyboardInterrupt from inside the run (checked between slices)."""
    code = textwrap.dedent(
        """
        import sys, time, numpy as np, qoslab
        n = 10_000_000
        t = np.arange(n, dtype=np.uint64) * 100
        s = np.full(n, 1500, dtype=np.uint32)
        print("ready", flush=True)
        t0 = time.monotonic()
        try:
            qoslab.shape("codel", t, s, rate="1gbit", limit=10**6)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(130)
        print("finished", time.monotonic() - t0, flush=True)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    time.sleep(0.5)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    took = time.monotonic() - t0
    assert proc.returncode == 130, (out, err)
    assert out == b"interrupted\n" and b"Traceback" not in err
    assert took < 2.0, f"{took:.2f} s"


def _limited(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a child whose address space is capped 64 MB above what
    it has mapped when the cap is set (``limit()``), RUST_BACKTRACE=1."""
    prelude = textwrap.dedent(
        """
        import resource
        def limit():
            with open("/proc/self/status") as f:
                vm = next(int(l.split()[1]) for l in f if l.startswith("VmSize:")) * 1024
            resource.setrlimit(resource.RLIMIT_AS, (vm + 64 * 2**20, resource.RLIM_INFINITY))
        """
    )
    env = {**os.environ, "RUST_BACKTRACE": "1"}
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_a_failed_result_allocation_is_a_resource_error() -> None:
    """With the address space capped, the result arrays of 2*10^8 packets
    cannot be allocated: ResourceError (a MemoryError and a QoslabError),
    no panic, no abort, no hang, also with RUST_BACKTRACE=1."""
    r = _limited(
        """
        import numpy as np, qoslab
        from qoslab import _core
        n = 200_000_000
        t = np.zeros(n, dtype=np.uint64)
        s = np.ones(n, dtype=np.uint32)
        limit()
        for f in (
            lambda: _core.MeterRun("srtcm", {"cir": "1mbit", "cbs": "3000"}).push(t, s),
            lambda: qoslab.police("srtcm", t, s, cir="1mbit", cbs=3000),
            lambda: qoslab.shape("tbf", t, s, rate="1mbit", burst=3000, limit=3000),
        ):
            try:
                f()
            except qoslab.ResourceError as e:
                assert isinstance(e, MemoryError) and isinstance(e, qoslab.QoslabError)
                print("ResourceError:", e)
        """
    )
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert len(lines) == 3 and all(x.startswith("ResourceError: out of memory") for x in lines)
    assert "panicked" not in r.stderr and "PyObject pointer is null" not in r.stderr
