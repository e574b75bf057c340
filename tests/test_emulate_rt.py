"""``qoslab emulate --rt-unthrottle``: the kernel's RT throttling lifted for one run and
put back after it, on an error, and by ``--cleanup`` after a SIGKILL
(``qoslab.emulate.rt``). The unit tests use a stand-in file for the kernel's knob; the
last one runs a real emulation and reads the real knob while the run goes on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from qoslab.emulate import rt
from test_emulate import TBF_10MBIT, needs_emu


def _knob(tmp_path: Path, value: int) -> tuple[Path, Path]:
    runtime = tmp_path / "sched_rt_runtime_us"
    runtime.write_text(f"{value}\n")
    return runtime, tmp_path / "saved"


def test_lifted_inside_and_restored_after(tmp_path: Path) -> None:
    runtime, saved = _knob(tmp_path, 950000)
    with rt.unthrottled(runtime, saved) as before:
        assert before == 950000
        assert runtime.read_text().strip() == "-1"
        assert saved.read_text().split() == [str(os.getpid()), "950000"]
    assert runtime.read_text().strip() == "950000"
    assert not saved.exists()


def test_restored_when_the_run_fails(tmp_path: Path) -> None:
    runtime, saved = _knob(tmp_path, 900000)
    with pytest.raises(RuntimeError), rt.unthrottled(runtime, saved):
        raise RuntimeError("the emulation failed")
    assert runtime.read_text().strip() == "900000"
    assert not saved.exists()


def test_already_unlimited_is_left_alone(tmp_path: Path) -> None:
    runtime, saved = _knob(tmp_path, -1)
    with rt.unthrottled(runtime, saved) as before:
        assert before == -1
        assert not saved.exists()
    assert runtime.read_text().strip() == "-1"


def test_cleanup_restores_what_a_killed_run_left(tmp_path: Path) -> None:
    runtime, saved = _knob(tmp_path, -1)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    saved.write_text(f"{dead.pid} 950000\n")
    assert rt.restore_stale(runtime, saved) == 950000
    assert runtime.read_text().strip() == "950000"
    assert not saved.exists()
    assert rt.restore_stale(runtime, saved) is None


def test_cleanup_leaves_a_live_run_alone(tmp_path: Path) -> None:
    runtime, saved = _knob(tmp_path, -1)
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) as live:
        try:
            saved.write_text(f"{live.pid} 950000\n")
            assert rt.restore_stale(runtime, saved) is None
            assert runtime.read_text().strip() == "-1"
        finally:
            live.kill()


def test_an_unreadable_knob_is_a_setup_error(tmp_path: Path) -> None:
    from qoslab.emulate.netns import EmulationSetupError

    with (
        pytest.raises(EmulationSetupError, match="cannot read"),
        rt.unthrottled(tmp_path / "missing", tmp_path / "saved"),
    ):
        pass


@needs_emu
def test_a_real_run_lifts_the_kernel_knob_and_restores_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from qoslab.emulate.run import emulate

    before = int(rt.RUNTIME.read_text())
    seen: list[int] = []

    def progress(_done: int, _total: int, _info: dict[str, Any]) -> None:
        seen.append(int(rt.RUNTIME.read_text()))

    s = tmp_path / "tbf.toml"
    s.write_text(TBF_10MBIT)
    res = emulate(str(s), rt_unthrottle=True, progress=progress)
    assert seen, "progress was never called during the run"
    assert set(seen) == {-1}, seen  # lifted for the whole run (or already -1)
    assert int(rt.RUNTIME.read_text()) == before
    assert not rt.SAVED.exists()
    notes = res.raw["emulation"]["notes"]
    if before != -1:
        assert any("RT throttling lifted" in n for n in notes), notes
    doc = json.loads(res.to_json())
    assert doc["emulation"]["notes"] == notes
