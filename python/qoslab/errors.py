"""The root of qoslab's exceptions: every error the API raises is a
:class:`QoslabError`, and also the built-in class it always was
(``ConfigError`` a ``ValueError``, ``ResourceError`` a ``MemoryError``...),
so ``except qoslab.QoslabError`` catches all of them and older
``except ValueError`` code keeps working.

The extension (``qoslab._core``) derives its exception classes from the
bases below (``pyo3::import_exception!``), so this module must import
nothing from qoslab: it is imported while the extension initialises.
"""

from __future__ import annotations


class QoslabError(Exception):
    """Base class of every error qoslab raises (bad parameters, traces,
    scenarios, captures, imports, resources)."""


class QoslabValueError(QoslabError, ValueError):
    """Base of the qoslab errors about a bad value (a ``ValueError``)."""


class QoslabMemoryError(QoslabError, MemoryError):
    """Base of the qoslab errors about memory (a ``MemoryError``)."""


class QoslabRuntimeError(QoslabError, RuntimeError):
    """Base of the qoslab errors about the environment (a ``RuntimeError``)."""


class QoslabTypeError(QoslabError, TypeError):
    """An argument of the wrong type (a scenario that is neither a path, TOML
    text nor a dict): a ``qoslab.QoslabError`` and a ``TypeError``."""
