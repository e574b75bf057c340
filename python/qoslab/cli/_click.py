"""What every ``qoslab`` command shares on top of click: the command class
(help layout, ``-h``), value types that check a value as it is parsed, and
the call of a command's own module.

Only click and the standard library here: this module is loaded by every
``qoslab CMD --help``, which must not pay for NumPy or pandas.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import click

#: ``-h`` as well as ``--help`` (argparse gave both; users type either).
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


class UsageError(Exception):
    """A bad command line found by qoslab's own checks (not by click):
    printed as one ``qoslab: error:`` line, exit status 2."""


class Command(click.Command):
    """A ``qoslab`` command whose epilog is printed as written.

    The epilogs hold formatted blocks (scenario snippets, the examples with
    their ``\\`` continuation lines) that a user copies into a shell; click
    would re-wrap and indent them (or need a ``\\b`` marker per paragraph).
    ``epilog`` may also be a function, for an epilog that names things known
    only to a module too heavy to load for every ``--help``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", CONTEXT_SETTINGS)
        super().__init__(*args, **kwargs)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        epilog: Any = self.epilog
        text = epilog() if callable(epilog) else epilog
        if text:
            formatter.write_paragraph()
            formatter.write(text if text.endswith("\n") else text + "\n")


class Checked(click.ParamType):
    """A value type from a function of the text that raises ``ValueError``
    with what was expected; click reports it as ``Invalid value for
    '--OPTION': <message>`` (a usage error, exit status 2)."""

    def __init__(self, name: str, check: Callable[[str], Any]) -> None:
        self.name = name
        self.check = check

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value  # a default, already converted
        try:
            return self.check(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)


class PathText(click.ParamType):
    """A file or directory name, passed on as typed: qoslab's own checks
    report a missing or unwritable path in its one-line format. Only its
    shell completion differs from a plain string's: file names."""

    name = "path"

    def shell_complete(
        self, ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[Any]:
        from click.shell_completion import CompletionItem

        return [CompletionItem(incomplete, type="file")]


#: The type of every file or directory parameter.
PATH = PathText()


def namespace(command: str, params: dict[str, Any]) -> argparse.Namespace:
    """The attributes a command module's ``main(args)`` reads: click's
    parameters by name, repeatable options and variadic arguments as lists
    (they were argparse's lists and the modules append to or index them)."""
    values = {k: list(v) if isinstance(v, tuple) else v for k, v in params.items()}
    return argparse.Namespace(command=command, **values)


def call(
    command: str,
    run: Callable[[argparse.Namespace], int],
    args: argparse.Namespace,
    *,
    wrap_qoslab_errors: bool = False,
) -> int:
    """Runs a command's ``main``: a plain ``ValueError`` from it is a bad
    combination of options (``--json and --format iperf3 disagree``) and
    becomes a usage error naming the command; qoslab's scenario and
    configuration errors keep their own one-line format, unless
    ``wrap_qoslab_errors`` (import, analyze: their input is not a scenario,
    so the command's name says where the error comes from)."""
    from qoslab._core import ConfigError, ScenarioError

    try:
        return run(args)
    except ValueError as e:
        if not wrap_qoslab_errors and isinstance(e, (ScenarioError, ConfigError)):
            raise
        raise UsageError(f"{command}: {e}") from None
