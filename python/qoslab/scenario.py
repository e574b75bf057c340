"""Scenario input: a TOML file, TOML text or a dict, all read by the one Rust parser.

A dict is written out as TOML (``tomli_w``) and parsed like a file, so the
rules and the error messages are the same whichever way a scenario comes in;
its errors name the dict's key path (``<dict>: traffic[0].rate: …``), not a
line of the TOML the user never saw. Every key: docs/scenarios.md.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union

import tomli_w

from qoslab import _core
from qoslab._core import ScenarioError
from qoslab.errors import QoslabTypeError

__all__ = [
    "ScenarioError",
    "ScenarioSource",
    "ScenarioWarning",
    "load_scenario",
    "scenario_info",
    "with_seed",
]


class ScenarioWarning(UserWarning):
    """A scenario that is valid but probably not what was meant (a policy
    filter that matches no packet of any flow), located in its file."""


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
            raise _file_error("<dict>", f"cannot be written as TOML: {e}") from None
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
    raise QoslabTypeError(f"a scenario is a path, TOML text or a dict, not {type(spec).__name__}")


def scenario_info(text: str, filename: str = "<string>", *, warn: bool = True) -> dict[str, Any]:
    """Parses (validates) a scenario without running it: name, seed,
    duration_ns, description, source, record_interval_ns, series, capture
    (``{"links": [(LINK[:side], file or None)], "snaplen": n}``) and
    warnings (``[{"file", "line", "column", "path", "message", "text"}]``).

    With ``warn`` (the default) each warning is also issued as a
    :class:`ScenarioWarning` located at the scenario's own file and line, so
    Python prints it as ``FILE:LINE: ScenarioWarning: …`` followed by that
    line of the file.
    """
    info = _core.scenario_info(text, filename)
    if warn:
        for w in info["warnings"]:
            warnings.warn_explicit(
                f"{w['path']}: {w['message']}",
                ScenarioWarning,
                w["file"],
                # a dict's line would be one of TOML the user never saw
                0 if w["file"] == "<dict>" else int(w["line"]),
                module="qoslab.scenario",
            )
    return info


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
