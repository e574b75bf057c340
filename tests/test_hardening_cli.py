"""Issue 15, tracebacks and misleading messages: a broken pipe exits
quietly, an error line never repeats a huge value, a parameter the kind
knows is never suggested as a typo, host counts are stated truly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from qoslab.cli import MAX_ERROR_CHARS, main

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "examples" / "trace.csv"
EXAMPLE = ROOT / "scenarios" / "example.toml"


def cli(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_a_broken_pipe_exits_quietly() -> None:
    cmd = (
        f"{sys.executable} -m qoslab.cli shape tbf --rate 1mbit --burst 3000B --limit 30000B "
        f"--input {TRACE} --output /dev/stdout | head -1"
    )
    p = subprocess.run(
        ["bash", "-c", f"{cmd}; echo rc=${{PIPESTATUS[0]}} >&2"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert p.stdout.startswith("time_ns,size_bytes")
    assert p.stderr.strip() == "rc=141", p.stderr  # no traceback, no error line


def test_an_error_line_does_not_repeat_a_huge_value(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    t = tmp_path / "big.csv"
    t.write_text("time_ns,size_bytes\n1," + "9" * 10_000_000 + "\n")
    rc, _, err = cli(capsys, "shape", "tbf", "--rate", "1mbit", "--burst", "3000B",
                     "--limit", "30000B", "--input", t)  # fmt: skip
    assert rc == 2 and err.count("\n") == 1
    assert len(err) < MAX_ERROR_CHARS + 100


def test_a_huge_value_in_a_parameter_is_truncated(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = cli(capsys, "meter", "srtcm", "--cir", "x" * 1_000_000, "--cbs", "3000B",
                     "--ebs", "6000B", "--input", TRACE)  # fmt: skip
    assert rc == 2 and len(err) < MAX_ERROR_CHARS + 100 and "characters]" in err


def test_a_known_parameter_is_not_called_a_typo(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = cli(capsys, "meter", "mef", "--cir", "1mbit", "--cbs", "3000B", "--input", TRACE)
    assert rc == 2 and "mef needs eir" in err and "typo" not in err
    # A real misspelling still gets the hint.
    rc, _, err = cli(capsys, "meter", "mef", "--cirr", "1mbit", "--cbs", "3000B", "--input", TRACE)
    assert rc == 2 and "you gave 'cirr'" in err


def test_too_many_hosts_says_so_truly(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    s = tmp_path / "big.toml"
    text = EXAMPLE.read_text()
    assert "senders = " in text
    import re

    s.write_text(re.sub(r"senders = \d+", "senders = 99998", text, count=1))
    rc, _, err = cli(capsys, "run", s)
    assert rc == 2
    assert "99998 hosts is more than the 100000" not in err
    assert "at most" in err or "nodes, more than" in err


@pytest.mark.parametrize(
    ("call", "exc"),
    [
        ("police_none_colour", "TraceError"),
        ("describe_none", "ConfigError"),
        ("simulate_empty", "ScenarioError"),
        ("simulate_missing", "ScenarioError"),
    ],
)
def test_api_errors_are_qoslab_exceptions(call: str, exc: str) -> None:
    import qoslab

    calls = {
        "police_none_colour": lambda: qoslab.police(
            "srtcm", [0, 1], [100, 100], colors=["green", None],
            cir="1mbit", cbs="3000B", ebs="6000B",
        ),
        "describe_none": lambda: qoslab.describe(None),  # type: ignore[arg-type]
        "simulate_empty": lambda: qoslab.simulate(""),
        "simulate_missing": lambda: qoslab.simulate("/nonexistent/x.toml"),
    }  # fmt: skip
    with pytest.raises(getattr(qoslab, exc)):
        calls[call]()
