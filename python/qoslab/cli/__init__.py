"""The ``qoslab`` command line, on click.

Each command is a click command in a module of this package (``run.py``,
``analyze.py``, ...): its options, help and examples, and a callback that
imports the module doing the work (``qoslab.run``, ``qoslab.analyze``, ...)
only when the command runs. The group (in ``_app.py``) loads a command's module only
when that command is named (:class:`LazyGroup`, click's documented pattern),
and lists the commands from :data:`COMMANDS` without loading any, so
``qoslab --help`` and ``qoslab CMD --help`` stay fast.

``qoslab meter KIND`` and ``qoslab shape KIND`` run a trace CSV through any
kind of the registry (qoslab-policy): meters; shapers; AQMs, queues and
schedulers behind a link of ``--rate``; ``qoslab shape tree --policy`` a
whole policy tree. Options the command does not know (``--cir 20mbit``)
become conditioner parameters, as does ``--param cir=20mbit``.

Errors in the user's input print one line, ``qoslab: error: <file>:<line>:
<message>`` or ``qoslab: error: <param>: <message>`` (a bad command line:
``qoslab: error: <what> (see 'qoslab CMD --help')``), and exit with status
2; Ctrl-C prints ``qoslab: cancelled`` and exits with 130; a closed stdout
(``| head``) ends quietly. Anything else is a bug and keeps its traceback.
Shell completion is click's: ``eval "$(_QOSLAB_COMPLETE=bash_source qoslab)"``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

# This module imports nothing heavy, not even click: `qoslab run ... --report`
# starts its figure processes (qoslab.cli._drawer) before anything else is
# imported, so their import of matplotlib overlaps with click's, NumPy's and
# the run. The command line itself is qoslab.cli._app; its names are
# resolved here on first use (PEP 562).
if TYPE_CHECKING:
    from qoslab.cli._app import (
        COMMANDS,
        EXIT_INTERRUPTED,
        EXIT_USAGE,
        UsageError,
        qoslab,
    )

__all__ = ["COMMANDS", "EXIT_INTERRUPTED", "EXIT_USAGE", "UsageError", "main", "qoslab"]


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the CLI; returns the exit status (0 ok, 2 bad input, 130 Ctrl-C)."""
    from qoslab.cli import _drawer

    try:
        _drawer.start_early(sys.argv[1:] if argv is None else list(argv))
        from qoslab.cli import _app

        return _app.main(argv)
    except KeyboardInterrupt:  # during click's import; _app.main handles the rest
        print("qoslab: cancelled", file=sys.stderr)
        return 130
    finally:
        _drawer.discard_early()


def __getattr__(name: str) -> Any:
    # Private names are this package's submodules, which the import system
    # looks up here before it imports them: not the app's.
    if not name.startswith("_"):
        import importlib

        app = importlib.import_module("qoslab.cli._app")
        if hasattr(app, name):
            return getattr(app, name)
    raise AttributeError(f"module 'qoslab.cli' has no attribute '{name}'")
