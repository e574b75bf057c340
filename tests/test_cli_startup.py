"""Start-up of the ``qoslab`` command and package: ``--help`` imports no heavy
library (pandas, matplotlib, pyarrow), the lazily imported public API still
resolves, bare ``qoslab`` prints the help, and Ctrl-C during the imports a
command needs ends with ``qoslab: cancelled``, not a traceback.

Each check that looks at ``sys.modules`` runs in a fresh interpreter: this
test process has imported everything already."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from qoslab import cli

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pandas", "matplotlib", "pyarrow", "duckdb")


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def _loaded_after(code: str) -> list[str]:
    """The heavy modules loaded once ``code`` ran in a fresh interpreter."""
    probe = f"{textwrap.dedent(code)}\nimport json, sys\n"
    probe += f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    p = _python(probe)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_import_cli_loads_no_heavy_library() -> None:
    assert _loaded_after("import qoslab.cli") == []


def test_import_qoslab_loads_no_heavy_library() -> None:
    assert _loaded_after("import qoslab") == []


@pytest.mark.parametrize("command", ["", *cli.COMMANDS])
def test_help_loads_no_heavy_library(command: str) -> None:
    argv = [command, "--help"] if command else ["--help"]
    code = f"""
        import contextlib, io
        from qoslab.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            assert main({argv!r}) == 0
    """
    assert _loaded_after(code) == []


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["shape", "--help"]])
def test_the_timed_helps_load_no_numpy(argv: list[str]) -> None:
    """`qoslab --help` and `qoslab run --help` are what benchmarks/cli_startup.sh
    times (target 0.3 s): not even NumPy is imported for them."""
    code = f"""
        import contextlib, io, sys
        from qoslab.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            assert main({argv!r}) == 0
        print("numpy" in sys.modules)
    """
    p = _python(code)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False"


def test_every_public_name_resolves() -> None:
    # A fresh interpreter, so the names come through the lazy __getattr__.
    p = _python(
        """
        import qoslab
        missing = [n for n in qoslab.__all__ if getattr(qoslab, n, None) is None]
        assert not missing, missing
        assert set(qoslab.__all__) <= set(dir(qoslab))
        from qoslab import simulate, police, shape, describe, SimulationResult, color
        from qoslab.results import SimulationResult as S
        assert SimulationResult is S
        try:
            qoslab.no_such_name
        except AttributeError as e:
            assert "no_such_name" in str(e)
        else:
            raise AssertionError("qoslab.no_such_name resolved")
        print("ok")
        """
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "ok"


@pytest.mark.parametrize("command", list(cli.COMMANDS))
def test_each_command_loads_only_its_own_module(command: str) -> None:
    """`qoslab CMD --help` imports CMD's click module and no other command's
    (the lazy group), and the module's command carries the name it is listed by."""
    code = f"""
        import contextlib, io, sys
        from qoslab import cli
        with contextlib.redirect_stdout(io.StringIO()):
            assert cli.main([{command!r}, "--help"]) == 0
        mods = {{s.partition(":")[0] for s, _ in cli.COMMANDS.values()}}
        print(sorted(m for m in mods if m in sys.modules))
    """
    p = _python(code)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str([cli.COMMANDS[command][0].partition(":")[0]])
    assert cli.qoslab.get_command(None, command).name == command  # type: ignore[arg-type]


def test_bare_help_loads_no_command_module() -> None:
    code = """
        import contextlib, io, sys
        from qoslab.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["--help"]) == 0
        cmds = [m for m in sys.modules if m.startswith("qoslab.cli.")]
        print(sorted(m for m in cmds if m not in ("qoslab.cli._click", "qoslab.cli._app",
                                                   "qoslab.cli._drawer")))
    """
    p = _python(code)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


def test_help_lists_the_commands_in_table_order(capsys) -> None:
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    listed = [
        ln.split()[0]
        for ln in out.split("Commands:\n", 1)[1].split("\n\n")[0].splitlines()
        if ln.startswith("  ") and not ln.startswith("   ")
    ]
    assert listed == list(cli.COMMANDS)


def test_mirrored_constants_match_their_modules() -> None:
    """The click modules name a few values of modules too heavy to import for
    --help (choices, defaults shown in the help): they must stay equal."""
    from qoslab import run, table
    from qoslab.cli import emulate as cli_emulate
    from qoslab.cli import reproduce as cli_reproduce
    from qoslab.cli import run as cli_run
    from qoslab.cli import sweep as cli_sweep
    from qoslab.emulate.run import BACKENDS
    from qoslab.reproduce.registry import DEFAULT_SEEDS
    from qoslab.sweep.execute import EXECUTORS

    assert cli_run.FORMATS == run.FORMATS
    assert cli_run.SUMMARY_FLOWS == table.SUMMARY_FLOWS
    assert cli_emulate.BACKENDS == BACKENDS
    assert cli_sweep.EXECUTORS == EXECUTORS
    assert cli_reproduce.DEFAULT_SEEDS == DEFAULT_SEEDS


def test_bare_qoslab_prints_help_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Usage: qoslab")
    assert "COMMAND" in out and "Commands:" in out
    assert err == ""


def test_bare_qoslab_with_stray_option_is_a_usage_error(capsys) -> None:
    assert cli.main(["--nope"]) == 2
    assert "qoslab: error: " in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "first_heavy"),
    [
        # The table needs neither NumPy nor pandas: rich draws its summary tables.
        (["run", "scenarios/example.toml"], "rich"),
        # The table needs no pandas; writing --out's CSV/Parquet does.
        (["run", "scenarios/example.toml", "--out", "/tmp/qoslab-ctrl-c-never-written"], "pandas"),
        # `analyze --help` needs no NumPy any more: the analysis does.
        (["analyze", "/nonexistent/x.pcap"], "numpy"),
        # --report outside the checkout: a run that is not cancelled (a
        # failure) must not leave compare-report.html in the repository.
        (
            [
                "compare",
                "scenarios/example.toml",
                "scenarios/example.toml",
                "--report",
                "/tmp/qoslab-ctrl-c-never-written.html",
            ],
            "matplotlib",
        ),
    ],
)
def test_ctrl_c_during_imports_is_no_traceback(argv: list[str], first_heavy: str) -> None:
    """SIGINT is delivered exactly when the command first imports
    ``first_heavy`` (an import hook sends it), as a Ctrl-C during start-up
    would: the command must end with 'qoslab: cancelled' and status 130. A
    heavy import at module level of qoslab.cli (outside main's handler) would
    show a traceback instead."""
    p = _python(
        """
        import builtins, os, signal, sys
        target = sys.argv[1]
        real_import = builtins.__import__
        fired = []

        def hook(name, *args, **kwargs):
            if not fired and name.split(".")[0] == target:
                fired.append(name)
                os.kill(os.getpid(), signal.SIGINT)
            return real_import(name, *args, **kwargs)

        builtins.__import__ = hook
        from qoslab.cli import main
        rc = main(sys.argv[2:])
        print("fired" if fired else "not fired")
        sys.exit(rc)
        """,
        first_heavy,
        *argv,
    )
    assert "Traceback" not in p.stderr, p.stderr
    assert p.stdout.strip().endswith("fired"), (p.stdout, p.stderr)
    assert p.stdout.strip() != "not fired", f"{first_heavy} was never imported"
    assert p.stderr.strip() == "qoslab: cancelled", p.stderr
    assert p.returncode == 130


def _complete(words: str, cword: int) -> list[str]:
    """What the bash completion script asks the real entry point for."""
    exe = Path(sys.executable).with_name("qoslab")
    env = {**os.environ, "_QOSLAB_COMPLETE": "bash_complete", "COMP_WORDS": words}
    env["COMP_CWORD"] = str(cword)
    p = subprocess.run([exe], env=env, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


def test_shell_completion_of_commands_options_and_files() -> None:
    assert _complete("qoslab ru", 1) == ["plain,run"]
    assert "plain,--memory-limit" in _complete("qoslab run x.toml --mem", 3)
    assert _complete("qoslab run scen", 2) == ["file,scen"]  # bash completes the file names
    exe = Path(sys.executable).with_name("qoslab")
    env = {**os.environ, "_QOSLAB_COMPLETE": "bash_source"}
    script = subprocess.run([exe], env=env, capture_output=True, text=True, timeout=60)
    assert script.returncode == 0 and "complete -o nosort -F _qoslab_completion qoslab" in (
        script.stdout
    ), script.stdout[-300:]
