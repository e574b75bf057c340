"""Type stub for the Rust extension ``qoslab._core`` (thin bindings to qoslab-core)."""

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from qoslab.errors import QoslabError as QoslabError
from qoslab.errors import QoslabMemoryError, QoslabValueError

class ConfigError(QoslabValueError):
    """A conditioner parameter (or the kind) is invalid."""

    param: str
    message: str

class TraceError(QoslabValueError):
    """A trace is invalid at packet ``index`` (0-based)."""

    index: int
    message: str

class ScenarioError(QoslabValueError):
    """A scenario is invalid; ``str()`` is ``file:line:col: path: message``."""

    file: str
    line: int
    column: int
    path: str
    message: str

class ResourceError(QoslabMemoryError):
    """A run would need more memory than allowed, or an allocation failed."""

class Cancelled(KeyboardInterrupt):
    """A simulation was cancelled (Ctrl-C, or the progress callback returned False)."""

class EmulationError(RuntimeError):
    """The emulator could not run (namespace or interface missing, not root, I/O error)."""

class ConfigImportError(QoslabValueError):
    """A tc or MQC text cannot be imported (`.line`, `.column`, `.token`, `.message`)."""

    line: int
    column: int
    token: str
    message: str

def import_config(
    source: str,
    text: str,
    direction: str = "egress",
    attach: str | None = None,
    platform: str = "ios-xe",
    table: str | None = None,
) -> dict[str, Any]: ...

class CaptureError(QoslabValueError):
    """A capture file cannot be read (one line)."""

def core_version() -> str: ...
def meter_kinds() -> list[tuple[str, str, str]]: ...
def shaper_kinds() -> list[tuple[str, str, str]]: ...
def describe_meter(kind: str, params: dict[str, str]) -> list[tuple[str, str]]: ...
def describe_shaper(kind: str, params: dict[str, str]) -> list[tuple[str, str]]: ...

class MeterRun:
    """A meter over a trace given in chunks (state carried across)."""

    def __init__(self, kind: str, params: dict[str, str]) -> None: ...
    def push(
        self,
        times_ns: npt.NDArray[np.uint64],
        sizes: npt.NDArray[np.uint32],
        colors: npt.NDArray[np.uint8] | None = None,
    ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8]]: ...
    def summary(self) -> dict[str, Any]: ...
    def describe(self) -> list[tuple[str, str]]: ...

class ShapeRun:
    """A shaper, queue, scheduler or tree over a trace given in chunks."""

    @staticmethod
    def kind(kind: str, params: dict[str, str]) -> ShapeRun: ...
    @staticmethod
    def tree(text: str, file: str, rate: str | None = None) -> ShapeRun: ...
    def push(
        self,
        times_ns: npt.NDArray[np.uint64],
        sizes: npt.NDArray[np.uint32],
        columns: dict[str, npt.NDArray[Any]] | None = None,
    ) -> int: ...
    def finish(self) -> dict[str, Any]: ...
    def take(self, limit: int | None = None) -> npt.NDArray[np.uint64]: ...
    def packets(self) -> int: ...
    def classes(self) -> list[dict[str, Any]]: ...
    def describe(self) -> list[tuple[str, str]]: ...

def parse_rate(s: str) -> int: ...
def parse_size(s: str) -> int: ...
def parse_time(s: str) -> int: ...
def scenario_info(text: str, filename: str = "<string>") -> dict[str, Any]: ...
def tcp_profile_defaults(profile: str) -> list[tuple[str, str]]: ...
def host_address(index: int) -> tuple[str, str]: ...
def simulate_toml(
    text: str,
    filename: str = "<string>",
    seed: int | None = None,
    progress: Callable[[int, int, int], object] | None = None,
    captures: list[tuple[str, str]] | None = None,
    snaplen: int = 0,
    numpy: bool = True,
) -> dict[str, Any]: ...

class Column:
    """A recorded series column (``simulate_toml(numpy=False)``): plain
    values until ``numpy.asarray(column)`` makes the NumPy array."""

    @property
    def dtype(self) -> str: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Any]: ...
    def tolist(self) -> list[Any]: ...
    def __array__(self, dtype: Any = None, copy: bool | None = None) -> npt.NDArray[Any]: ...

def estimate_toml(
    text: str, filename: str = "<string>", seed: int | None = None
) -> dict[str, Any]: ...
def emu_plan(text: str, filename: str = "<string>") -> dict[str, Any]: ...

class EmuHandle:
    """A running userspace forwarder (``emu_start``); dropping it stops the thread."""

    def stats(self) -> dict[str, Any]: ...
    def stop(self) -> dict[str, Any]: ...

def emu_start(
    text: str,
    filename: str,
    netns: str,
    ports: dict[str, str],
    host_ips: dict[str, str],
    kernel_links: dict[str, tuple[str, str]],
    captures: list[tuple[str, str, str]],
    t0_ns: int,
    offload: bool = False,
    threads: int = 0,
    busy_poll: bool = False,
) -> EmuHandle: ...
def analyze_capture(data: bytes, bin_ns: int, port: int | None = None) -> dict[str, Any]: ...
def policing_capture(data: bytes, port: int | None = None) -> list[dict[str, Any]]: ...
def capture_trace(data: bytes) -> dict[str, Any]: ...
