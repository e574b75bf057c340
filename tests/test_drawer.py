"""The figure processes of ``qoslab run --report`` (qoslab.cli._drawer): the
report they make is the report drawn in one process, byte for byte; the
process writing it never imports matplotlib; whatever fails on their side
is drawn again here (an error in a figure is raised as without them); a
run that fails leaves no process behind.

Each case runs in a fresh interpreter: the processes are forked only from a
process with no other thread, and this test process may have some."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from vizdata import ALL_SERIES, POLICE, ROOT, scenario

#: In a fresh interpreter: ``setup`` (may patch qoslab.plots), then the
#: report of SCENARIO into OUT; prints [status, matplotlib imported here,
#: figure processes used, children left].
PROBE = """
import json, os, sys
sys.argv = ["qoslab"]
{setup}
from qoslab.cli import _drawer, main
started = []
real_start = _drawer.Drawer.start.__func__
def start(cls):
    d = real_start(cls)
    started.append(d is not None)
    return d
_drawer.Drawer.start = classmethod(start)
try:
    rc = main(["run", {scenario!r}, "--report", {out!r}, "--quiet"])
except Exception as e:
    rc = type(e).__name__
try:
    os.waitpid(-1, os.WNOHANG)
    left = True
except ChildProcessError:
    left = False
print(json.dumps([rc, "matplotlib" in sys.modules, started, left]))
"""


def _run(tmp_path: Path, name: str, setup: str = "", env: dict[str, str] | None = None) -> list:
    import os

    scen = tmp_path / "s.toml"
    if not scen.exists():
        scen.write_text(scenario(POLICE, ALL_SERIES, "1s"))
    code = PROBE.format(setup=textwrap.dedent(setup), scenario=str(scen), out=str(tmp_path / name))
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def _figures(path: Path) -> list[tuple[str, str]]:
    html = path.read_text(encoding="utf-8")
    return re.findall(r'data-figure="([^"]+)"><img alt="[^"]*" src="([^"]+)"', html)


@pytest.fixture(scope="module")
def serial(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str]]:
    """The report's figures drawn without the figure processes (and without
    qoslab.plots.render's own forks): one process, the reference."""
    tmp = tmp_path_factory.mktemp("serial")
    setup = "from qoslab import plots\nplots.render_jobs = lambda: 1"
    rc, _, started, left = _run(tmp, "r.html", setup, {"QOSLAB_DRAWER": "0"})
    assert rc == 0 and started == [False] and not left
    figs = _figures(tmp / "r.html")
    assert [n for n, _ in figs] == [
        "io_graph",
        "time_sequence",
        "rtt",
        "cwnd",
        "queue",
        "colors",
        "ping",
        "rtt_cdf",
        "goodput_cdf",
    ]
    return figs


def test_figure_processes_draw_the_same_report_and_this_process_no_matplotlib(
    tmp_path: Path, serial: list[tuple[str, str]]
) -> None:
    rc, matplotlib_here, started, left = _run(tmp_path, "r.html")
    assert rc == 0 and started == [True] and not left
    assert not matplotlib_here  # every figure came from the figure processes
    assert _figures(tmp_path / "r.html") == serial  # same names, order and PNG bytes


def test_a_figure_failing_there_is_drawn_here(
    tmp_path: Path, serial: list[tuple[str, str]]
) -> None:
    """A figure raising in a figure process, and a process dying in the
    middle of a figure: the missing ones are drawn here, same bytes."""
    setup = """
        import os
        from qoslab import plots
        parent = os.getpid()
        real = dict(plots.FIGURES)
        def failing(name, how):
            def fn(results):
                if os.getpid() != parent:
                    if how == "raise":
                        raise RuntimeError("drawn badly")
                    os._exit(3)
                return real[name][1](results)
            return fn
        plots.FIGURES["rtt"] = (real["rtt"][0], failing("rtt", "raise"))
        plots.FIGURES["queue"] = (real["queue"][0], failing("queue", "die"))
    """
    rc, _, started, left = _run(tmp_path, "r.html", setup)
    assert rc == 0 and started == [True] and not left
    assert _figures(tmp_path / "r.html") == serial


def test_a_figure_failing_everywhere_raises_here(tmp_path: Path) -> None:
    setup = """
        from qoslab import plots
        def broken(results):
            raise RuntimeError("drawn badly")
        plots.FIGURES["cwnd"] = ("cwnd", broken)
    """
    rc, _, started, left = _run(tmp_path, "r.html", setup)
    assert rc == "RuntimeError" and started == [True] and not left
    assert not (tmp_path / "r.html").exists()


def test_a_failed_run_leaves_no_figure_process(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(scenario(POLICE).replace('duration = "2s"', 'duration = "2x"'))
    rc, matplotlib_here, started, left = _run(tmp_path, "r.html")
    assert rc == 2 and started == [True] and not left and not matplotlib_here
    assert not (tmp_path / "r.html").exists()


def test_dry_run_starts_no_figure_process(tmp_path: Path) -> None:
    scen = tmp_path / "s.toml"
    scen.write_text(scenario(POLICE))
    code = f"""
        import os
        from qoslab.cli import _drawer, main
        _drawer.Drawer.start = None  # a call fails the test
        assert main(["run", {str(scen)!r}, "--report", {str(tmp_path / "r.html")!r},
                     "--dry-run"]) == 0
    """
    p = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize(
    ("argv", "wanted"),
    [
        (["run", "x.toml", "--report", "r.html"], True),
        (["run", "x.toml", "--report=r.html", "--quiet"], True),
        (["run", "x.toml", "--out", "d", "--report"], True),
        (["run", "x.toml"], False),
        (["run", "x.toml", "--report", "r.html", "--dry-run"], False),
        (["run", "--help", "--report"], False),
        (["run", "x.toml", "--", "--report"], False),
        (["compare", "a.toml", "b.toml", "--report", "r.html"], False),
        ([], False),
    ],
)
def test_which_command_lines_start_the_figure_processes_early(
    argv: list[str], wanted: bool
) -> None:
    from qoslab.cli._drawer import wants_report

    assert wants_report(argv) is wanted
