"""Bad input never gives a traceback or a panic.

Mutations of the shipped scenarios, broken trace CSVs and random command
lines go through the real CLI entry point (``qoslab.cli.main``). Each must
end with exit status 0 (the input was valid after all), 130 (a valid run
this test cut short: see ``_cut_short``) or 2 with exactly one stderr line
``qoslab: error: ...``. A Rust panic surfaces here as ``PanicException``
and fails the test with the reproducer hypothesis prints.

Time: every example is bounded (runs are cancelled after a fraction of a
second of wall time); ``QOSLAB_FUZZ_EXAMPLES`` raises the example counts
for a longer hunt.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from qoslab import run as run_mod
from qoslab.cli import main

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted(
    p
    for d in ("scenarios", "scenarios/trees", "python/qoslab/data/scenarios/reproduce")
    for p in (ROOT / d).glob("*.toml")
)
TRACE = ROOT / "examples" / "trace.csv"
N = int(os.environ.get("QOSLAB_FUZZ_EXAMPLES", "0"))
#: Wall time a fuzzed run may take before it is cancelled (exit 130).
RUN_BUDGET_S = 0.3

FUZZ = settings(
    max_examples=N or 40,
    deadline=None,
    derandomize=not N,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(autouse=True)
def _cut_short(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every simulation is cancelled after ``RUN_BUDGET_S`` of wall time."""
    real = run_mod._core.simulate_toml

    def bounded(
        text: str,
        filename: str = "<string>",
        seed: Any = None,
        progress: Any = None,
        **kw: Any,  # captures, snaplen, numpy: as given
    ):
        t0 = time.monotonic()

        def stop_late(*a: int) -> bool:
            if progress is not None and progress(*a) is False:
                return False
            return time.monotonic() - t0 < RUN_BUDGET_S

        return real(text, filename, seed, stop_late, **kw)

    monkeypatch.setattr(run_mod._core, "simulate_toml", bounded)


def check(rc: int, out: str, err: str, *ok: int) -> None:
    assert "Traceback" not in err and "panicked" not in err, err
    assert rc in (0, 2, 130, *ok), (rc, err)
    if rc == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith("qoslab: error: "), err
    if rc == 130:
        assert err.strip().splitlines()[-1] == "qoslab: cancelled", err


def cli(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


# --- scenario files ----------------------------------------------------------

#: Values a careless (or adversarial) user might put anywhere.
BAD_VALUES = [
    '"1e99mbit"',
    '"-5ms"',
    '"0p"',
    '"0"',
    '""',
    '"1bit"',
    '"100000000h"',
    '"18446744073s"',
    '"18446744073709551615bit"',
    '"4294967296B"',
    '"1ns"',
    '"1us"',
    '"abc"',
    "0",
    "-1",
    "1",
    "1.5",
    "1e308",
    "-1e308",
    "nan",
    "inf",
    "4294967296",
    "9223372036854775807",
    "100000",
    "true",
    "[]",
    "{}",
    '["x"]',
    "{ a = 1 }",
    '"\\u0000"',
]
KEY_VALUE = re.compile(r"^(\s*)([A-Za-z_][\w-]*)(\s*=\s*)(.+)$")


def _typo(key: str, i: int) -> str:
    i %= max(1, len(key) - 1)
    return key[:i] + key[i + 1 : i + 2] + key[i] + key[i + 2 :] if len(key) > 1 else key + "x"


@st.composite
def mutated_scenario(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SCENARIOS)).read_text(encoding="utf-8")
    for _ in range(draw(st.integers(1, 3))):
        lines = text.splitlines()
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        kind = draw(
            st.sampled_from(["value", "value", "value", "delete", "typo", "dup", "cut", "junk"])
        )
        m = KEY_VALUE.match(lines[i])
        if kind == "value" and m:
            lines[i] = m.group(1) + m.group(2) + m.group(3) + draw(st.sampled_from(BAD_VALUES))
        elif kind == "typo" and m:
            lines.insert(i, f"{_typo(m.group(2), draw(st.integers(0, 20)))} = {m.group(4)}")
        elif kind == "delete":
            del lines[i]
        elif kind == "dup":
            lines.insert(i, lines[i])
        elif kind == "cut":
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        elif kind == "junk":
            lines.insert(i, draw(st.text(max_size=12)))
        text = "\n".join(lines) + "\n"
    return text


@FUZZ
@given(text=mutated_scenario())
@example(text='[scenario]\nduration = "100000000h"\n')
def test_mutated_scenarios_are_run_or_refused_in_one_line(capsys, tmp_path, text: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(text, encoding="utf-8")
    check(*cli(capsys, "run", path, "--quiet"))


EXAMPLE = (ROOT / "scenarios" / "example.toml").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "edits, fragment",
    [
        ({'duration = "2s"': 'duration = "100000000h"'}, "scenario.duration"),
        ({'duration = "2s"': 'duration = "-5ms"'}, "scenario.duration"),
        ({'duration = "2s"': 'duration = "0s"'}, "scenario.duration"),
        ({'rate = "100mbit"': 'rate = "1e99mbit"'}, "topology.bottleneck.rate"),
        ({'rate = "100mbit"': 'rate = "0p"'}, "topology.bottleneck.rate"),
        ({"senders = 2": "senders = 1000000"}, "topology.senders"),
        ({"flows = 2": "flows = 4000000000"}, "traffic[0].flows"),
        (
            {
                'duration = "2s"': 'duration = "1000s"',
                'interval = "100ms"\nseries': 'interval = "1us"\nseries',
            },
            "record.interval",
        ),
        ({'interval = "100ms"\n\n[record]': 'interval = "1ns"\n\n[record]'}, "traffic[1].interval"),
    ],
)
def test_absurd_sizes_are_refused_up_front(capsys, tmp_path, edits, fragment) -> None:
    text = EXAMPLE
    for old, new in edits.items():
        assert old in text
        text = text.replace(old, new, 1)
    path = tmp_path / "s.toml"
    path.write_text(text, encoding="utf-8")
    t0 = time.monotonic()
    rc, _, err = cli(capsys, "run", path, "--quiet")
    assert rc == 2, err
    assert time.monotonic() - t0 < 5, "refused only after a long time"
    check(rc, "", err)
    assert fragment in err, err


def test_flows_spread_over_many_senders_are_refused_by_routing_size(capsys, tmp_path) -> None:
    text = EXAMPLE.replace("senders = 2", "senders = 30000").replace("flows = 2", "flows = 30000")
    path = tmp_path / "s.toml"
    path.write_text(text, encoding="utf-8")
    rc, _, err = cli(capsys, "run", path, "--quiet")
    check(rc, "", err)
    assert rc == 2 and "routing table" in err, err


@pytest.mark.parametrize("what", ["empty", "garbage", "directory", "missing", "unreadable", "nul"])
def test_unusable_scenario_files(capsys, tmp_path, what: str) -> None:
    path = tmp_path / "s.toml"
    if what == "empty":
        path.write_bytes(b"")
    elif what == "garbage":
        path.write_bytes(bytes(range(256)) * 3)
    elif what == "directory":
        path.mkdir()
    elif what == "unreadable":
        if os.geteuid() == 0:
            pytest.skip("root reads any file")
        path.write_text(EXAMPLE)
        path.chmod(0)
    elif what == "nul":
        path.write_text("[scenario]\x00\n")
    rc, out, err = cli(capsys, "run", path)
    check(rc, out, err)
    assert rc == 2 and str(path) in err, err


# --- trace CSVs --------------------------------------------------------------

CELLS = st.one_of(
    st.integers(0, 10**6).map(str),
    st.sampled_from(
        ["", " ", "-1", "1.5", "1e3", "nan", "18446744073709551616", "9" * 40, "4294967296"]
    ),
    st.sampled_from(["0", "green", "red", "yellow", "2", "3", "G", "\x00", '"', "a,b", "\u00e9"]),
    st.text(max_size=4),
)


@st.composite
def trace_text(draw: st.DrawFn) -> str:
    header = draw(
        st.sampled_from(
            [
                "time_ns,size_bytes",
                "time_ns,size_bytes,color",
                "size_bytes,time_ns,x",
                "time_ns",
                "",
            ]
        )
    )
    ncol = max(1, header.count(",") + 1)
    rows = draw(
        st.lists(
            st.lists(CELLS, min_size=max(0, ncol - 1), max_size=ncol + 1).map(",".join),
            max_size=8,
        )
    )
    good = [
        f"{i * 1000},{draw(st.integers(0, 2000))}" + (",0" if ncol == 3 else "") for i in range(3)
    ]
    return "\n".join([header, *good, *rows]) + draw(st.sampled_from(["\n", "", "\r\n", "\n\n"]))


@FUZZ
@given(text=trace_text(), cmd=st.sampled_from(["meter", "shape"]))
def test_bad_traces_give_one_line_errors(capsys, tmp_path, text: str, cmd: str) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(text, encoding="utf-8", newline="")
    params = (
        ["srtcm", "--cir", "1mbit", "--cbs", "3000B", "--ebs", "6000B"]
        if cmd == "meter"
        else ["tbf", "--rate", "1mbit", "--burst", "3000B", "--limit", "30000B"]
    )
    out = tmp_path / "o.csv"
    out.write_text("earlier result\n")
    rc, so, err = cli(capsys, cmd, *params, "--input", trace, "--output", out)
    check(rc, so, err)
    if rc != 0:
        assert out.read_text() == "earlier result\n"


@pytest.mark.parametrize(
    "rows", [["0,1500", "0,4294967295"], ["0,1073741824", "9223372036854775807,1073741824"]]
)
@pytest.mark.parametrize("cmd", ["meter", "shape"])
def test_huge_trace_values(capsys, tmp_path, rows, cmd) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("time_ns,size_bytes\n" + "\n".join(rows) + "\n")
    params = (
        ["srtcm", "--cir", "1mbit", "--cbs", "3000B", "--ebs", "6000B"]
        if cmd == "meter"
        else ["tbf", "--rate", "1bit", "--burst", "3000B", "--limit", "30000B"]
    )
    check(*cli(capsys, cmd, *params, "--input", trace))


# --- command lines -----------------------------------------------------------

TOKENS = [
    "run",
    "meter",
    "shape",
    "compare",
    "reproduce",
    "srtcm",
    "tbf",
    "--json",
    "--quiet",
    "--list",
    "--seed",
    "-1",
    "18446744073709551616",
    "3",
    "--out",
    "--output",
    "--input",
    "--report",
    "--figures",
    "--param",
    "=",
    "cir=",
    "cir=1e99mbit",
    "--cir",
    "1mbit",
    "--cbs",
    "0p",
    "--rate",
    "-5ms",
    "--vary",
    "traffic.0.flows=1,2",
    "a..b=1",
    "scenario.duration=",
    "--quick",
    "--markdown",
    "nosuch",
    "--",
    "-",
    "@TRACE",
    "@SCEN",
    "@DIR",
    "@MISSING",
]


@FUZZ
@given(argv=st.lists(st.sampled_from(TOKENS), min_size=1, max_size=7))
def test_random_command_lines(capsys, tmp_path, monkeypatch, argv: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    scen = tmp_path / "tiny.toml"
    scen.write_text(EXAMPLE.replace('duration = "2s"', 'duration = "50ms"'))
    subst = {
        "@TRACE": str(TRACE),
        "@SCEN": str(scen),
        "@DIR": str(tmp_path),
        "@MISSING": str(tmp_path / "missing" / "x"),
    }
    argv = [subst.get(a, a) for a in argv]
    # reproduce runs minutes-long experiments unless --quick; it only sees names here.
    rc, out, err = cli(capsys, *argv)
    # 1: reproduce's "a published number was not met".
    check(rc, out, err, 1)


# --- outputs: never half-written, never an earlier result lost ---------------

TINY = EXAMPLE.replace('duration = "2s"', 'duration = "200ms"')
SRTCM = ["srtcm", "--cir", "1mbit", "--cbs", "3000B", "--ebs", "6000B", "--input", TRACE]


TBF = ["tbf", "--rate", "1mbit", "--burst", "3000B", "--limit", "30000B"]


def _interrupt(*a: Any, **k: Any) -> None:
    raise KeyboardInterrupt


@pytest.mark.parametrize("what", ["meter", "shape", "run-out", "run-report", "compare"])
def test_ctrl_c_while_writing_keeps_the_earlier_result(capsys, tmp_path, monkeypatch, what) -> None:
    scen = tmp_path / "s.toml"
    scen.write_text(TINY)
    target = tmp_path / "result"
    if what == "run-out":
        target.mkdir()
        (target / "results.json").write_text("earlier\n")
        argv = ["run", scen, "--out", target, "--quiet"]
        monkeypatch.setattr("pandas.DataFrame.to_parquet", _interrupt)
    else:
        target.write_text("earlier\n")
        argv = {
            "meter": ["meter", *SRTCM, "--output", target],
            "shape": ["shape", *TBF, "--input", TRACE, "--output", target],
            "run-report": ["run", scen, "--report", target, "--quiet"],
            "compare": ["compare", scen, scen, "--report", target],
        }[what]
        monkeypatch.setattr(os, "fsync", _interrupt)
    rc, out, err = cli(capsys, *argv)
    assert rc == 130, err
    check(rc, out, err)
    earlier = target / "results.json" if what == "run-out" else target
    assert earlier.read_text() == "earlier\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result", "s.toml"]


@pytest.mark.parametrize(
    "what", ["out-file", "out-foreign-dir", "report-dir", "compare-report-dir"]
)
def test_bad_output_paths_are_refused_before_the_run(capsys, tmp_path, monkeypatch, what) -> None:
    scen = tmp_path / "s.toml"
    scen.write_text(TINY)
    (tmp_path / "f").write_text("x")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "mine.txt").write_text("x")
    argv = {
        "out-file": ["run", scen, "--out", tmp_path / "f"],
        "out-foreign-dir": ["run", scen, "--out", tmp_path / "d"],
        "report-dir": ["run", scen, "--report", tmp_path / "d"],
        "compare-report-dir": ["compare", scen, scen, "--report", tmp_path / "d"],
    }[what]
    monkeypatch.setattr(run_mod._core, "simulate_toml", _interrupt)  # must not be reached
    rc, out, err = cli(capsys, *argv)
    check(rc, out, err)
    assert rc == 2, err
    assert (tmp_path / "f").read_text() == "x" and (tmp_path / "d" / "mine.txt").read_text() == "x"


# --- progress -----------------------------------------------------------------


def test_compare_says_which_run_is_going(tmp_path) -> None:
    from qoslab.compare import compare

    seen: list[tuple[str, int, int]] = []
    calls: list[int] = []

    class Bar:
        def __call__(self, sim_ns: int, duration_ns: int, events: int) -> bool:
            calls.append(sim_ns)
            return True

        def close(self) -> None:
            seen.append(("closed", 0, 0))

    def progress(label: str, i: int, n: int) -> Bar:
        seen.append((label, i, n))
        return Bar()

    compare({"a": TINY, "b": TINY}, progress=progress)
    assert seen == [("a", 0, 2), ("closed", 0, 0), ("b", 1, 2), ("closed", 0, 0)]
    assert calls and calls[-1] == 200_000_000


@pytest.mark.parametrize(
    "text",
    [
        'time_ns,size_bytes\n0,0\n"\n",0\n',
        'time_ns,size_bytes\n0,"1\r\n2"\n',
        "time_ns,size_bytes\n\x00,1\n",
    ],
)
def test_control_characters_in_a_value_stay_on_one_error_line(capsys, tmp_path, text) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(text, newline="")
    rc, out, err = cli(capsys, "meter", *SRTCM[:-2], "--input", trace)
    check(rc, out, err)
    assert rc == 2
