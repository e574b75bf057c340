"""qoslab: a traffic-conditioning laboratory.

The conditioners live in Rust (``qoslab._core``); this package validates input,
runs them over NumPy arrays and renders results::

    import qoslab
    colors = qoslab.color("srtcm", times_ns, sizes, cir="1mbit", cbs="3000B", ebs="6000B")
    result = qoslab.police("srtcm", times_ns, sizes, cir="1mbit", cbs=3000, violate="drop")
    shaped = qoslab.shape("tbf", times_ns, sizes, rate="1mbit", burst="3000B", limit="30000B")
    result = qoslab.simulate("scenarios/example.toml")   # or TOML text, or a dict
    result.summary["sum_goodput_bps"], result.goodput     # dict, pandas DataFrame
    result.plot("io_graph"); qoslab.plots.rtt_cdf(result)  # matplotlib figures
    result                                                # in Jupyter: a summary table
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The extension's names are cheap; everything built on NumPy/pandas is
# imported on first use (PEP 562 ``__getattr__`` below), so that
# ``import qoslab`` -- and with it every ``qoslab --help`` -- does not pay
# for pandas and NumPy (about a second on a loaded machine).
from qoslab._core import (
    Cancelled,
    ConfigError,
    EmulationError,
    ResourceError,
    ScenarioError,
    TraceError,
    core_version,
    parse_rate,
    parse_size,
    parse_time,
)
from qoslab.errors import QoslabError

if TYPE_CHECKING:
    from qoslab import plots as plots
    from qoslab.api import (
        ACTION_NAMES,
        COLOR_NAMES,
        PoliceResult,
        ShapeResult,
        color,
        describe,
        kind_families,
        meter_kinds,
        police,
        shape,
        shape_policy,
        shaper_kinds,
    )
    from qoslab.results import SimulationResult
    from qoslab.run import simulate

#: Public name -> the module defining it (imported on first access).
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        (
            "ACTION_NAMES",
            "COLOR_NAMES",
            "PoliceResult",
            "ShapeResult",
            "color",
            "describe",
            "kind_families",
            "meter_kinds",
            "police",
            "shape",
            "shape_policy",
            "shaper_kinds",
        ),
        "qoslab.api",
    ),
    "SimulationResult": "qoslab.results",
    "ScenarioWarning": "qoslab.scenario",
    "simulate": "qoslab.run",
}


#: Submodules reachable as attributes (``qoslab.plots.io_graph(r)``), imported
#: on first access: matplotlib is loaded only when a figure is wanted.
_SUBMODULES = ("plots", "table", "iperf3json")


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        mod = importlib.import_module(f"qoslab.{name}")
        globals()[name] = mod
        return mod
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'qoslab' has no attribute '{name}'")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_SUBMODULES})


__version__ = core_version()
__all__ = [
    "ACTION_NAMES",
    "COLOR_NAMES",
    "Cancelled",
    "ConfigError",
    "EmulationError",
    "PoliceResult",
    "QoslabError",
    "ResourceError",
    "ScenarioError",
    "ScenarioWarning",
    "ShapeResult",
    "SimulationResult",
    "TraceError",
    "__version__",
    "color",
    "describe",
    "kind_families",
    "meter_kinds",
    "parse_rate",
    "parse_size",
    "parse_time",
    "plots",
    "police",
    "shape",
    "shape_policy",
    "shaper_kinds",
    "simulate",
]
