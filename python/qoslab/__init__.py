"""qoslab: a traffic-conditioning laboratory.

The conditioners live in Rust (``qoslab._core``); this package validates input,
runs them over NumPy arrays and renders results::

    import qoslab
    colors = qoslab.color("srtcm", times_ns, sizes, cir="1mbit", cbs="3000B", ebs="6000B")
    result = qoslab.police("srtcm", times_ns, sizes, cir="1mbit", cbs=3000, violate="drop")
    shaped = qoslab.shape("tbf", times_ns, sizes, rate="1mbit", burst="3000B", limit="30000B")
    result = qoslab.simulate("scenarios/example.toml")   # or TOML text, or a dict
    result.summary["sum_goodput_bps"], result.goodput     # dict, pandas DataFrame
"""

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

__version__ = core_version()
__all__ = [
    "ACTION_NAMES",
    "COLOR_NAMES",
    "Cancelled",
    "ConfigError",
    "EmulationError",
    "PoliceResult",
    "ResourceError",
    "ScenarioError",
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
    "police",
    "shape",
    "shape_policy",
    "shaper_kinds",
    "simulate",
]
