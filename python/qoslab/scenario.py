"""Scenario input: a TOML file, TOML text or a dict, all read by the one Rust parser.

A dict is written out as TOML (``tomli_w``) and parsed like a file, so the
rules and the error messages are the same whichever way a scenario comes in.
See ``crates/qoslab-scenario`` for the schema.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union

import tomli_w

from qoslab import _core
from qoslab._core import ScenarioError

__all__ = ["ScenarioError", "ScenarioSource", "load_scenario", "scenario_info", "with_seed"]

#: What ``qoslab.simulate`` accepts: a path, TOML text, or a dict.
ScenarioSource = Union[str, "os.PathLike[str]", Mapping[str, Any]]


def _scenario_error(file: str, message: str) -> ScenarioError:
    """A ``ScenarioError`` raised from Python, shaped like the ones from Rust."""
    e = ScenarioError(f"{file}:1:1: {message}")
    e.file, e.line, e.column, e.path, e.message = file, 1, 1, "", message
    return e


def _file_error(file: str, message: str) -> ScenarioError:
    """A ``ScenarioError`` for a scenario file that cannot be read."""
    e = ScenarioError(f"{file}: {message}")
    e.file, e.line, e.column, e.path, e.message = file, 0, 0, "", message
    return e


def load_scenario(spec: ScenarioSource) -> tuple[str, str]:
    """Returns ``(toml_text, filename)`` for a path, TOML text or a dict.

    A ``str`` is TOML text when it holds a newline or starts with ``[``;
    otherwise it is a path.
    """
    if isinstance(spec, Mapping):
        try:
            return tomli_w.dumps(dict(spec)), "<dict>"
        except (TypeError, ValueError) as e:
            raise _scenario_error("<dict>", f"cannot be written as TOML: {e}") from None
    if isinstance(spec, str) and ("\n" in spec or spec.lstrip().startswith("[")):
        return spec, "<string>"
    if isinstance(spec, (str, os.PathLike)):
        if not os.fspath(spec):
            raise _file_error("''", "an empty path (a scenario file, TOML text or a dict)")
        path = Path(spec)
        try:
            return path.read_text(encoding="utf-8"), str(spec)
        except UnicodeDecodeError as e:
            raise _scenario_error(str(spec), f"not UTF-8 text ({e.reason})") from None
        except OSError as e:
            # A qoslab exception (issue 15), saying what the OS said.
            raise _file_error(str(spec), e.strerror or str(e)) from None
    raise TypeError(f"a scenario is a path, TOML text or a dict, not {type(spec).__name__}")


def scenario_info(text: str, filename: str = "<string>") -> dict[str, Any]:
    """Parses (validates) a scenario without running it: name, seed,
    duration_ns, description, source, record_interval_ns, series, capture
    (``{"links": [(LINK[:side], file or None)], "snaplen": n}``)."""
    return _core.scenario_info(text, filename)


def with_seed(text: str, seed: int) -> str:
    """The scenario text with ``[scenario] seed`` set to ``seed`` (for writing
    the scenario as run). Comments of the original are not kept."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib

    doc = tomllib.loads(text)
    doc.setdefault("scenario", {})["seed"] = int(seed)
    return f"# the scenario as run, with seed = {seed}\n" + tomli_w.dumps(doc)
