"""Type stub for the Rust extension ``qoslab._core`` (thin bindings to qoslab-core)."""

import numpy as np
import numpy.typing as npt

class ConfigError(ValueError):
    """A conditioner parameter (or the kind) is invalid."""

    param: str
    message: str

class TraceError(ValueError):
    """A trace is invalid at packet ``index`` (0-based)."""

    index: int
    message: str

def core_version() -> str: ...
def meter_kinds() -> list[tuple[str, str]]: ...
def shaper_kinds() -> list[tuple[str, str]]: ...
def describe_meter(kind: str, params: dict[str, str]) -> list[tuple[str, str]]: ...
def describe_shaper(kind: str, params: dict[str, str]) -> list[tuple[str, str]]: ...
def meter_trace(
    kind: str,
    params: dict[str, str],
    times_ns: npt.NDArray[np.uint64],
    sizes: npt.NDArray[np.uint32],
    colors: npt.NDArray[np.uint8] | None = None,
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8], dict[str, object]]: ...
def shape_trace(
    kind: str,
    params: dict[str, str],
    times_ns: npt.NDArray[np.uint64],
    sizes: npt.NDArray[np.uint32],
) -> tuple[npt.NDArray[np.uint64], dict[str, int]]: ...
def parse_rate(s: str) -> int: ...
def parse_size(s: str) -> int: ...
def parse_time(s: str) -> int: ...
