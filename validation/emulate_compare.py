#!/usr/bin/env python3
"""Simulated vs emulated (qoslab's conditioners) vs kernel qdisc, for the same scenarios.

For each case it runs the scenario three ways on this machine and writes the table into
docs/validation.md (between the ``emulate`` markers) and the figures into
validation/emulate_results.json:

- **sim**: ``qoslab.simulate`` (the simulator's TCP models);
- **emu**: ``qoslab.emulate`` — real Linux TCP (iperf3) in namespaces through qoslab's
  userspace forwarder, i.e. the same qoslab-core conditioner code as the simulator;
- **kernel**: ``qoslab.emulate(backend="kernel")`` — the same, with the policy done by
  the kernel's own qdisc (tbf, htb) at the same place; policers have no kernel column
  (this kernel has no police action).

Checks (stated in the document, each can fail): userspace vs kernel goodput within
±3 % and ping median within ±10 %; where sim and emu differ by more than 10 % the
table marks it (that gap is the simulator-fidelity work, not something to tune here).

Run (root, after scripts/setup.sh): ``.venv/bin/python validation/emulate_compare.py``
(about 6 minutes; ``--case NAME`` for one, ``--render`` to rewrite the document from the
stored JSON without running anything, ``--resim`` to re-run only the simulated column).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import doc_section  # beside this script

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "emulate_results.json"
DOC = ROOT / "docs" / "validation.md"
BEGIN, END = "<!-- emulate:begin -->", "<!-- emulate:end -->"

CASES = [
    ("scenarios/example.toml", "README example: police 10 Mbit/s, Bc = CIR/32, 2 CUBIC flows"),
    ("validation/emulate/tbf20-4cubic.toml", "tbf 20 Mbit/s, 4 CUBIC, RTT 10 ms"),
    ("validation/emulate/tbf500-4cubic.toml", "tbf 500 Mbit/s, 4 CUBIC, RTT 10 ms"),
    (
        "validation/emulate/tbf10-lat50-1cubic.toml",
        "tbf 10 Mbit/s latency 50 ms, 1 CUBIC, RTT 40 ms",
    ),
    ("validation/emulate/htb5-pfifo-2cubic.toml", "htb 5 Mbit/s + pfifo 100, 2 CUBIC, RTT 20 ms"),
    ("scenarios/trees/linux-htb-bfifo.toml", "htb 2 Mbit/s + bfifo 30 kB, 4 TCP + 2 UDP floods"),
    (
        "validation/emulate/police20-bc625k-4cubic.toml",
        "police 20 Mbit/s Bc 625 kB, 4 CUBIC, RTT 10 ms",
    ),
    (
        "validation/emulate/police10-bc12k-1cubic.toml",
        "police 10 Mbit/s Bc 12.5 kB, 1 CUBIC, RTT 50 ms",
    ),
    (
        "validation/emulate/police1500k-bc100k-1cubic.toml",
        "police 1.5 Mbit/s Bc 100 kB, 1 CUBIC, RTT 100 ms (the USC-NSL lab set-up)",
    ),
]

# What we found when a sim-emu gap exceeded 10 %: the diagnosis, per case and figure.
# Written after reading the runs (captures, nstat, the simulator's traces), never a
# reason to tune a parameter.
DIAGNOSES: dict[str, str] = {
    "police10-bc12k-1cubic": (
        "Now the simulator is below real Linux through a bucket of 8 frames at 50 ms"
        " (1.69 against 1.86 Mbit/s). It was above (1.92) until the TCP changes of"
        " 2026-11-24 evening (the ACK ending a recovery may start the next one, the"
        " retransmission timer on jiffies, iperf3's cookie; which of them moved it was"
        " not isolated). The policer ground truth's nearest case,"
        " `c10-bc10ms-rtt50-wauto-f1-cubic`, misses the same way (1.69 against 2.11)."
        " Not diagnosed further; nothing was tuned here. (An earlier run of this table"
        " showed 7.8 Mbit/s real: the emulator's cubic then started as the host's"
        " default bbr and stayed paced; the congestion control is now set on the"
        " route, so sockets are born cubic.)"
    ),
}


def figures(summary: dict[str, Any]) -> dict[str, Any]:
    flows = summary["flows"]
    data = [f for f in flows if f["protocol"] in ("tcp", "udp")]
    tcp = [f for f in flows if f["protocol"] == "tcp"]
    ping = [f for f in flows if f["protocol"] == "ping"]
    # per connection: the simulator's count, or the kernel's tcpi_total_rto
    rtos = sum(f["timeouts"] for f in tcp)
    return {
        "goodput_mbps": round(sum(f["goodput_bps"] for f in data) / 1e6, 3),
        "tcp_goodput_mbps": round(sum(f["goodput_bps"] for f in tcp) / 1e6, 3),
        "retransmits": sum(f["retransmits"] for f in tcp),
        "rtos": rtos,
        "ping_median_ms": ping[0]["rtt_ms"]["p50"]
        if ping and ping[0]["rtt_ms"]["samples"]
        else None,
        "drops": sum(p["drops"]["packets"] for p in summary["policies"]),
        "forwarder_late_p99_us": (
            (summary.get("emulation", {}).get("forwarder", {}).get("timing") or {}).get("p99_ns", 0)
            / 1e3
            if summary.get("mode") == "emulate"
            else None
        ),
    }


def run_case(path: str) -> dict[str, Any]:
    import qoslab
    from qoslab.emulate import emulate

    out: dict[str, Any] = {"case": path}
    out["sim"] = figures(qoslab.simulate(ROOT / path).summary)
    out["emu"] = figures(emulate(ROOT / path).summary)
    plan = qoslab.emulate.emulation_plan(ROOT / path)[0]
    if all(p.get("kernel") for p in plan["policies"]):
        out["kernel"] = figures(emulate(ROOT / path, backend="kernel").summary)
    else:
        out["kernel"] = None
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def _fmt(v: Any, nd: int = 2) -> str:
    if v is None:
        return "–"  # noqa: RUF001 (the en dash of an empty table cell, on purpose)
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def render(doc: dict[str, Any]) -> str:
    lines = [
        BEGIN,
        "## Simulated vs emulated vs kernel qdisc (`qoslab emulate`)",
        "",
        "Regenerate (root, ~6 min): `.venv/bin/python validation/emulate_compare.py`;"
        " the simulated column alone (after a simulator change, no root): `... --resim`."
        f" Measured {doc['date']} on kernel {doc['kernel']}, {doc['cpus']} CPUs, iperf3"
        f" {doc['iperf3']}. Frames are wire-sized (TSO/GSO/GRO off); the emulated links"
        " and delays are qoslab's forwarder in every emu column; **emu** runs the policy in"
        " qoslab-core inside the forwarder, **kernel** in the kernel's own qdisc on a veth at"
        " the same place (no police action in this kernel: policers have no kernel column).",
        "",
        "Checks: userspace vs kernel goodput within ±3 % and ping median within ±10 %"
        " (**ok**/**MISS**); sim vs emu goodput beyond ±10 % is marked **gap** — the"
        " simulator-fidelity work of the policer issue, explained below, never tuned away.",
        "",
        "The last column is how late the forwarder's wake-ups were (p99). Rates do not"
        " depend on it (releases are computed on a virtual clock), delays do: on this VM an"
        " idle machine wakes the forwarder later (0.5-0.8 ms p99 measured on the README"
        " example at load 0.3) than a busy one (43 µs at load 7), the host descheduling"
        " idle vCPUs; a busy-poll mode is the line-rate issue's work.",
        "",
        "| case | goodput Mbit/s sim / emu / kernel | emu÷sim | emu vs kernel | retransmits"
        " sim / emu / kernel | RTOs sim / emu / kernel | ping median ms sim / emu / kernel"
        " | ping emu vs kernel | drops sim / emu / kernel | forwarder late p99 µs |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in doc["rows"]:
        s, e, k = row["sim"], row["emu"], row["kernel"] or {}
        r = _ratio(e["goodput_mbps"], s["goodput_mbps"])
        gap = "" if r is None or abs(r - 1) <= 0.10 else " **gap**"
        gk = _ratio(e["goodput_mbps"], k.get("goodput_mbps"))
        gk_s = (
            "–"  # noqa: RUF001
            if gk is None
            else f"{(gk - 1) * 100:+.1f} % " + ("**ok**" if abs(gk - 1) <= 0.03 else "**MISS**")
        )
        pk = _ratio(e["ping_median_ms"], k.get("ping_median_ms"))
        pk_s = (
            "–"  # noqa: RUF001
            if pk is None
            else f"{(pk - 1) * 100:+.1f} % " + ("**ok**" if abs(pk - 1) <= 0.10 else "**MISS**")
        )

        def three(key: str, nd: int = 2, cols: tuple[Any, ...] = (s, e, row["kernel"])) -> str:
            return " / ".join(_fmt(x.get(key) if x else None, nd) for x in cols)

        lines.append(
            f"| `{Path(row['case']).stem}` {row['what']} | {three('goodput_mbps')} |"
            f" {_fmt(r, 3)}{gap} | {gk_s} | {three('retransmits')} | {three('rtos')} |"
            f" {three('ping_median_ms')} | {pk_s} | {three('drops')} |"
            f" {_fmt(e.get('forwarder_late_p99_us'), 1)} |"
        )
    lines += ["", "### Where sim and emu differ by more than 10 %", ""]
    any_gap = False
    for row in doc["rows"]:
        r = _ratio(row["emu"]["goodput_mbps"], row["sim"]["goodput_mbps"])
        if r is not None and abs(r - 1) > 0.10:
            any_gap = True
            name = Path(row["case"]).stem
            lines.append(
                f"- `{name}`: emu/sim = {r:.3f}. {DIAGNOSES.get(name, 'not yet diagnosed.')}"
            )
    if not any_gap:
        lines.append("- none in this run.")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def write_doc(section: str) -> None:
    doc_section.replace_section(DOC, BEGIN, END, section)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", help="run only the case whose file stem is this")
    ap.add_argument("--render", action="store_true", help="rewrite the doc from the JSON only")
    ap.add_argument(
        "--resim",
        action="store_true",
        help="re-run only the simulator column of the stored rows (no root), then render",
    )
    args = ap.parse_args()
    if args.render or args.resim:
        doc = json.loads(RESULTS.read_text())
        if args.resim:
            import qoslab

            for row in doc["rows"]:
                row["sim"] = figures(qoslab.simulate(ROOT / row["case"]).summary)
            tmp = RESULTS.with_suffix(".tmp")
            tmp.write_text(json.dumps(doc, indent=2) + "\n")
            os.replace(tmp, RESULTS)
        write_doc(render(doc))
        return 0
    from qoslab.emulate import preflight

    preflight()
    old = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"rows": []}
    rows = {r["case"]: r for r in old["rows"]}
    for path, what in CASES:
        if args.case and Path(path).stem != args.case:
            continue
        t = time.monotonic()
        print(f"{path} ...", file=sys.stderr, flush=True)
        row = run_case(path)
        row["what"] = what
        rows[path] = row
        print(
            f"  sim {row['sim']['goodput_mbps']} emu {row['emu']['goodput_mbps']}"
            f" kernel {(row['kernel'] or {}).get('goodput_mbps')} ({time.monotonic() - t:.0f} s)",
            file=sys.stderr,
        )
    import subprocess

    doc = {
        "date": time.strftime("%Y-%m-%d"),
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "iperf3": subprocess.run(
            ["iperf3", "--version"], capture_output=True, text=True
        ).stdout.split()[1],
        "rows": [rows[p] for p, _ in CASES if p in rows],
    }
    for r in doc["rows"]:
        r["what"] = dict(CASES)[r["case"]]
    tmp = RESULTS.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, RESULTS)
    write_doc(render(doc))
    print(f"wrote {RESULTS.relative_to(ROOT)} and {DOC.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
