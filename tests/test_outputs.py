"""Issue 15, data loss: an output never replaces or deletes anything the user
did not name as that output; an output that is an input is refused up front;
every output path is checked before the run (qoslab.outputs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from qoslab import outputs
from qoslab.cli import main
from qoslab.results import SimulationResult, write_results

sys.path.insert(0, str(Path(__file__).parent))
from test_run import fake_raw

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "scenarios" / "example.toml"
TRACE = ROOT / "examples" / "trace.csv"
TBF = ["--rate", "1mbit", "--burst", "3000B", "--limit", "30000B"]


def cli(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def short_scenario(tmp_path: Path) -> Path:
    s = tmp_path / "s.toml"
    s.write_text(EXAMPLE.read_text())
    return s


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_a_rerun_keeps_the_users_other_files(tmp_path: Path) -> None:
    r = SimulationResult(fake_raw())
    out = write_results(tmp_path / "res", r, "one\n")
    (out / "notes.txt").write_text("mine")
    (out / "plots").mkdir()
    write_results(out, r, "two\n")
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "plots").is_dir()
    assert (out / "scenario.toml").read_text() == "two\n"


def test_a_rerun_deletes_only_its_own_stale_files(tmp_path: Path) -> None:
    r = SimulationResult(fake_raw())
    out = write_results(tmp_path / "res", r, "", extra_tables={"acks": r.goodput})
    assert (out / "acks.csv").exists()
    (out / "acks.txt").write_text("mine")
    write_results(out, r, "")
    assert not (out / "acks.csv").exists() and not (out / "acks.parquet").exists()
    assert (out / "acks.txt").read_text() == "mine"
    assert "acks.csv" not in (out / outputs.MARKER).read_text()


def test_an_output_of_an_older_qoslab_is_still_ours(tmp_path: Path) -> None:
    out = tmp_path / "res"
    out.mkdir()
    for n in ("results.json", "scenario.toml", "rtt.csv", "notes.md"):
        (out / n).write_text("old")
    write_results(out, SimulationResult(fake_raw()), "new")
    assert (out / "notes.md").read_text() == "old"
    assert not (out / "rtt.csv").exists()  # an old series this run did not record


def test_what_a_killed_run_left_is_cleaned_by_the_next(tmp_path: Path) -> None:
    r = SimulationResult(fake_raw())
    pid = dead_pid()
    # SIGKILL while building a new --out: a temporary directory beside it.
    litter = tmp_path / f".res{outputs.TMP_TAG}{pid}-0123abcd"
    litter.mkdir()
    (litter / "results.json").write_text("{")
    out = write_results(tmp_path / "res", r, "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]
    # SIGKILL while replacing files in an existing --out.
    (out / f".results.json{outputs.TMP_TAG}{pid}-0123abcd").write_text("{")
    write_results(out, r, "")
    assert not [p for p in out.iterdir() if outputs.TMP_TAG in p.name]


def test_a_running_writers_temporaries_are_left_alone(tmp_path: Path) -> None:
    live = tmp_path / f".x.csv{outputs.TMP_TAG}{os.getppid()}-0123abcd"
    live.write_text("")
    with outputs.replacing(tmp_path / "x.csv") as f:
        f.write("a\n")
    assert live.exists()


def test_a_real_sigkill_leaves_nothing_a_rerun_keeps(tmp_path: Path) -> None:
    """A writer killed with SIGKILL in the middle of writing, then a rerun."""
    code = (
        "import os, signal\n"
        "from qoslab import outputs\n"
        "def w(f):\n"
        "    f.write('x' * 1000); f.flush()\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        f"outputs.write_dir({str(tmp_path / 'res')!r}, {{'results.json': (w, False)}})\n"
    )
    p = subprocess.run([sys.executable, "-c", code], check=False, timeout=60)
    assert p.returncode == -9
    assert any(outputs.TMP_TAG in n.name for n in tmp_path.iterdir())  # the litter
    write_results(tmp_path / "res", SimulationResult(fake_raw()), "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]


def test_report_equal_to_the_scenario_is_refused_before_the_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    s = short_scenario(tmp_path)
    before = s.read_text()
    rc, out, err = cli(capsys, "run", s, "--report", s)
    assert rc == 2 and out == ""
    assert err.startswith(f"qoslab: error: {s}: --report: is the input") and "\n" not in err[:-1]
    assert s.read_text() == before
    link = tmp_path / "link.html"
    link.symlink_to(s)  # the same file by another name
    rc, _, err = cli(capsys, "run", s, "--report", link)
    assert rc == 2 and "is the input" in err
    assert s.read_text() == before


def test_out_holding_the_scenario_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    s = short_scenario(tmp_path)
    rc, _, _ = cli(capsys, "run", s, "--out", tmp_path / "o", "--quiet")
    assert rc == 0
    rc, _, err = cli(capsys, "run", tmp_path / "o" / "scenario.toml", "--out", tmp_path / "o")
    assert rc == 2 and "holds the input" in err


@pytest.mark.parametrize("cmd", ["meter", "shape"])
def test_output_equal_to_the_input_trace_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, cmd: str
) -> None:
    t = tmp_path / "t.csv"
    t.write_bytes(TRACE.read_bytes())
    params = ["srtcm", "--cir", "1mbit", "--cbs", "3000B", "--ebs", "6000B"]
    argv = params if cmd == "meter" else ["tbf", *TBF]
    rc, _, err = cli(capsys, cmd, *argv, "--input", t, "--output", t)
    assert rc == 2 and "--output: is the input" in err
    assert t.read_bytes() == TRACE.read_bytes()


def test_a_symlinked_output_is_written_through(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "shaped.csv"
    target.write_text("old\n")
    link = tmp_path / "shaped.csv"
    link.symlink_to(target)
    rc, _, _ = cli(capsys, "shape", "tbf", *TBF, "--input", TRACE, "--output", link)
    assert rc == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text().startswith("time_ns,size_bytes")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["real", "shaped.csv"]
    assert [p.name for p in (tmp_path / "real").iterdir()] == ["shaped.csv"]


def test_empty_output_is_refused_not_ignored(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = cli(capsys, "shape", "tbf", *TBF, "--input", TRACE, "--output", "")
    assert rc == 2 and "--output: an empty path" in err
    rc, _, err = cli(capsys, "run", EXAMPLE, "--out", "")
    assert rc == 2 and "--out: an empty path" in err


@pytest.mark.parametrize(
    ("flag", "make", "fragment"),
    [
        ("--out", lambda d: d / "f" / "sub", "is not a directory"),
        ("--report", lambda d: d / "f" / "r.html", "is not a directory"),
        ("--report", lambda d: d / "none" / "r.html", "does not exist"),
    ],
)
def test_bad_output_paths_fail_before_the_run_naming_the_path(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    flag: str,
    make: object,
    fragment: str,
) -> None:
    (tmp_path / "f").write_text("a file")
    path = make(tmp_path)  # type: ignore[operator]
    import qoslab._core

    def no_run(*_a: object, **_k: object) -> None:
        raise AssertionError("ran before checking the outputs")

    monkeypatch.setattr(qoslab._core, "simulate_toml", no_run)
    rc, _, err = cli(capsys, "run", EXAMPLE, flag, path)
    assert rc == 2
    assert f"{path}: {flag}: " in err and fragment in err


def test_markdown_and_figures_are_one_unit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    md = tmp_path / "doc.md"
    files = {tmp_path / "fig.png": (lambda f: f.write(b"new"), True)}
    (tmp_path / "fig.png").write_bytes(b"old")
    md.write_text("old\n")

    def bad(f: object) -> None:
        raise OSError(28, "No space left on device")

    files[md] = (bad, False)
    with pytest.raises(OSError, match="No space"):
        outputs.commit(files, order_last=md)
    assert (tmp_path / "fig.png").read_bytes() == b"old"  # not a new figure by old text
    assert md.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.md", "fig.png"]


def test_a_non_utf8_out_name_is_written(tmp_path: Path) -> None:
    name = os.fsdecode(b"res-\xff")
    out = write_results(tmp_path / name, SimulationResult(fake_raw()), "")
    assert (out / "goodput.parquet").exists()
