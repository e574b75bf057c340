"""The qoslab command line: help, listing, outputs, JSON summary, and one
clear line with exit status 2 for every class of bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import qoslab
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from qoslab.cli import main

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "examples" / "trace.csv"
SRTCM = ["--cir", "1mbit", "--cbs", "3000B", "--ebs", "6000B"]
SHAPERS = sorted(qoslab.shaper_kinds())
# Parameters of the shaper used by the shape tests (Linux TBF, qdisc defaults aside).
TBF = ["--rate", "1mbit", "--burst", "3000B", "--limit", "30000B"]


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def assert_one_line_error(rc: int, err: str, *fragments: str) -> None:
    assert rc == 2
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("qoslab: error: "), err
    for f in fragments:
        assert f in lines[0], (f, err)


# --- help and listing -------------------------------------------------------


@pytest.mark.parametrize("argv", [["--help"], ["meter", "--help"], ["shape", "--help"]])
def test_every_help_text_carries_a_concrete_example(capsys, argv) -> None:
    rc, out, _ = run(capsys, *argv)
    assert rc == 0
    assert "examples:" in out
    assert "--input examples/trace.csv" in out


def test_meter_list_names_every_meter_kind(capsys) -> None:
    rc, out, _ = run(capsys, "meter", "--list")
    assert rc == 0
    for kind, description in qoslab.meter_kinds().items():
        assert f"{kind}  " in out and description in out


def test_shape_list_names_every_shaper_kind(capsys) -> None:
    rc, out, _ = run(capsys, "shape", "--list")
    assert rc == 0
    assert SHAPERS, "no shaper kinds registered"
    for kind in SHAPERS:
        assert kind in out


# --- the main command ---------------------------------------------------------


def test_readme_command_writes_colours_and_a_json_summary(capsys, tmp_path) -> None:
    out_csv = tmp_path / "colored.csv"
    rc, out, err = run(
        capsys, "meter", "srtcm", *SRTCM, "--input", TRACE, "--output", out_csv, "--json"
    )
    assert rc == 0, err
    s = json.loads(out)
    assert set(s) == {
        "command",
        "kind",
        "params",
        "input",
        "output",
        "packets",
        "bytes",
        "colors",
        "dropped",
        "remarked",
    }
    assert s["command"] == "meter" and s["kind"] == "srtcm"
    assert s["params"]["cir"] == "1mbit" and s["params"]["ebs"] == "6000B"
    colors = s["colors"]
    assert set(colors) == {"green", "yellow", "red"}
    assert all(colors[c]["packets"] > 0 for c in colors), "the example must show all colours"
    assert sum(v["packets"] for v in colors.values()) == s["packets"]
    assert sum(v["bytes"] for v in colors.values()) == s["bytes"]
    assert s["dropped"] == {"packets": 0, "bytes": 0}  # srtcm only marks by default

    lines = out_csv.read_text().splitlines()
    assert lines[0] == "time_ns,size_bytes,flow,color,action"
    src = TRACE.read_text().splitlines()
    assert len(lines) == len(src)
    # input columns pass through untouched
    assert all(o.startswith(i + ",") for i, o in zip(src[1:], lines[1:], strict=True))
    n_red = sum(1 for line in lines[1:] if line.endswith(",red,transmit"))
    assert n_red == colors["red"]["packets"]


def test_actions_drop_and_are_counted(capsys, tmp_path) -> None:
    out_csv = tmp_path / "policed.csv"
    rc, out, _ = run(
        capsys,
        "meter",
        "srtcm",
        "--param",
        "cir=1mbit",
        "--param",
        "cbs=3000B",
        "--ebs=6000B",
        "--violate",
        "drop",
        "--input",
        TRACE,
        "--output",
        out_csv,
        "--json",
    )
    assert rc == 0
    s = json.loads(out)
    assert s["dropped"]["packets"] == s["colors"]["red"]["packets"] > 0
    assert s["params"]["violate"] == "drop"
    body = out_csv.read_text()
    assert ",red,drop\n" in body and ",red,transmit" not in body


def test_human_table_without_json(capsys) -> None:
    rc, out, _ = run(capsys, "meter", "srtcm", *SRTCM, "--input", TRACE)
    assert rc == 0
    assert out.startswith("srtcm: ")
    for word in ("green", "yellow", "red", "dropped"):
        assert word in out


def test_same_input_gives_byte_identical_output(capsys, tmp_path) -> None:
    outs = []
    for name in ("a.csv", "b.csv"):
        rc, out, _ = run(
            capsys, "meter", "srtcm", *SRTCM, "--input", TRACE, "--output", tmp_path / name
        )
        assert rc == 0
        outs.append(((tmp_path / name).read_bytes(), out.replace(str(tmp_path / name), "X")))
    assert outs[0] == outs[1]


def test_colour_aware_reads_the_color_column_and_keeps_it(capsys, tmp_path) -> None:
    trace = write(
        tmp_path,
        "in.csv",
        'time_ns,size_bytes,color,note\n0,100,yellow,a\n0,100,2,"b,c"\n0,100,G,d\n',
    )
    out_csv = tmp_path / "out.csv"
    rc, _, err = run(
        capsys,
        "meter",
        "srtcm",
        *SRTCM,
        "--mode",
        "aware",
        "--input",
        trace,
        "--output",
        out_csv,
    )
    assert rc == 0, err
    assert out_csv.read_text().splitlines() == [
        "time_ns,size_bytes,color_in,note,color,action",
        "0,100,yellow,a,yellow,transmit",
        '0,100,2,"b,c",red,transmit',
        "0,100,G,d,green,transmit",
    ]


# --- bad input: one line, exit 2, the right place named -----------------------


def test_unknown_kind_suggests_the_nearest(capsys) -> None:
    rc, _, err = run(capsys, "meter", "srtcn", *SRTCM, "--input", TRACE)
    assert_one_line_error(rc, err, "kind: unknown meter 'srtcn'", "did you mean 'srtcm'")


def test_unknown_param_suggests_the_nearest(capsys) -> None:
    rc, _, err = run(capsys, "meter", "srtcm", *SRTCM, "--mdoe", "aware", "--input", TRACE)
    assert_one_line_error(rc, err, "error: mdoe: unknown parameter", "did you mean 'mode'")


def test_misspelt_required_param_is_pointed_out(capsys) -> None:
    rc, _, err = run(capsys, "meter", "srtcm", "--cir", "1mbit", "--cbz", "3000", "--input", TRACE)
    assert_one_line_error(rc, err, "error: cbs: missing", "you gave 'cbz'")


def test_zero_rate_names_the_param(capsys) -> None:
    rc, _, err = run(capsys, "meter", "srtcm", "--cir", "0", "--cbs", "3000", "--input", TRACE)
    assert_one_line_error(rc, err, "error: cir: ")


def test_unknown_unit_names_the_param_and_what_was_expected(capsys) -> None:
    rc, _, err = run(capsys, "meter", "srtcm", "--cir", "1mbitz", "--cbs", "3000", "--input", TRACE)
    assert_one_line_error(rc, err, "error: cir: expected a rate", "'1mbitz'")


def test_param_given_twice_is_refused(capsys) -> None:
    rc, _, err = run(capsys, "meter", "srtcm", *SRTCM, "--param", "CIR=2mbit", "--input", TRACE)
    assert_one_line_error(rc, err, "error: cir: given more than once")


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("time_ns,size_bytes\n0,100\n10,200\nabc,300\n", 4, "column time_ns: expected"),
        ("time_ns,size_bytes\n0,100\n10,-5\n", 3, "column size_bytes: expected"),
        ("time_ns,size_bytes\n0,100\n10,1.5\n", 3, "got '1.5'"),
        ("time_ns,size_bytes\n0,100\n10,200,7\n", 3, "expected 2 fields"),
        ("time_ns,size_bytes\n0,100\n\n10,\n", 4, "column size_bytes"),
        ("time_ns,size_bytes\n0,100\n10,200\n5,300\n", 4, "sorted by time"),
        ("time_ns,size_bytes\n0,100\n10,0\n", 3, "size_bytes must be greater than zero"),
        ("time_ns,size_bytes,color\n0,100,green\n1,1,blue\n", 3, "column color: expected"),
        ("time_ns,size\n0,100\n", 1, "missing column 'size_bytes'"),
        ("", 1, "empty file"),
        ("time_ns,size_bytes\n0,99999999999\n", 2, "column size_bytes"),
    ],
)
def test_malformed_trace_names_file_and_line(capsys, tmp_path, text, line, fragment) -> None:
    trace = write(tmp_path, "trace.csv", text)
    out_csv = tmp_path / "out.csv"
    rc, _, err = run(capsys, "meter", "srtcm", *SRTCM, "--input", trace, "--output", out_csv)
    assert_one_line_error(rc, err, f"error: {trace}:{line}: ", fragment)
    assert not out_csv.exists()
    assert os.listdir(tmp_path) == ["trace.csv"], "no temporary file may be left behind"


def test_missing_input_file(capsys, tmp_path) -> None:
    missing = tmp_path / "nope.csv"
    rc, _, err = run(capsys, "meter", "srtcm", *SRTCM, "--input", missing)
    assert_one_line_error(rc, err, f"error: {missing}: ", "No such file")


def test_unwritable_output_names_the_output(capsys, tmp_path) -> None:
    target = tmp_path / "no-such-dir" / "out.csv"
    rc, _, err = run(capsys, "meter", "srtcm", *SRTCM, "--input", TRACE, "--output", target)
    assert_one_line_error(rc, err, f"error: {target}: ")


@pytest.mark.parametrize(
    "bad",
    [
        ["--cir", "0"],  # bad parameter
        ["--input", "unsorted"],  # bad trace
    ],
)
def test_errors_never_clobber_an_existing_output(capsys, tmp_path, bad) -> None:
    unsorted = write(tmp_path, "unsorted.csv", "time_ns,size_bytes\n5,1\n3,1\n")
    out_csv = write(tmp_path, "out.csv", "precious\n")
    argv = ["meter", "srtcm", "--cbs", "3000", "--output", str(out_csv)]
    argv += ["--cir", "1mbit"] if bad[0] != "--cir" else bad
    argv += ["--input", str(unsorted) if bad[0] == "--input" else str(TRACE)]
    rc, _, err = run(capsys, *argv)
    assert_one_line_error(rc, err)
    assert out_csv.read_text() == "precious\n"
    assert sorted(os.listdir(tmp_path)) == ["out.csv", "unsorted.csv"]


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["meter"], "KIND is required"),
        (["meter", "srtcm", *SRTCM], "--input CSV is required"),
        (["meter", "srtcm", "--cir"], "--cir needs a value"),
        (["meter", "srtcm", "--param", "cir"], "--param expects KEY=VALUE"),
        (["frobnicate"], "No such command 'frobnicate'"),
        (["meter", "--cir", "1mbit", "srtcm", "--cbs", "3000"], "KIND must come first"),
        (["meter", "srtcm", *SRTCM, "--input", str(TRACE), "stray"], "unexpected argument"),
    ],
)
def test_usage_errors_are_one_line(capsys, argv, fragment) -> None:
    rc, _, err = run(capsys, *argv)
    assert_one_line_error(rc, err, fragment)


def test_real_entry_point_in_a_subprocess(tmp_path) -> None:
    exe = Path(sys.executable).with_name("qoslab")
    assert exe.exists(), "the console script must be installed next to the interpreter"
    ok = subprocess.run(
        [exe, "meter", "srtcm", *SRTCM, "--input", TRACE, "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["packets"] > 1000
    bad = subprocess.run(
        [exe, "meter", "srtcm", "--cir", "1mbit", "--cbs", "3kb", "--input", tmp_path / "x.csv"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr


# --- shape (needs a shaper kind in the core) ---------------------------------


def test_unknown_shaper_kind_is_a_one_line_error(capsys) -> None:
    rc, _, err = run(capsys, "shape", "no-such-shaper", "--input", TRACE)
    assert_one_line_error(rc, err, "kind: unknown shaper 'no-such-shaper'")


@pytest.mark.parametrize("kind", SHAPERS)
def test_every_shaper_rejects_an_unknown_param_by_name(capsys, kind) -> None:
    rc, _, err = run(capsys, "shape", kind, "--bogus-param", "1", "--input", TRACE)
    assert_one_line_error(rc, err)
    assert "error: " in err and ": " in err.split("error: ", 1)[1]


def test_shape_tbf_writes_departures_and_a_json_summary(capsys, tmp_path) -> None:
    out_csv = tmp_path / "shaped.csv"
    rc, out, err = run(
        capsys, "shape", "tbf", *TBF, "--input", TRACE, "--output", out_csv, "--json"
    )
    assert rc == 0, err
    s = json.loads(out)
    for key in ("command", "kind", "params", "packets", "bytes", "sent", "dropped", "delay_ns"):
        assert key in s
    assert s["command"] == "shape" and s["kind"] == "tbf"
    assert s["sent"]["packets"] + s["dropped"]["packets"] == s["packets"]
    assert s["delay_ns"]["max"] > 0, "the example must queue behind a 1 Mbit/s shaper"
    lines = out_csv.read_text().splitlines()
    assert lines[0] == "time_ns,size_bytes,flow,departure_ns,dropped"
    dropped = [line for line in lines[1:] if line.endswith(",,1")]
    assert len(dropped) == s["dropped"]["packets"]
    for line in lines[1:]:
        t, _, _, dep, flag = line.split(",")
        if flag == "0":
            assert int(dep) >= int(t)


AQMS = ("red", "wred", "rio", "codel", "pie")


def test_shape_list_names_the_aqm_kinds(capsys) -> None:
    rc, out, _ = run(capsys, "shape", "--list", "--json")
    assert rc == 0
    listed = {k["kind"]: k["description"] for k in json.loads(out)}
    for kind in AQMS:
        assert "rate" in listed[kind], kind


def test_shape_codel_writes_departures_and_a_json_summary(capsys, tmp_path) -> None:
    out_csv = tmp_path / "codel.csv"
    argv = ["--target", "5ms", "--interval", "100ms", "--input", TRACE, "--output", out_csv]
    rc, out, err = run(capsys, "shape", "codel", "--rate", "3mbit", *argv, "--json")
    assert rc == 0, err
    s = json.loads(out)
    assert s["kind"] == "codel" and s["params"]["rate"] == "3mbit"
    assert s["params"]["target"] == "5ms"
    assert s["sent"]["packets"] + s["dropped"]["packets"] == s["packets"]
    assert s["dropped"]["packets"] > 0, "the example trace overloads 3 Mbit/s"
    lines = out_csv.read_text().splitlines()
    assert lines[0] == "time_ns,size_bytes,flow,departure_ns,dropped"
    assert sum(line.endswith(",,1") for line in lines[1:]) == s["dropped"]["packets"]
    # Without a rate: one line naming it, nothing written.
    out_csv.unlink()
    rc, _, err = run(capsys, "shape", "codel", *argv)
    assert_one_line_error(rc, err, "rate: missing", "link")
    assert not out_csv.exists()


@pytest.mark.parametrize("kind", AQMS)
def test_every_aqm_names_an_unknown_param(capsys, kind) -> None:
    # Required keys are checked before leftover ones.
    needs = {"red": ["--limit", "60kb", "--avpkt", "1000"], "wred": ["--preset", "rfc2963"]}
    needs["rio"] = needs["wred"]
    argv = ["--rate", "10mbit", *needs.get(kind, []), "--bogus-param", "1", "--input", TRACE]
    rc, _, err = run(capsys, "shape", kind, *argv)
    assert_one_line_error(rc, err, "bogus")


def test_shape_is_deterministic_and_refuses_bad_traces(capsys, tmp_path) -> None:
    outs = []
    for name in ("a.csv", "b.csv"):
        assert (
            run(capsys, "shape", "tbf", *TBF, "--input", TRACE, "--output", tmp_path / name)[0] == 0
        )
        outs.append((tmp_path / name).read_bytes())
    assert outs[0] == outs[1]
    bad = write(tmp_path, "bad.csv", "time_ns,size_bytes\n5,100\n3,100\n")
    rc, _, err = run(capsys, "shape", "tbf", *TBF, "--input", bad, "--output", tmp_path / "c.csv")
    assert_one_line_error(rc, err, f"{bad}:3: ")
    assert not (tmp_path / "c.csv").exists()


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    pkts=st.lists(st.tuples(st.integers(0, 3_000_000), st.integers(1, 1600)), max_size=60),
    aware=st.booleans(),
    colors=st.lists(st.sampled_from(["green", "yellow", "red", "0", "1", "2"]), min_size=60),
)
def test_cli_colours_equal_the_python_api(capsys, tmp_path, pkts, aware, colors) -> None:
    times, t = [], 0
    for gap, _ in pkts:
        t += gap
        times.append(t)
    sizes = [s for _, s in pkts]
    cin = colors[: len(pkts)]
    body = "".join(f"{a},{b},{c}\n" for a, b, c in zip(times, sizes, cin, strict=True))
    trace = write(tmp_path, "t.csv", "time_ns,size_bytes,color\n" + body)
    out_csv = tmp_path / "o.csv"
    mode = "aware" if aware else "blind"
    rc, _, err = run(
        capsys, "meter", "srtcm", *SRTCM, "--mode", mode, "--input", trace, "--output", out_csv
    )
    assert rc == 0, err
    got = [line.split(",")[3] for line in out_csv.read_text().splitlines()[1:]]
    want = qoslab.color("srtcm", times, sizes, cin, cir="1mbit", cbs=3000, ebs=6000, mode=mode)
    assert got == [qoslab.COLOR_NAMES[c] for c in want]


def test_a_bytes_per_second_rate_is_a_warning_on_stderr(capsys) -> None:
    """``--cir 1Mbps`` is tc's bytes per second (8 Mbit/s): said on stderr,
    as `qoslab run` says it for a scenario; stdout keeps only the CSV."""
    argv = ["meter", "srtcm", "--cir", "1Mbps", "--cbs", "3000B", "--ebs", "6000B"]
    rc, out, err = run(capsys, *argv, "--input", TRACE, "--output", "-")
    assert rc == 0 and out.startswith("time_ns,size_bytes")
    assert "qoslab: warning: --cir 1Mbps is tc's bytes per second: 8.00 Mbits/sec" in err
    assert 'for bits write "1Mbit"' in err
    rc, _, err = run(capsys, "meter", "srtcm", *SRTCM, "--input", TRACE)
    assert rc == 0 and "warning" not in err
