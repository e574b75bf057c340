"""qoslab: a traffic-conditioning laboratory.

The conditioners live in Rust (``qoslab._core``); this package validates input,
runs them over NumPy arrays and renders results.
"""

from qoslab._core import core_version

__version__ = core_version()
__all__ = ["__version__"]
