"""``qoslab emulate --idle-poll``: the PM QoS request is written as the kernel reads it
(a native 32-bit integer, µs), held open for the block only, and a device that cannot
be opened is one clear setup error (a regular file stands in for /dev/cpu_dma_latency)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from qoslab.emulate.idlepoll import idle_polling
from qoslab.emulate.netns import EmulationSetupError


def _open_fds_to(path: Path) -> int:
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                n += 1
        except OSError:
            continue
    return n


def test_request_is_written_and_held_only_inside_the_block(tmp_path: Path) -> None:
    dev = tmp_path / "cpu_dma_latency"
    dev.write_bytes(b"")
    with idle_polling(dev):
        assert _open_fds_to(dev) == 1
        assert struct.unpack("=i", dev.read_bytes()) == (0,)
    assert _open_fds_to(dev) == 0


def test_request_is_withdrawn_on_an_error(tmp_path: Path) -> None:
    dev = tmp_path / "cpu_dma_latency"
    dev.write_bytes(b"")
    with pytest.raises(RuntimeError), idle_polling(dev, latency_us=5):
        raise RuntimeError("run failed")
    assert _open_fds_to(dev) == 0
    assert struct.unpack("=i", dev.read_bytes()) == (5,)


def test_missing_device_is_a_setup_error(tmp_path: Path) -> None:
    with pytest.raises(EmulationSetupError, match="cannot request idle polling"):
        with idle_polling(tmp_path / "none"):
            pass
