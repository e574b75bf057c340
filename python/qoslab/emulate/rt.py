"""Lifting the kernel's real-time throttling for one emulation
(``qoslab emulate --rt-unthrottle``).

Why: the forwarder thread runs SCHED_FIFO (crates/qoslab-emu/src/sys.rs). At 1 Gbit/s
of wire-sized frames it wants about 96 % of a CPU, and the kernel's RT bandwidth control
(sched(7) "Real-time throttling"; ``kernel.sched_rt_runtime_us`` 950000 of
``sched_rt_period_us`` 1000000 by default, Documentation/scheduler/sched-rt-group.rst)
then holds it off for the last 50 ms of every second in one piece. 50 ms without a
forwarder empties the policy's queue and fills the hosts' with losses: measured on
this machine, 4-15 % of 10 ms queue samples empty and a 3-5 % goodput shortfall at
1 Gbit/s (docs/performance.md, issue 16). ``sched_rt_runtime_us = -1`` switches the
throttling off for the whole machine, so this is an explicit option, the previous value
is restored when the run ends (also on an error, Ctrl-C or SIGTERM), and a value left by
a SIGKILLed run is restored by ``qoslab emulate --cleanup``.

The cost of the option: while a run lasts, a spinning forwarder can keep the other
SCHED_OTHER tasks of its CPU off it entirely; the hosts' iperf3 and the kernel's
per-CPU work then run on the other CPUs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from qoslab.emulate.netns import EmulationSetupError

#: The kernel's knob (sched(7)); -1 = no limit.
RUNTIME = Path("/proc/sys/kernel/sched_rt_runtime_us")
#: What a run that changed the knob saved: "PID VALUE" (for --cleanup after SIGKILL).
SAVED = Path("/run/qoslab-emulate-rt-runtime")
UNLIMITED = -1


def _read(path: Path) -> int:
    return int(path.read_text(encoding="ascii").strip())


def _write(path: Path, value: int) -> None:
    path.write_text(f"{value}\n", encoding="ascii")


def _save(saved: Path, pid: int, value: int) -> None:
    tmp = saved.with_name(saved.name + ".tmp")
    tmp.write_text(f"{pid} {value}\n", encoding="ascii")
    tmp.replace(saved)


def _saved(saved: Path) -> tuple[int, int] | None:
    try:
        pid, value = saved.read_text(encoding="ascii").split()
        return int(pid), int(value)
    except (OSError, ValueError):
        return None


@contextmanager
def unthrottled(runtime: Path = RUNTIME, saved: Path = SAVED) -> Iterator[int]:
    """Sets ``runtime`` to -1 for the ``with`` block and puts the old value back after
    it; yields the old value. Already -1: nothing to do. Another live run that already
    lifted it (``saved`` names a live process): its saved value is the one to restore,
    and that run restores it."""
    try:
        before = _read(runtime)
    except (OSError, ValueError) as e:
        raise EmulationSetupError(f"{runtime}: cannot read the RT throttling limit ({e})") from e
    if before == UNLIMITED:
        yield before
        return
    _save(saved, os.getpid(), before)
    try:
        _write(runtime, UNLIMITED)
    except OSError as e:
        saved.unlink(missing_ok=True)
        raise EmulationSetupError(
            f"{runtime}: cannot lift the RT throttling (needs root): {e}"
        ) from e
    try:
        yield before
    finally:
        _write(runtime, before)
        saved.unlink(missing_ok=True)


def restore_stale(runtime: Path = RUNTIME, saved: Path = SAVED) -> int | None:
    """What ``--cleanup`` does: a value saved by a run whose process is gone is written
    back. Returns it, or None when there was nothing to restore."""
    entry = _saved(saved)
    if entry is None:
        return None
    pid, value = entry
    if pid != os.getpid() and os.path.exists(f"/proc/{pid}"):
        return None
    _write(runtime, value)
    saved.unlink(missing_ok=True)
    return value
