"""Every API error is a ``qoslab.QoslabError`` (issue 15), and still the
built-in class it always was; the sweep checks each point's memory
estimate before running it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import qoslab
from qoslab import _core
from qoslab.sweep import worker
from qoslab.sweep.resolve import Run
from qoslab.traceio import TraceFileError

ROOT = Path(__file__).resolve().parents[1]
P = {"cir": "1mbit", "cbs": 3000, "ebs": 3000}
TBF = {"rate": "1mbit", "burst": 3000, "limit": 30000}


def test_the_classes_keep_their_builtin_bases() -> None:
    for cls in (qoslab.ConfigError, qoslab.TraceError, qoslab.ScenarioError):
        assert issubclass(cls, qoslab.QoslabError) and issubclass(cls, ValueError)
    for cls in (_core.ConfigImportError, _core.CaptureError):
        assert issubclass(cls, qoslab.QoslabError) and issubclass(cls, ValueError)
    assert issubclass(qoslab.ResourceError, qoslab.QoslabError)
    assert issubclass(qoslab.ResourceError, MemoryError)
    assert issubclass(TraceFileError, qoslab.QoslabError)
    # Ctrl-C is not an error: Cancelled stays a KeyboardInterrupt only.
    assert not issubclass(qoslab.Cancelled, Exception)


CALLS = {
    "color: unknown kind": lambda: qoslab.color("srtcn", [0], [1], **P),
    "color: kind None": lambda: qoslab.color(None, [0], [1], **P),
    "police: bad parameter": lambda: qoslab.police("srtcm", [0], [1], cir="fast"),
    "police: unsorted": lambda: qoslab.police("srtcm", [5, 1], [1, 1], **P),
    "police: strings for times": lambda: qoslab.police("srtcm", ["a"], [1], **P),
    "police: 2-D": lambda: qoslab.police("srtcm", [[0]], [[1]], **P),
    "police: lengths": lambda: qoslab.police("srtcm", [0, 1], [1], **P),
    "police: colours": lambda: qoslab.police("srtcm", [0], [1], ["blue"], **P),
    "police: ragged": lambda: qoslab.police("srtcm", [[0], [1, 2]], [1], **P),
    "shape: unknown kind": lambda: qoslab.shape("nope", [0], [1]),
    "shape: kind None": lambda: qoslab.shape(None, [0], [1]),
    "shape: missing rate": lambda: qoslab.shape("codel", [0], [1]),
    "shape: zero size": lambda: qoslab.shape("tbf", [0], [0], **TBF),
    "shape: unknown column": lambda: qoslab.shape("tbf", [0], [1], {"x": [1]}, **TBF),
    "shape: short column": lambda: qoslab.shape("sfq", [0, 1], [1, 1], {"flow": [1]}, rate=1e6),
    "shape: past the horizon": lambda: qoslab.shape("tbf", [2**62], [1], **TBF),
    "shape_policy: missing file": lambda: qoslab.shape_policy(ROOT / "no.toml", [0], [1]),
    "shape_policy: bad TOML": lambda: qoslab.shape_policy("htb = {", [0], [1]),
    "shape_policy: None": lambda: qoslab.shape_policy(None, [0], [1]),
    "shape_policy: bad rate": lambda: qoslab.shape_policy("prio = {}", [0], [1], rate="x"),
    "describe: None": lambda: qoslab.describe(None),
    "describe: unknown": lambda: qoslab.describe("nope"),
    "describe: bad value": lambda: qoslab.describe("srtcm", cir=object()),
    "parse_rate": lambda: qoslab.parse_rate("fast"),
    "parse_size": lambda: qoslab.parse_size("big"),
    "parse_time": lambda: qoslab.parse_time("soon"),
    "simulate: empty path": lambda: qoslab.simulate(""),
    "simulate: missing file": lambda: qoslab.simulate(ROOT / "no-such.toml"),
    "simulate: bad TOML": lambda: qoslab.simulate("[scenario\nname = 1"),
    "simulate: over the memory limit": lambda: qoslab.simulate(
        ROOT / "scenarios" / "example.toml", memory_limit=1000
    ),
}


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
def test_every_public_entry_point_raises_a_qoslab_error(call) -> None:
    with pytest.raises(qoslab.QoslabError) as e:
        call()
    assert str(e.value) and "\n" not in str(e.value)


def test_a_numpy_allocation_failure_is_a_resource_error(monkeypatch) -> None:
    """NumPy's own MemoryError while the arrays are checked becomes a
    ResourceError (the RLIMIT_AS case is in test_streaming.py)."""

    def boom(*a, **k):
        raise MemoryError

    monkeypatch.setattr(np, "ascontiguousarray", boom)
    with pytest.raises(qoslab.ResourceError, match="out of memory"):
        qoslab.police("srtcm", [0], [1], **P)


def test_the_sweep_checks_each_points_memory_before_running(monkeypatch) -> None:
    text = (ROOT / "scenarios" / "example.toml").read_text()
    run = Run("h", {"k": 1}, 1, text, "example.toml")
    assert worker.run_one(run).error is None
    monkeypatch.setattr(worker, "_LIMIT", [1000])  # bytes: nothing fits
    out = worker.run_one(run)
    assert out.row is None and out.error is not None
    assert "estimated" in out.error and "limit of" in out.error
    with pytest.raises(qoslab.ResourceError):
        worker.check_memory(text, "example.toml", 1)


def test_emulation_error_is_a_qoslab_error_and_a_runtime_error() -> None:
    import qoslab

    assert issubclass(qoslab.EmulationError, qoslab.QoslabError)
    assert issubclass(qoslab.EmulationError, RuntimeError)


def test_simulate_argument_errors_are_qoslab_errors() -> None:
    import qoslab

    with pytest.raises(qoslab.QoslabError, match="seed") as e:
        qoslab.simulate("[scenario]\n", seed=-1)
    assert isinstance(e.value, ValueError)
    with pytest.raises(qoslab.QoslabError, match="not int") as t:
        qoslab.simulate(42)  # type: ignore[arg-type]
    assert isinstance(t.value, TypeError)
