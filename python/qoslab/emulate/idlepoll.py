"""Idle CPUs that poll instead of halting, for one emulation (``qoslab emulate --idle-poll``).

Why: on a virtual machine an idle vCPU halts, and waking it (a timer due, a frame for
the sleeping forwarder) goes through the hypervisor: the forwarder's timed sleeps woke
80-150 µs late at p99 on this machine (docs/performance.md, issue 16), and a delay-line
release waits for that. The kernel's PM QoS CPU latency request (Documentation/power/
pm_qos_interface.rst, "cpu_dma_latency"): a process that writes a 32-bit latency bound
in µs to ``/dev/cpu_dma_latency`` and keeps the file open asks every CPU's idle governor
for idle states that exit within that bound; with 0 the governor (``haltpoll``, ``menu``,
``teo``) keeps idle CPUs in the polling state, which needs no wake-up at all. It is the
mechanism ``cyclictest`` uses.

Nothing is written to the machine's configuration: the request lives as long as the file
stays open, and the kernel withdraws it when it is closed, at the end of the run, on an
error, Ctrl-C, SIGTERM and also when the process is killed (the kernel closes the file).
The cost: while the run lasts, idle CPUs spin (a hypervisor sees them busy).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from qoslab.emulate.netns import EmulationSetupError

#: The PM QoS CPU latency request's device (misc device "cpu_dma_latency").
DEVICE = Path("/dev/cpu_dma_latency")


@contextmanager
def idle_polling(device: Path = DEVICE, latency_us: int = 0) -> Iterator[None]:
    """Holds a PM QoS CPU latency request of ``latency_us`` for the ``with`` block; the
    kernel drops it when the block closes the file (or the process dies)."""
    try:
        fd = os.open(device, os.O_WRONLY | os.O_CLOEXEC)
    except OSError as e:
        raise EmulationSetupError(
            f"{device}: cannot request idle polling (needs root and PM QoS): {e}"
        ) from e
    try:
        try:
            os.write(fd, struct.pack("=i", latency_us))
        except OSError as e:
            raise EmulationSetupError(f"{device}: cannot request idle polling: {e}") from e
        yield
    finally:
        os.close(fd)
