"""The emulator: real Linux TCP through qoslab's own conditioners.

``qoslab.emulate.emulate(scenario)`` (also ``qoslab emulate SCENARIO``) builds one
network namespace per host of the scenario, emulates every router and link in a
userspace forwarder (Rust, ``crates/qoslab-emu``) that drives the qoslab-core
conditioners with the monotonic clock, runs real ``iperf3`` and ``ping``, and returns a
:class:`qoslab.results.SimulationResult` in the simulator's schema.

Modules: ``netns`` (namespaces, veths, cleanup), ``traffic`` (iperf3/ping programs and
their output), ``run`` (one run, results), ``cli`` (the command).
"""

from qoslab.emulate.netns import EmulationSetupError, cleanup_stale, preflight
from qoslab.emulate.run import BACKENDS, emulate, emulation_plan

__all__ = [
    "BACKENDS",
    "EmulationSetupError",
    "cleanup_stale",
    "emulate",
    "emulation_plan",
    "preflight",
]
