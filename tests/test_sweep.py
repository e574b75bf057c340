"""`qoslab sweep`: axes and their errors, point validation, the store (resume,
dedup), local threads/processes vs a Dask LocalCluster, DuckDB queries, figures."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from qoslab.cli import main
from qoslab.sweep import command as sweep_cmd
from qoslab.sweep.query import query
from qoslab.sweep.resolve import parse_key, resolve
from qoslab.sweep.spec import SweepSpec, SweepSpecError, parse_grid, parse_seeds, read_sweep_file

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "scenarios" / "example.toml"
BC = "policy.bottleneck.egress.police.bc"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


# --- axes ------------------------------------------------------------------------


def test_list_values_are_typed_and_units_recognised() -> None:
    (a,) = parse_grid(["traffic[0].flows=1,2,4"])
    assert a.values == [1, 2, 4] and a.unit is None
    (b,) = parse_grid([f"{BC}=10kb,32kb"])
    assert b.values == ["10kb", "32kb"] and b.unit == "size"
    assert b.column == f"{BC}_bytes" and b.base("32kb") == 32 * 1024
    (c,) = parse_grid(["traffic[0].cc=cubic,reno"])
    assert c.values == ["cubic", "reno"] and c.unit is None
    (d,) = parse_grid(["topology.timer=hz:250,hz:100"])  # a colon is not a range
    assert d.values == ["hz:250", "hz:100"]


def test_ranges_keep_units_and_scale() -> None:
    (a,) = parse_grid([f"{BC}=10kb:1mb:5:log"])
    assert a.unit == "size"
    got = [a.base(v) for v in a.values]
    assert got[0] == 10240 and got[-1] == 1048576 and len(got) == 5
    ratios = [got[i + 1] / got[i] for i in range(4)]
    assert max(ratios) / min(ratios) < 1.001  # geometric
    (t,) = parse_grid(["topology.bottleneck.delay=10ms:50ms:5"])
    assert t.unit == "time" and [t.base(v) for v in t.values] == [
        10e6,
        20e6,
        30e6,
        40e6,
        50e6,
    ]
    (r,) = parse_grid(["x=1mbit:4mbit:4"])
    assert r.unit == "rate" and r.values == ["1000000bit", "2000000bit", "3000000bit", "4000000bit"]
    (n,) = parse_grid(["traffic[0].flows=1:8:8"])
    assert n.values == list(range(1, 9))
    (f,) = parse_grid(["x=0.5:1.5:3"])
    assert f.values == [0.5, 1.0, 1.5]


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("nokey", "expected KEY=V1,V2"),
        ("=1,2", "the key is empty"),
        (f"{BC}=10kb:1mbit:3", "same kind of unit"),
        (f"{BC}=0:100:3:log", "log range needs start and stop > 0"),
        (f"{BC}=1:10:3:cubic", "'log' or 'lin'"),
        (f"{BC}=1:10:0", "steps must be a whole number >= 1"),
        (f"{BC}=abc:def:3", "a range needs numbers or values with units"),
        (f"{BC}=1,,2", "an empty value"),
    ],
)
def test_bad_axes_say_what_is_wrong(item: str, message: str) -> None:
    with pytest.raises(SweepSpecError, match=message) as e:
        parse_grid([item])
    assert str(e.value).startswith(f"--grid {item}")


def test_a_key_swept_twice_and_bad_seeds() -> None:
    with pytest.raises(SweepSpecError, match="swept twice"):
        parse_grid(["a.b=1,2", "a.b=3"])
    assert parse_seeds("3") == [1, 2, 3]
    assert parse_seeds("5,9") == [5, 9]
    for bad in ("0", "x", "1,1", "-1,2"):
        with pytest.raises(SweepSpecError, match="--seeds"):
            parse_seeds(bad)


def test_key_paths() -> None:
    assert parse_key("traffic[0].cc") == ["traffic", 0, "cc"]
    assert parse_key(BC) == ["policy", "bottleneck", "egress", "police", "bc"]
    with pytest.raises(SweepSpecError, match="is not a key name"):
        parse_key("traffic[x].cc")


def test_latin_hypercube_covers_every_stratum_and_is_seeded() -> None:
    axes = parse_grid([f"{BC}=10kb:1mb:2:log", "topology.bottleneck.delay=1ms:9ms:2"])
    spec = SweepSpec(axes, random=8, random_seed=3)
    pts = spec.points()
    assert len(pts) == 8 and pts == SweepSpec(axes, random=8, random_seed=3).points()
    assert pts != SweepSpec(axes, random=8, random_seed=4).points()
    import math

    for a in axes:
        xs = [a.base(p[a.key]) for p in pts]
        f = math.log if a.log else float
        lo, hi = f(a.lo), f(a.hi)  # type: ignore[arg-type]
        strata = sorted(int((f(x) - lo) / (hi - lo) * 8 - 1e-9) for x in xs)
        assert strata == list(range(8)), (a.key, xs)


# --- points against the scenario ----------------------------------------------------------


def test_every_point_is_a_full_validated_scenario() -> None:
    spec = SweepSpec(parse_grid([f"{BC}=10kb,20kb", "traffic[0].flows=1,3"]), seeds=[1, 2])
    runs = resolve(EXAMPLE, spec)
    assert len(runs) == 8 and len({r.hash for r in runs}) == 8
    r = next(r for r in runs if r.point == {BC: "20kb", "traffic[0].flows": 3})
    assert 'bc = "20kb"' in r.text and "flows = 3" in r.text
    # Deterministic keys, independent of the order the axes were given.
    again = resolve(
        EXAMPLE, SweepSpec(parse_grid(["traffic[0].flows=1,3", f"{BC}=10kb,20kb"]), [1, 2])
    )
    assert {x.hash for x in again} == {x.hash for x in runs}


def test_a_missing_table_and_a_bad_value_are_located(capsys, tmp_path) -> None:
    rc, _, err = run_cli(
        capsys,
        "sweep",
        str(EXAMPLE),
        "--grid",
        "policy.bottleneck.egress.polce.bc=1kb",
        "--out",
        str(tmp_path / "o"),
    )
    assert rc == 2 and err.count("\n") == 1
    assert "no 'policy.bottleneck.egress.polce' (there: police)" in err
    rc, _, err = run_cli(
        capsys,
        "sweep",
        str(EXAMPLE),
        "--grid",
        f"{BC}=10kb,12parsecs,zz",
        "--out",
        str(tmp_path / "o"),
    )
    assert rc == 2 and err.count("\n") == 1
    # the line of the user's file where the key is, and the point
    line = 1 + EXAMPLE.read_text().splitlines().index('police = { cir = "10mbit" }')
    assert f"2 points invalid, the first ({BC}=12parsecs): {EXAMPLE}:{line}:" in err
    assert "expected a size" in err
    assert not (tmp_path / "o").exists()  # nothing ran


def test_sweep_file(tmp_path) -> None:
    f = tmp_path / "s.toml"
    f.write_text(
        f'[sweep]\nscenario = "{EXAMPLE}"\nseeds = [1, 7]\n'
        f'[sweep.grid]\n"{BC}" = "8kb:64kb:4:log"\n"traffic[0].flows" = [1, 2]\n'
    )
    scenario, spec, _ = read_sweep_file(f)
    assert scenario == EXAMPLE and spec.seeds == [1, 7] and len(spec.points()) == 8
    f.write_text('[sweep]\nscenario = "x.toml"\nsede = 1\n')
    with pytest.raises(SweepSpecError, match=r"s.toml:3: sweep.sede: unknown key"):
        read_sweep_file(f)


# --- running, the store, resume, dedup ------------------------------------------------------


def sweep(capsys, out: Path, *extra: str, grid: tuple[str, ...] = ()) -> dict:
    g = grid or (f"{BC}=8kb:256kb:4:log", "traffic[0].flows=1,2")
    argv = ["sweep", str(EXAMPLE), *[x for k in g for x in ("--grid", k)], "--out", str(out)]
    rc, o, err = run_cli(capsys, *argv, "--json", *extra)
    assert rc == 0, err
    return json.loads(o)


def test_rows_columns_and_query(capsys, tmp_path) -> None:
    s = sweep(capsys, tmp_path / "o", "--seeds", "2", "--executor", "threads")
    assert s["runs"] == 16 and s["ran"] == 16 and s["failed"] == 0
    df = query(tmp_path / "o", "SELECT * FROM points")
    assert len(df) == 16 and df["hash"].is_unique
    for col in (
        BC,
        f"{BC}_bytes",
        "traffic[0].flows",
        "seed",
        "sum_goodput_bps",
        "jain_fairness",
        "rtt_p95_ms_max",
        "loss_fraction",
        "policy_packets_dropped",
    ):
        assert col in df.columns, col
    flows = query(tmp_path / "o", "SELECT * FROM flows")
    assert len(flows) == int(df["n_flows"].sum())
    # The swept Bc reached the policer: 8 kB lets through less than 256 kB does.
    by_bc = df.groupby(f"{BC}_bytes")["sum_goodput_bps"].mean()
    assert by_bc.iloc[0] < by_bc.iloc[-1]
    rc, out, _ = run_cli(
        capsys,
        "sweep",
        str(tmp_path / "o"),
        "--query",
        'SELECT "traffic[0].flows" AS f, count(*) AS n FROM points GROUP BY 1 ORDER BY 1',
    )
    assert rc == 0 and out.splitlines() == ["f,n", "1,8", "2,8"]
    rc, out, _ = run_cli(
        capsys,
        "sweep",
        str(tmp_path / "o"),
        "--json",
        "--query",
        "SELECT count(*) AS n FROM flows JOIN points USING (hash)",
    )
    assert rc == 0 and json.loads(out) == [{"n": len(flows)}]
    rc, _, err = run_cli(capsys, "sweep", str(tmp_path / "o"), "--query", "SELEC nonsense")
    assert rc == 2 and err.startswith("qoslab: error: sweep: --query:") and err.count("\n") == 1


def test_resume_after_an_interrupt_runs_only_the_rest(capsys, tmp_path, monkeypatch) -> None:
    real = sweep_cmd.execute.run_local

    def interrupted(runs, sink, workers, executor="processes"):
        seen = 0

        def counting(o):
            nonlocal seen
            sink(o)
            seen += 1
            if seen == 5:
                raise KeyboardInterrupt

        return real(runs, counting, workers, executor)

    monkeypatch.setattr(sweep_cmd.execute, "run_local", interrupted)
    argv = [
        "sweep",
        str(EXAMPLE),
        "--grid",
        f"{BC}=8kb:256kb:6:log",
        "--grid",
        "traffic[0].flows=1,2",
        "--out",
        str(tmp_path / "o"),
        "--executor",
        "threads",
        "--workers",
        "1",
    ]
    rc, _, err = run_cli(capsys, *argv)
    assert rc == 130 and "interrupted: 5 runs kept" in err
    assert len(query(tmp_path / "o", "SELECT hash FROM points")) == 5
    monkeypatch.setattr(sweep_cmd.execute, "run_local", real)
    rc, out, _ = run_cli(capsys, *argv, "--json")
    s = json.loads(out)
    assert rc == 0 and s["skipped_already_done"] == 5 and s["ran"] == 7
    assert len(query(tmp_path / "o", "SELECT DISTINCT hash FROM points")) == 12


def test_ctrl_c_on_the_command_keeps_what_finished(tmp_path) -> None:
    """A real SIGINT to a running `qoslab sweep` (processes), then a rerun."""
    out = tmp_path / "o"
    argv = [
        sys.executable,
        "-m",
        "qoslab.cli",
        "sweep",
        str(EXAMPLE),
        "--grid",
        f"{BC}=8kb:1mb:100:log",
        "--grid",
        "traffic[0].flows=1,2,3,4",
        "--seeds",
        "1",
        "--out",
        str(out),
        "--batch",
        "20",
        "--quiet",
    ]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list((out / "points").glob("part-*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, err
    assert "Traceback" not in err and "interrupted:" in err
    kept = len(query(out, "SELECT hash FROM points"))
    assert 0 < kept < 400
    done = subprocess.run([*argv, "--json"], capture_output=True, text=True, timeout=300)
    s = json.loads(done.stdout)
    assert s["skipped_already_done"] == kept and s["ran"] == 400 - kept
    assert len(query(out, "SELECT DISTINCT hash FROM points")) == 400


def test_dedup_in_a_sweep_across_sweeps_and_in_the_views(capsys, tmp_path) -> None:
    out = tmp_path / "o"
    s = sweep(capsys, out, grid=(f"{BC}=16kb,16kb,32kb",))  # 16kb twice: one run
    assert s["runs"] == 2
    s = sweep(capsys, out, grid=(f"{BC}=16kb,64kb",))  # 16kb is already there
    assert s["skipped_already_done"] == 1 and s["ran"] == 1
    assert len(query(out, "SELECT * FROM points")) == 3
    # a part duplicated behind the writer's back: the views still hold each run once
    part = next((out / "points").glob("part-*.parquet"))
    shutil.copy(part, part.with_name("part-99999999999999999999-copy.parquet"))
    assert len(query(out, "SELECT * FROM points")) == 3


def test_an_unfinished_batch_is_removed_on_open(capsys, tmp_path) -> None:
    out = tmp_path / "o"
    sweep(capsys, out, grid=(f"{BC}=16kb,32kb",))
    orphan = out / "flows" / "part-00000000000000000001-dead.parquet"
    shutil.copy(next((out / "flows").glob("part-*")), orphan)
    (out / "points" / ".tmp-part-x.parquet").write_bytes(b"half")
    sweep(capsys, out, grid=(f"{BC}=16kb,32kb",))
    assert not orphan.exists() and not (out / "points" / ".tmp-part-x.parquet").exists()


def test_refuses_a_directory_that_is_not_a_sweep(capsys, tmp_path) -> None:
    (tmp_path / "mine.txt").write_text("x")
    rc, _, err = run_cli(
        capsys, "sweep", str(EXAMPLE), "--grid", f"{BC}=16kb", "--out", str(tmp_path)
    )
    assert rc == 2 and "not a qoslab sweep" in err


def test_processes_threads_and_dask_give_identical_rows(capsys, tmp_path) -> None:
    pytest.importorskip("dask.distributed")
    grid = (f"{BC}=8kb:128kb:3:log", "traffic[0].flows=1,3", "traffic[0].cc=cubic,reno")
    frames = []
    for name, extra in (
        ("threads", ("--executor", "threads")),
        ("processes", ("--executor", "processes", "--workers", "2")),
        ("dask", ("--dask", "local", "--workers", "2")),
    ):
        s = sweep(capsys, tmp_path / name, *extra, "--seeds", "2", grid=grid)
        assert s["ran"] == 24, (name, s)
        frames.append(query(tmp_path / name, "SELECT * FROM points ORDER BY hash"))
    assert frames[0].equals(frames[1]) and frames[0].equals(frames[2])


def test_figures(capsys, tmp_path) -> None:
    out = tmp_path / "o"
    sweep(capsys, out, "--seeds", "2")
    for argv, fig in (
        (["--plot", "sum_goodput_bps", "--x", BC, "--by", "traffic[0].flows"], "a.png"),
        (["--heatmap", "jain_fairness", "--x", BC, "--y", "traffic[0].flows"], "b.svg"),
    ):
        rc, _, err = run_cli(capsys, "sweep", str(out), *argv, "--figure", str(tmp_path / fig))
        assert rc == 0, err
        head = (tmp_path / fig).read_bytes()[:64]
        assert (
            head.startswith(b"\x89PNG")
            if fig.endswith("png")
            else b"<svg" in head or b"<?xml" in head
        )
    rc, _, err = run_cli(capsys, "sweep", str(out), "--plot", "nope", "--x", BC)
    assert rc == 2 and "no metric 'nope'" in err


def test_matplotlib_is_not_imported_to_run_a_sweep(tmp_path) -> None:
    code = (
        "import sys; from qoslab.cli import main; "
        f"a = ['sweep', {str(EXAMPLE)!r}, '--grid', '{BC}=16kb', '--out', "
        f"{str(tmp_path / 'o')!r}, '--quiet']; "
        "assert main(a) == 0; "
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_local_sweeps_need_no_dask_and_dask_says_how_to_get_it(tmp_path) -> None:
    code = (
        "import sys; sys.modules['dask'] = None; sys.modules['distributed'] = None\n"
        "from qoslab.cli import main\n"
        f"a = ['sweep', {str(EXAMPLE)!r}, '--grid', '{BC}=16kb,32kb', '--quiet', '--out']\n"
        f"assert main([*a, {str(tmp_path / 'a')!r}]) == 0\n"
        f"assert main([*a, {str(tmp_path / 'b')!r}, '--dask', 'local']) == 2\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "pip install 'qoslab[dask]'" in done.stderr


def _why_no_emulation() -> str | None:
    from qoslab import _core
    from qoslab.emulate.netns import REQUIRED_TOOLS

    if os.geteuid() != 0:
        return "emulation needs root"
    missing = [t for t in REQUIRED_TOOLS if shutil.which(t) is None]
    if missing:
        return f"emulation needs {', '.join(missing)}"
    if not hasattr(_core, "emu_start"):
        return "the forwarder binding is not built"
    return None


@pytest.mark.skipif(_why_no_emulation() is not None, reason=str(_why_no_emulation()))
def test_emulate_a_two_point_sweep(capsys, tmp_path) -> None:
    """Real Linux TCP through qoslab's policer in namespaces, one point at a time."""
    from qoslab.emulate.netns import PREFIX, list_namespaces

    s = sweep(capsys, tmp_path / "o", "--emulate", grid=(f"{BC}=16kb,256kb",))
    assert s["ran"] == 2 and s["failed"] == 0, s
    df = query(tmp_path / "o", f'SELECT * FROM points ORDER BY "{BC}_bytes"')
    assert list(df["mode"]) == ["emulate", "emulate"]
    assert (df["sum_goodput_bps"] > 1e6).all()
    # a bigger bucket lets real TCP through faster (the 10 Mbit/s policer of the example)
    assert df["sum_goodput_bps"].iloc[0] < df["sum_goodput_bps"].iloc[1]
    # none of this process's namespaces is left (other users' runs may have theirs)
    assert not [n for n in list_namespaces() if n.startswith(f"{PREFIX}{os.getpid()}-")]


def test_report_page_of_a_results_directory(capsys, tmp_path) -> None:
    """`--report` on the committed store: every headline figure, and one
    table row per point (key combination), in the keys' numeric order."""
    import re

    out = tmp_path / "r.html"
    rc, _, err = run_cli(
        capsys, "sweep", str(ROOT / "examples" / "sweep-results"), "--report", str(out)
    )
    assert rc == 0, err
    text = out.read_text()
    assert re.findall(r'data-figure="([^"]+)"', text) == [
        "sum_goodput_bps",
        "loss_fraction",
        "rtt_p95_ms_mean",
        "jain_heatmap",
    ]
    body = text[text.index("Points (mean over seeds)") :]
    rows = re.findall(r"<tr><td class=l>([^<]*)</td><td class=l>([^<]*)</td>", body)
    rows = [r for r in rows if r[0][:-1].isdigit()]  # the points, not the versions table
    store = ROOT / "examples" / "sweep-results"
    n = int(
        query(
            store,
            f'SELECT count(*) AS n FROM (SELECT DISTINCT "{BC}", "traffic[0].flows" FROM points)',
        )["n"][0]
    )
    assert len(rows) == n > 1
    bcs = [int(r[0][:-1]) for r in rows]
    assert bcs == sorted(bcs)
