"""`qoslab import tc|cisco`: the printed TOML is a scenario policy table,
errors are located in the file, and (as root) a tc script applied to a real
kernel qdisc shows what qoslab derives (limit, burst in bytes, quantum)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from qoslab import _core
from qoslab.cli import main

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples" / "import"
HEAD = """[scenario]
name = "x"
duration = "1s"

[topology]
senders = 1
receivers = 1
access = { rate = "1gbit", delay = "1ms" }
bottleneck = { rate = "1gbit", delay = "1ms" }

"""
TAIL = '\n[[traffic]]\nkind = "tcp-bulk"\nflows = 1\n'


@pytest.mark.parametrize(
    "argv",
    [
        ["tc", str(EX / "tbf.sh")],
        ["tc", str(EX / "htb-sfq.sh")],
        ["cisco", "--platform", "ios-xe", str(EX / "isr4000-shaper.cfg")],
        ["cisco", "--platform", "ios", str(EX / "llq.cfg")],
    ],
)
def test_printed_toml_is_a_scenario_policy(capsys, argv: list[str]) -> None:
    assert main(["import", *argv]) == 0
    out = capsys.readouterr().out
    assert "[policy.bottleneck.egress]" in out
    info = _core.scenario_info(HEAD + out + TAIL, "imported.toml")
    assert info


def test_json_has_the_spec_and_the_derived_values(capsys) -> None:
    assert main(["import", "tc", str(EX / "tbf.sh"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["spec"]["form"] == "shape"
    assert doc["spec"]["params"] == {"rate": "180kbit", "latency": "20ms", "burst": "1540B"}
    # tc-tbf: limit = 22500 B/s x 20 ms + 1540 B.
    assert doc["derived"]["limit"] == "1990B"


def test_errors_name_file_line_column_token(capsys, tmp_path: Path) -> None:
    bad = tmp_path / "bad.sh"
    bad.write_text("# x\ntc qdisc add dev eth0 root tbf rate 1mbit burst 3k limt 10k\n")
    assert main(["import", "tc", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2:52: 'limt': unknown tbf option" in err, err
    assert err.count("\n") == 1
    cfg = tmp_path / "bad.cfg"
    cfg.write_text("policy-map P\n class class-default\n  set dscp ef\n")
    assert main(["import", "cisco", str(cfg)]) == 2
    assert f"{cfg}:3:3: 'set':" in capsys.readouterr().err


def test_bps_units_warn_on_stderr(capsys, tmp_path: Path) -> None:
    f = tmp_path / "t.sh"
    f.write_text("tc qdisc add dev eth0 root tbf rate 50Mbps burst 10kb latency 20ms\n")
    assert main(["import", "tc", str(f)]) == 0
    out, err = capsys.readouterr()
    assert 'rate = "400mbit"' in out
    assert "byte units" in err


# ---- against the kernel (root) ---------------------------------------------


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "applying tc to a veth needs root"
    for t in ("ip", "tc"):
        if shutil.which(t) is None:
            return f"{t} not installed"
    return None


def _sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=20).stdout


SCRIPTS = {
    "tbf": "tc qdisc add dev DEV root tbf rate 180kbit latency 20ms buffer 1540",
    "tbf-limit": "tc qdisc add dev DEV root tbf rate 1mbit burst 10kb limit 30000",
    "pfifo": "tc qdisc add dev DEV root pfifo limit 100",
    "bfifo": "tc qdisc add dev DEV root bfifo limit 30kb",
    "htb-bfifo": (
        "tc qdisc replace dev DEV root handle 1:0 htb default 20\n"
        "tc class add dev DEV parent 1: classid 1:20 htb rate 2Mbit ceil 2Mbit "
        "burst 1600 cburst 1600\n"
        "tc qdisc add dev DEV parent 1:20 bfifo limit 30kb"
    ),
    "htb-tree": (
        "tc qdisc add dev DEV root handle 1: htb default 20 r2q 5\n"
        "tc class add dev DEV parent 1: classid 1:1 htb rate 100mbit\n"
        "tc class add dev DEV parent 1:1 classid 1:10 htb rate 40mbit ceil 100mbit\n"
        "tc class add dev DEV parent 1:1 classid 1:20 htb rate 3mbit ceil 100mbit quantum 3000\n"
        "tc qdisc add dev DEV parent 1:10 pfifo limit 50"
    ),
}


def _size(s: str) -> int:
    """tc's printed sizes (sprint_size): 1600b, 30Kb, 2Mb."""
    m = re.fullmatch(r"(\d+)(b|Kb|Mb)", s)
    assert m, s
    return int(m.group(1)) * {"b": 1, "Kb": 1024, "Mb": 1 << 20}[m.group(2)]


@pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_kernel_shows_what_qoslab_derives(name: str) -> None:
    ns = f"qlimp{os.getpid()}{name}"[:15]
    dev = "veth0"
    script = SCRIPTS[name].replace("DEV", dev)
    _sh("ip", "netns", "add", ns)
    try:
        _sh("ip", "-n", ns, "link", "add", dev, "type", "veth", "peer", "name", "veth1")
        _sh("ip", "-n", ns, "link", "set", dev, "up")
        for line in script.splitlines():
            _sh("ip", "netns", "exec", ns, *line.split())
        qdiscs = _sh("ip", "netns", "exec", ns, "tc", "-s", "-d", "-r", "qdisc", "show", "dev", dev)
        classes = _sh("ip", "netns", "exec", ns, "tc", "-s", "-d", "class", "show", "dev", dev)
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False, timeout=20)
    ours = _core.import_config("tc", script)
    derived = dict(ours["derived"])
    if name.startswith("tbf"):
        m = re.search(r"burst (\S+)/\d+ .* limit (\S+)", qdiscs)
        assert m, qdiscs
        # tc prints the burst the kernel holds (ticks back to bytes).
        assert _size(m.group(1)) == int(derived["tc_burst"].rstrip("B"))
        assert _size(m.group(2)) == int(derived["limit"].rstrip("B"))
    elif name in ("pfifo", "bfifo"):
        m = re.search(r"limit (\S+)", qdiscs)
        assert m, qdiscs
        kernel = m.group(1)
        want = derived["limit"]
        if kernel.endswith("p"):
            assert kernel == want
        else:
            assert _size(kernel) == int(want.rstrip("B"))
    else:
        # Each kernel class line against qoslab's class of the same id.
        rows = {}
        for v in (v for k, v in ours["derived"] if k == "class"):
            cid = re.search(r"id=(\S+)", v).group(1)
            rows[cid] = v
        kernel = re.findall(r"class htb 1:(\w+) .*?burst (\S+)/\d+ .*?cburst (\S+)/\d+", classes)
        assert len(kernel) == len(rows), (classes, rows)
        for cid, burst, cburst in kernel:
            row = rows[cid]
            # tc prints the bucket the kernel holds, in bytes at the rate
            # (tc_calc_xmitsize: rate x buffer time, rounded down).
            f = dict(x.split("=", 1) for x in row.split(" ") if "=" in x and "[" not in x)
            for printed, rate, buf in (
                (burst, "rate", "buffer_ns"),
                (cburst, "ceil", "cbuffer_ns"),
            ):
                bytes_ps = _core.parse_rate(f[rate]) // 8
                assert _size(printed) == bytes_ps * int(f[buf]) // 10**9, (cid, printed, row)
        for cid, quantum in re.findall(r"class htb 1:(\w+) .*?quantum (\d+)", classes):
            assert f"quantum={quantum} " in rows[cid], (cid, quantum, rows[cid])
        for leaf, limit in re.findall(r"qdisc \w+ \w+: parent 1:(\w+) limit (\S+)", qdiscs):
            want = f"limit={limit}" if limit.endswith("p") else f"limit={_size(limit)}B"
            assert want in rows[leaf], (leaf, limit, rows[leaf])
    # The kernel's own show output imports to the same derived values.
    back = _core.import_config("tc", qdiscs + classes)
    back_derived = dict(back["derived"])
    for k in ("limit", "rate"):
        if k in derived:
            assert back_derived[k] == derived[k], (k, back_derived[k], derived[k])
    if "tc_burst" in derived:
        # tc prints the bucket rounded down (1539b for 'buffer 1540' at
        # 180kbit); imported, that printed value is the burst.
        assert back_derived["burst"] == derived["tc_burst"]
