"""`pip install .` (not editable) into a fresh virtualenv, then `qoslab
reproduce --all` from a directory that is not a checkout: the reference
data and the scenarios must come with the package."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=900, **kw)  # type: ignore[call-overload]


def _fresh_venv(tmp: Path) -> Path:
    """A venv holding the wheel built from this checkout. Its third-party
    dependencies (numpy, pandas, ...) are borrowed from the test's own
    environment by a .pth line, so no network is needed; qoslab itself is
    only the wheel's copy."""
    wheels = tmp / "wheels"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
        ],
        cwd=ROOT,
    )
    (wheel,) = wheels.glob("qoslab-*.whl")
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    py = venv / "bin" / "python"
    site = Path(
        _run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]
        ).stdout.strip()
    )
    _run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", str(wheel)]
    )
    (site / "zz-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return venv


@pytest.mark.slow
def test_reproduce_runs_after_a_plain_install_from_any_directory(tmp_path):
    venv = _fresh_venv(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "QOSLAB_ROOT", "VIRTUAL_ENV")
    }
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    where = _run(
        [str(venv / "bin" / "python"), "-c", "import qoslab; print(qoslab.__file__)"],
        cwd=elsewhere,
        env=env,
    )
    assert where.stdout.startswith(str(venv)), where.stdout  # the installed copy, not the checkout
    out = _run(
        [str(venv / "bin" / "qoslab"), "reproduce", "--all", "--quick", "--seeds", "1", "--json"],
        cwd=elsewhere,
        env=env,
    )
    rows = json.loads(out.stdout)
    assert {r["experiment"] for r in rows} == {"packetlife", "isr4000", "rfc2963", "linux"}
    assert all(r["kind"] in ("number", "claim", "sanity") for r in rows)
    assert all(r["verdict"] in ("holds", "off", "fails") for r in rows)
    assert list(elsewhere.iterdir()) == []  # nothing written where it ran
