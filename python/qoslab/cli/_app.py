"""The ``qoslab`` command line itself (see :mod:`qoslab.cli`): the click group,
the command table and the error handling of :func:`main`."""

from __future__ import annotations

import contextlib
import difflib
import importlib
import os
import sys
from collections.abc import Sequence

import click

# Only light modules here (click, the extension's error classes): every
# command's own modules (NumPy, pandas, matplotlib, pyarrow behind them) are
# imported when that command runs, inside main()'s handlers, so Ctrl-C
# during those imports is caught (no traceback).
from qoslab import __version__
from qoslab._core import Cancelled, ConfigError, ScenarioError
from qoslab.cli._click import CONTEXT_SETTINGS, UsageError

__all__ = ["COMMANDS", "EXIT_INTERRUPTED", "EXIT_USAGE", "UsageError", "main", "qoslab"]

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

MAIN_EPILOG = """\
examples:
  qoslab run scenarios/example.toml
  qoslab meter srtcm --cir 1mbit --cbs 3000B --ebs 6000B \\
      --input examples/trace.csv --output /tmp/colored.csv --json
  qoslab shape --list
"""


#: Every command in the order `qoslab --help` lists them: where its click
#: command is ("module:attribute", loaded only when the command is named) and
#: its one-line help, shown by `qoslab --help` without loading the module.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("qoslab.cli.run:command", "simulate a scenario file"),
    "analyze": (
        "qoslab.cli.analyze:command",
        "analyse a pcap/pcapng capture (flows, TCP analysis, policing)",
    ),
    "import": (
        "qoslab.cli.importcmd:command",
        "turn a tc script or Cisco MQC config into the scenario policy TOML",
    ),
    "compare": (
        "qoslab.cli.compare:command",
        "run scenarios side by side (one table, overlaid plots, one report)",
    ),
    "reproduce": (
        "qoslab.cli.reproduce:command",
        "run the published experiments and compare with their numbers",
    ),
    "emulate": (
        "qoslab.cli.emulate:command",
        "run a scenario with real Linux TCP through qoslab's conditioners",
    ),
    "sweep": (
        "qoslab.cli.sweep:command",
        "run a scenario over a grid of key values and seeds; query and plot the results",
    ),
    "advise": (
        "qoslab.cli.advise:command",
        "which policer Bc / shaper queue for this rate, RTT and flows; police or shape?",
    ),
    "meter": ("qoslab.cli.conditioners:meter", "colour (and police) a trace CSV with a meter"),
    "shape": (
        "qoslab.cli.conditioners:shape",
        "shape a trace CSV with a shaper, queue, scheduler or policy tree",
    ),
}


class LazyGroup(click.Group):
    """A group whose commands are imported when named (click's "lazily
    loading subcommands" pattern), listed from :data:`COMMANDS`."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, _, attr = COMMANDS[cmd_name][0].partition(":")
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command), COMMANDS[cmd_name][0]
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0]
        if name not in COMMANDS and not name.startswith("-"):
            near = difflib.get_close_matches(name, list(COMMANDS), n=1)
            hint = f" Did you mean '{near[0]}'?" if near else ""
            raise click.UsageError(f"No such command '{name}'.{hint}", ctx)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, helptext) for name, (_, helptext) in COMMANDS.items()])


class _Main(LazyGroup):
    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_paragraph()
        formatter.write(MAIN_EPILOG)  # as written: the examples are pasted into a shell


@click.group(
    "qoslab",
    cls=_Main,
    invoke_without_command=True,
    context_settings=CONTEXT_SETTINGS,
    help="qoslab: a traffic-conditioning laboratory",
)
@click.version_option(__version__, "--version", message="qoslab %(version)s")
@click.pass_context
def qoslab(ctx: click.Context) -> int:
    if ctx.invoked_subcommand is None:  # bare `qoslab`: the help, as `qoslab --help` (status 0)
        click.echo(ctx.get_help())
    return 0


#: The variable click's shell completion sets (``_{PROG}_COMPLETE``).
COMPLETE_VAR = "_QOSLAB_COMPLETE"


def _run(argv: Sequence[str] | None) -> int:
    instruction = os.environ.get(COMPLETE_VAR) if argv is None else None
    if instruction:  # the shell asks for its completion script, or for completions
        from click.shell_completion import shell_complete

        return shell_complete(qoslab, {}, "qoslab", COMPLETE_VAR, instruction)
    args = sys.argv[1:] if argv is None else list(argv)
    # Not qoslab.main(standalone_mode=False): that turns Ctrl-C into click's
    # Abort after printing a blank line, and a broken pipe into exit 1.
    with qoslab.make_context("qoslab", args) as ctx:
        status = qoslab.invoke(ctx)
    return status if isinstance(status, int) else 0


def _usage(e: click.UsageError) -> str:
    """click's message, then where the help is: one line."""
    path = e.ctx.command_path if e.ctx is not None else "qoslab"
    return f"{e.format_message()} (see '{path} --help')"


#: Longest error line printed: a quoted value can be megabytes.
MAX_ERROR_CHARS = 600


def _truncated(text: str) -> str:
    if len(text) <= MAX_ERROR_CHARS:
        return text
    keep = MAX_ERROR_CHARS // 2
    return f"{text[:keep]}…[{len(text) - 2 * keep} characters]…{text[-keep:]}"


def _one_line(text: str) -> str:
    """``text`` with newlines and other control characters escaped (a value
    quoted from the user's file can hold them), so an error stays one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _fail(message: str) -> int:
    print(f"qoslab: error: {_truncated(_one_line(message))}", file=sys.stderr)
    return EXIT_USAGE


#: Exit status after the reader of stdout went away (``| head``): what a
#: shell reports for a process killed by SIGPIPE, 128 + 13.
EXIT_BROKEN_PIPE = 141


def _broken_pipe() -> int:
    """The reader of stdout closed it: stop quietly, as a Unix filter does.
    stdout is pointed at /dev/null so the interpreter's final flush does not
    complain again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the CLI; returns the exit status (0 ok, 2 bad input)."""
    try:
        return _run(argv)
    except click.exceptions.Exit as e:  # --help / --version
        return e.exit_code
    except click.UsageError as e:
        return _fail(_usage(e))
    except click.ClickException as e:  # none expected: qoslab reads its own files
        return _fail(e.format_message())
    except click.Abort:
        print("qoslab: cancelled", file=sys.stderr)
        return EXIT_INTERRUPTED
    except UsageError as e:
        return _fail(str(e))
    except ScenarioError as e:
        return _fail(str(e))
    except (Cancelled, KeyboardInterrupt):
        print("qoslab: cancelled", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return _broken_pipe()
    except MemoryError as e:  # qoslab.ResourceError: over --memory-limit, or out of memory
        return _fail(str(e) or "out of memory")
    except ConfigError as e:
        param = getattr(e, "param", None)
        message = getattr(e, "message", None)
        return _fail(f"{param}: {message}" if param and message else str(e))
    except OSError as e:
        where = e.filename if e.filename is not None else "qoslab"
        return _fail(f"{where}: {e.strerror or e}")
    except Exception as e:
        # The error classes of modules imported only by some commands: such
        # an error can only come from a module that is loaded.
        traceio, netns = sys.modules.get("qoslab.traceio"), sys.modules.get("qoslab.emulate.netns")
        if traceio is not None and isinstance(e, traceio.TraceFileError):
            return _fail(str(e))
        if netns is not None and isinstance(e, netns.EmulationSetupError):
            return _fail(f"emulate: {e}")
        raise
