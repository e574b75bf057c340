"""``qoslab run`` without figures imports no NumPy (issue 14: NumPy's import
was a third of a short run), and what it writes is what the NumPy path
writes, byte for byte.

The run asks the engine for ``_core.Column`` series columns
(``simulate_toml(numpy=False)``) and prints its table from their plain
values; the API, ``--out`` and the report convert them to NumPy arrays on
first use. Each check compares those outputs with the ones built from the
engine's NumPy columns (``numpy=True``, what every output was built from
before): the table, results.json, CSV and Parquet, ``--json`` and
``--format iperf3``.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import qoslab
from qoslab import _core
from qoslab.cli import main
from qoslab.iperf3json import iperf3_json
from qoslab.results import SimulationResult, write_results
from qoslab.table import render

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"
#: Every series the engine records (qoslab_scenario::SERIES), so each column
#: type (u8, u32, u64, i64, bool) goes through both paths.
ALL_SERIES = '["goodput", "rtt", "cwnd", "queue", "tokens", "colors", "ping", "segments"]'


def _every_series(name: str) -> str:
    text = (SCENARIOS / name).read_text(encoding="utf-8")
    head, sep, _ = text.partition("series = [")
    assert sep, f"{name} has no [record] series list"
    rest = text.split("series = [", 1)[1].split("]", 1)[1]
    return f"{head}series = {ALL_SERIES}{rest}"


#: (text, filename) of the runs compared: a multi-flow policer with every
#: series, a bidirectional fetch (the [Role] table) and a policy tree.
CASES = {
    "example-all-series": (_every_series("example.toml"), "example.toml"),
    "fetch-policed": ((SCENARIOS / "fetch-policed.toml").read_text(), "fetch-policed.toml"),
    "isr4000-police": ((SCENARIOS / "isr4000-police.toml").read_text(), "isr4000-police.toml"),
    "linux-htb-bfifo": (
        (SCENARIOS / "trees" / "linux-htb-bfifo.toml").read_text(),
        "trees/linux-htb-bfifo.toml",
    ),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def pair(request: pytest.FixtureRequest) -> tuple[dict[str, Any], dict[str, Any]]:
    """The same run's raw result with Column and with NumPy columns."""
    text, filename = CASES[request.param]
    cols = _core.simulate_toml(text, filename, None, None, numpy=False)
    arrays = _core.simulate_toml(text, filename, None, None, numpy=True)
    return cols, arrays


def test_columns_convert_to_the_numpy_arrays(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
    cols, arrays = pair
    assert cols["series"].keys() == arrays["series"].keys()
    seen = set()
    for name, table in arrays["series"].items():
        assert list(cols["series"][name]) == list(table), name  # same columns, same order
        for k, a in table.items():
            c = cols["series"][name][k]
            assert isinstance(c, _core.Column), (name, k)
            assert len(c) == len(a) and c.dtype == a.dtype.name, (name, k)
            assert c.tolist() == a.tolist() and list(c) == a.tolist(), (name, k)
            got = np.asarray(c)
            # dtype.char too: pyarrow and pandas see the very same dtype
            assert (got.dtype, got.dtype.char) == (a.dtype, a.dtype.char), (name, k)
            assert got.flags.writeable and got.flags.c_contiguous
            np.testing.assert_array_equal(got, a)
            seen.add(a.dtype.name)
    # every element type the engine returns was exercised
    if len(next(iter(arrays["series"]["segments"].values()))):
        assert {"bool", "uint8", "uint32", "uint64", "int64"} <= seen


def test_column_protocol() -> None:
    text, filename = CASES["example-all-series"]
    c = _core.simulate_toml(text, filename, None, None, numpy=False)["series"]["goodput"]["bytes"]
    assert repr(c) == f"Column(dtype=uint64, len={len(c)})"
    np.testing.assert_array_equal(np.asarray(c, dtype=np.float64), np.asarray(c).astype(float))
    with pytest.raises(ValueError, match="without a copy"):
        np.asarray(c, copy=False)


def test_table_is_the_same(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
    cols, arrays = pair
    for kw in ({}, {"per_flow": True}, {"per_flow": False}, {"width": 60}):
        assert render(SimulationResult(cols), **kw) == render(SimulationResult(arrays), **kw), kw


def test_raw_and_api_are_numpy(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """For the Python API nothing changed: ``raw`` and the arrays are NumPy."""
    cols, arrays = pair
    r = SimulationResult(cols)
    for name in arrays["series"]:
        assert r.rows(name) == len(next(iter(arrays["series"][name].values()), []))
        for k, a in r.raw["series"][name].items():
            assert isinstance(a, np.ndarray) and a.dtype == arrays["series"][name][k].dtype
        assert r.arrays(name).keys() == SimulationResult(arrays).arrays(name).keys()
    assert r.summary == SimulationResult(arrays).summary
    back = pickle.loads(pickle.dumps(r))  # Columns do not pickle: the result does
    np.testing.assert_array_equal(back.raw["series"]["goodput"]["bytes"], r.goodput["bytes"])


def test_iperf3_json_is_the_same(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
    cols, arrays = pair
    a, b = iperf3_json(SimulationResult(cols)), iperf3_json(SimulationResult(arrays))
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_out_files_are_byte_identical(
    pair: tuple[dict[str, Any], dict[str, Any]], tmp_path: Path
) -> None:
    """results.json, every CSV and Parquet file: the same bytes."""
    cols, arrays = pair
    write_results(tmp_path / "cols", SimulationResult(cols), "x = 1\n")
    write_results(tmp_path / "arrays", SimulationResult(arrays), "x = 1\n")
    a = sorted(p.name for p in (tmp_path / "cols").iterdir())
    assert a == sorted(p.name for p in (tmp_path / "arrays").iterdir())
    assert "results.json" in a and any(n.endswith(".parquet") for n in a)
    for n in a:
        assert (tmp_path / "cols" / n).read_bytes() == (tmp_path / "arrays" / n).read_bytes(), n


def test_cli_output_is_the_numpy_paths(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """What ``qoslab run`` prints and writes, against the outputs built from
    the engine's NumPy columns (the way every output was built before)."""
    path = SCENARIOS / "isr4000-police.toml"
    text = path.read_text(encoding="utf-8")
    ref = SimulationResult(_core.simulate_toml(text, str(path), None, None, numpy=True))
    assert main(["run", str(path)]) == 0
    assert capsys.readouterr().out == render(ref) + "\n"
    assert main(["run", str(path), "--json"]) == 0
    assert capsys.readouterr().out == ref.to_json() + "\n"
    assert main(["run", str(path), "--format", "iperf3"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(ref.to_iperf3()))
    assert main(["run", str(path), "--out", str(tmp_path / "cli"), "--quiet"]) == 0
    write_results(tmp_path / "ref", ref, text)
    for p in sorted((tmp_path / "ref").iterdir()):
        assert (tmp_path / "cli" / p.name).read_bytes() == p.read_bytes(), p.name
    # qoslab.simulate: Columns inside, NumPy arrays as ever outside
    r = qoslab.simulate(path)
    assert isinstance(r.raw["series"]["goodput"]["bytes"], np.ndarray)
    assert r.to_json() == ref.to_json()


def _modules_after_run(*argv: str) -> dict[str, bool]:
    """Runs ``qoslab *argv`` in a fresh interpreter: whether NumPy and pandas
    were imported by the end (and that it succeeded)."""
    code = f"""
        import contextlib, io, json, sys
        from qoslab.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            rc = main({list(argv)!r})
        print(json.dumps({{"rc": rc, "numpy": "numpy" in sys.modules,
                          "pandas": "pandas" in sys.modules}}))
    """
    p = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr
    out: dict[str, bool] = json.loads(p.stdout.strip().splitlines()[-1])
    assert out.pop("rc") == 0, p.stderr
    return out


@pytest.mark.parametrize(
    "extra",
    [[], ["--json"], ["--summary"], ["--per-flow"], ["--quiet"], ["--dry-run"]],
    ids=["table", "json", "summary", "per-flow", "quiet", "dry-run"],
)
def test_run_without_figures_imports_no_numpy(extra: list[str]) -> None:
    """The benchmarked command (benchmarks/cli_startup.sh) and its text
    outputs: no NumPy in ``sys.modules`` at the end."""
    assert _modules_after_run("run", "scenarios/isr4000-police.toml", *extra) == {
        "numpy": False,
        "pandas": False,
    }


def test_outputs_that_need_numpy_still_get_it(tmp_path: Path) -> None:
    """The probe can see NumPy: ``--out`` (CSV/Parquet through pandas) imports it."""
    out = str(tmp_path / "o")
    got = _modules_after_run("run", "scenarios/example.toml", "--out", out, "--quiet")
    assert got == {"numpy": True, "pandas": True}
    assert (tmp_path / "o" / "goodput.parquet").exists()
