"""Every ``qoslab`` command's --help ends with runnable examples, and the
quick ones run: exit status 0, and their ``--json`` output parses."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from qoslab.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parent.parent


def commands() -> list[str]:
    return sorted(COMMANDS)


def help_text(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main([*argv, "--help"]) == 0
    return capsys.readouterr().out


def examples(text: str) -> list[str]:
    """The commands of the last 'examples:' section (continuation lines joined)."""
    assert "\nexamples:\n" in text, text[-300:]
    block = text.rsplit("\nexamples:\n", 1)[1]
    joined = re.sub(r"\\\n\s*", "", block)
    return [ln.strip() for ln in joined.splitlines() if ln.strip().startswith("qoslab")]


def test_main_help_lists_every_command(capsys) -> None:
    text = help_text(capsys)
    for c in commands():
        assert f"\n  {c} " in text
    assert examples(text)


@pytest.mark.parametrize("command", commands())
def test_help_ends_with_examples_of_this_command(capsys, command: str) -> None:
    text = help_text(capsys, command)
    ex = examples(text)
    assert ex, text
    assert all(e.split()[1] == command for e in ex), ex
    last = [ln for ln in text.splitlines() if ln.strip()][-1]
    assert last.startswith("  "), f"--help must end with an example, ends with {last!r}"


def _quick(example: str) -> bool:
    """Everything but full-length reproductions (those take minutes)."""
    return " reproduce " not in f" {example} " or "--quick" in example


def _help(command: str) -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([command, "--help"] if command else ["--help"]) == 0
    return out.getvalue()


ALL_EXAMPLES = sorted({e for c in ["", *commands()] for e in examples(_help(c))})


@pytest.mark.parametrize("example", [e for e in ALL_EXAMPLES if _quick(e)])
def test_quick_example_runs(capsys, monkeypatch, tmp_path, example: str) -> None:
    # Run from a scratch directory that sees the repository's inputs, with
    # every /tmp/ output redirected into it.
    for d in ("scenarios", "examples"):
        (tmp_path / d).symlink_to(ROOT / d)
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    # As a shell reads it: a trailing "# ..." is a comment.
    words = shlex.split(example, comments=True)
    argv = [a.replace("/tmp/", f"{tmp_path}/out/") for a in words[1:]]
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 0, (example, err)  # reproduce: 1 only with --strict
    assert "Traceback" not in err
    if "--json" in argv:
        json.loads(out)
    for i, a in enumerate(argv[:-1]):
        if a in ("--output", "--report", "--out"):
            if argv[i + 1] == "-":  # stdout: the file is what was printed
                assert out.strip(), example
            else:
                assert Path(argv[i + 1]).exists(), (example, argv[i + 1])
