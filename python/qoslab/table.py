"""The terminal table of ``qoslab run`` (and its HTML twin for Jupyter).

The layout imitates iperf3's client output, which a network engineer reads
at a glance: a line per flow per second, ``[SUM]`` lines, then the totals.
Flows in both directions are shown as ``iperf3 --bidir`` shows them: a
``[Role]`` column, ``TX-C`` for uploads (the client sends) and ``RX-C`` for
downloads, and a ``[SUM]`` per direction. Above :data:`SUMMARY_FLOWS` data
flows (or with ``per_flow=False``) only the totals are printed: one line per
direction and traffic label, and the ``[SUM]`` lines. Those iperf3 lines are
kept as iperf3 prints them (fixed columns a reader and a script know) and cut
to the terminal's width (``width``). The summary tables after them (RTT,
policies, policy-tree classes; ``qoslab compare``'s side-by-side table) are
rich tables (:func:`rich_tables`): columns sized to their contents, squeezed
or cut to ``width``, bold headers on a colour terminal only (never with
``NO_COLOR`` or off a terminal). rich is imported only when a table is drawn.

Built on the summary dict and the plain values of the goodput series only
(:meth:`qoslab.results.SimulationResult.columns`): printing a run's table
imports neither pandas nor NumPy.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from qoslab.results import SimulationResult

__all__ = [
    "SUMMARY_FLOWS",
    "bytes_rate_warning",
    "fmt_bytes",
    "fmt_rate",
    "print_tables",
    "rate_unit_warnings",
    "render",
    "render_html",
    "rich_tables",
    "terminal",
]

#: More data flows than this: totals only, unless ``per_flow=True``.
SUMMARY_FLOWS = 16

_ROLE = {"upload": "TX-C", "download": "RX-C"}


def _num(v: float) -> str:
    """iperf3's number width: 2 decimals below 10, 1 below 100, else none."""
    if v < 9.995:
        return f"{v:4.2f}"
    if v < 99.95:
        return f"{v:4.1f}"
    return f"{v:4.0f}"


def fmt_bytes(n: float) -> str:
    """iperf3 Transfer: binary units (1 MByte = 2**20 bytes)."""
    for unit, scale in (("GBytes", 2**30), ("MBytes", 2**20), ("KBytes", 2**10)):
        if n >= scale:
            return f"{_num(n / scale)} {unit}"
    return f"{_num(n)} Bytes"


def fmt_rate(bps: float) -> str:
    """iperf3 Bitrate: decimal units."""
    for unit, scale in (("Gbits/sec", 1e9), ("Mbits/sec", 1e6), ("Kbits/sec", 1e3)):
        if bps >= scale:
            return f"{_num(bps / scale)} {unit}"
    return f"{_num(bps)} bits/sec"


def _ident(ident: str, role: str | None) -> str:
    return f"[{ident:>3}]" if role is None else f"[{ident:>3}][{role}]"


def _total_line(ident: str, flows: list[dict[str, Any]], duration: float, role: str | None) -> str:
    """A ``[SUM]``-style line over ``flows``: their bytes and retransmits,
    and the sum of their goodputs (iperf3's figure)."""
    return _line(
        ident,
        0.0,
        duration,
        sum(f["bytes"] for f in flows),
        str(sum(f["retransmits"] for f in flows)),
        sum(f["goodput_bps"] for f in flows),
        role=role,
    )


def _line(
    ident: str,
    t0: float,
    t1: float,
    nbytes: float,
    retr: str,
    bps: float | None = None,
    role: str | None = None,
) -> str:
    if bps is None:
        bps = nbytes * 8 / (t1 - t0) if t1 > t0 else 0.0
    interval = f"{t0:6.2f}-{t1:<6.2f}"
    return (
        f"{_ident(ident, role)} {interval} sec  {fmt_bytes(nbytes):>12}  "
        f"{fmt_rate(bps):>15}  {retr:>4}"
    )


def _header(bidir: bool) -> str:
    ident = "[ ID][Role]" if bidir else "[ ID]"
    return f"{ident} Interval           Transfer     Bitrate         Retr"


def _values(col: Any) -> list[Any]:
    """A column (NumPy array, engine ``Column`` or sequence) as a list of
    Python numbers."""
    return col.tolist() if hasattr(col, "tolist") else list(col)


def _per_second(r: SimulationResult, groups: list[tuple[str | None, list[int]]]) -> list[list[str]]:
    """Per-flow lines for each whole second (then a ``[SUM]`` per
    direction), from the raw goodput series, when it was recorded at an
    interval that divides one second: bytes delivered and segments
    retransmitted in that second (iperf3's interval ``Retr``). Plain Python
    over the column values: exact integer sums, which is what the float64
    sums of NumPy gave (every byte count is below 2**53), without NumPy's
    import (a third of a short ``qoslab run``)."""
    g = r.columns("goodput")
    interval_ns = r.record_interval_ns
    if not len(g.get("time_ns", ())) or interval_ns <= 0 or 1_000_000_000 % interval_ns:
        return []
    duration_ns = r.duration_ns
    seconds = max(1, -(-duration_ns // 1_000_000_000))
    flow = _values(g["flow"])
    ids = [i for _, grp in groups for i in grp]
    width = int(max([*ids, *flow], default=0)) + 1
    nbytes = [[0] * width for _ in range(seconds)]
    retr = [[0] * width for _ in range(seconds)]
    last = seconds - 1
    for t, f, b, x in zip(
        _values(g["time_ns"]), flow, _values(g["bytes"]), _values(g["retransmits"]), strict=True
    ):
        # the second ending at or after t: a row at t covers (t - interval, t]
        s = min(max((int(t) - 1) // 1_000_000_000, 0), last)
        nbytes[s][f] += int(b)
        retr[s][f] += int(x)
    blocks = []
    for s in range(seconds):
        t0, t1 = float(s), min(float(s + 1), duration_ns / 1e9)
        nb, rt = nbytes[s], retr[s]
        lines = []
        for role, grp in groups:
            for i in grp:
                lines.append(_line(str(i), t0, t1, nb[i], str(rt[i]), role=role))
            if len(grp) > 1 or (role is not None and len(groups) > 1):
                total = str(sum(rt[i] for i in grp))
                lines.append(_line("SUM", t0, t1, sum(nb[i] for i in grp), total, role=role))
        blocks.append(lines)
    return blocks


def _fit(lines: Iterable[str], width: int | None) -> list[str]:
    """Each line cut to ``width`` columns (an ellipsis marks the cut)."""
    if not width or width < 20:
        return list(lines)
    return [ln if len(ln) <= width else ln[: width - 1] + "…" for ln in lines]


def _policy_header(s: dict[str, Any]) -> list[str]:
    """Each policy with its effective parameters (the rates and sizes as the
    conditioner uses them, e.g. ``cir=400mbit`` for ``"50Mbps"``), its
    classes' parameters and the warnings tc and the kernel would print."""
    from qoslab._params import params_lines

    out = []
    for p in s["policies"]:
        params = p["params"]
        shown = {k: v for k, v in params.items() if k not in ("class", "warning")}
        head, *items = params_lines(shown)
        out.append(f"policy {p['name']}: {params.get('kind', p['kind'])} {head}".rstrip())
        out.extend(f"  {item}" for item in items)
        for c in params.get("class", []) if isinstance(params.get("class"), list) else []:
            out.append(f"  class {c}")
        warnings = params.get("warning", [])
        for w in [warnings] if isinstance(warnings, str) else warnings:
            out.append(f"  warning: {w}")
    return out


def _groups_by_direction(data: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    out = []
    for direction in ("upload", "download"):
        flows = [f for f in data if f.get("direction", "upload") == direction]
        if flows:
            out.append((direction, sorted(flows, key=lambda f: (_natural(f["label"]), f["id"]))))
    return out


def _label_of(f: dict[str, Any]) -> str:
    return f["label"] or f["protocol"]


def _natural(text: str) -> list[Any]:
    """Sort key putting "C2" before "C10", as a person lists labels."""
    return [(0, int(t)) if t.isdigit() else (1, t) for t in re.split(r"(\d+)", text)]


def render(
    r: SimulationResult,
    *,
    per_flow: bool | None = None,
    width: int | None = None,
    warnings: Iterable[str] = (),
    color: bool = False,
) -> str:
    """The ``qoslab run`` table. ``per_flow``: per-flow and per-second lines
    (default: when there are at most :data:`SUMMARY_FLOWS` data flows);
    ``width``: cut lines to this many columns; ``warnings``: printed in the
    header (e.g. :func:`rate_unit_warnings`); ``color``: bold headers
    (a terminal's escape codes; rich drops them when ``NO_COLOR`` is set)."""
    s = r.summary
    out: list[str] = []
    data = [f for f in s["flows"] if f["protocol"] != "ping"]
    if s.get("mode") == "emulate":
        how = f"emulated ({s['emulation']['backend']} policies, real Linux TCP)"
    else:
        how = "simulated"
    out.append(f"scenario {s['scenario']}  seed {s['seed']}  {s['duration_s']:g} s {how}")
    out.extend(_policy_header(s))
    out.extend(f"warning: {w}" for w in warnings)
    dirs = _groups_by_direction(data)
    bidir = len(dirs) > 1
    detail = per_flow if per_flow is not None else len(data) <= SUMMARY_FLOWS
    header = _header(bidir)
    roles: list[tuple[str | None, list[int]]] = [
        (_ROLE[d] if bidir else None, [f["id"] for f in flows]) for d, flows in dirs
    ]
    if not detail and data:
        out.append(
            f"{len(data)} flows: totals per direction and traffic label "
            "(--per-flow prints every flow and second)"
        )
    out.append(header)
    if detail:
        blocks = _per_second(r, roles)
        if blocks:
            for b in blocks:
                out.extend(b)
                if bidir:
                    out.append("- " * (len(header) // 2))
            if not bidir:
                out.append("- " * (len(header) // 2))
            out.append(header)
    duration = float(s["duration_s"])
    for direction, flows in dirs:
        role = _ROLE[direction] if bidir else None
        labels = sorted({_label_of(f) for f in flows}, key=_natural)
        if detail:
            for f in flows:
                line = _line(
                    str(f["id"]),
                    f["start_s"],
                    f["end_s"],
                    f["bytes"],
                    str(f["retransmits"]),
                    role=role,
                )
                label = f" {f['label']}" if f["label"] not in ("", f["protocol"]) else ""
                out.append(f"{line}  {f['protocol']}{label} {f['from']}->{f['to']}")
        elif len(labels) > 1:
            for lab in labels:
                grp = [f for f in flows if _label_of(f) == lab]
                line = _total_line("GRP", grp, duration, role)
                out.append(f"{line}  {lab} ({len(grp)} flows)")
        if len(flows) > 1 or bidir or not detail:
            # The [SUM] bitrate is the sum of the flows' goodputs (iperf3's figure).
            out.append(_total_line("SUM", flows, duration, role))
    if data:
        out.append(f"Jain's fairness index: {s['jain_fairness']:.3f}")
    tables = [*_rtt_table(s, detail), *_policy_table(s)]
    text = "\n".join(_fit(out, width))
    if tables:
        text += "\n" + rich_tables(tables, width, color)
    return text


#: A summary table: (title line or "", [(column, "left"|"right"|"wrap")], rows of
#: cells). "left" text is cut with an ellipsis when the width is short, "wrap"
#: text (descriptions, verdicts) goes on to more lines, "right" numbers never give way.
Table = tuple[str, list[tuple[str, str]], list[list[str]]]


def rich_tables(tables: Iterable[Table], width: int | None = None, color: bool = False) -> str:
    """``tables`` drawn by rich, each after a blank line and its title line:
    a header underlined, columns as wide as their contents, text columns
    cut with an ellipsis (``"wrap"`` columns wrapped, numbers never) when
    ``width`` is too narrow. Plain text unless ``color``."""
    import io
    import os

    from rich import box
    from rich.console import Console
    from rich.table import Table as RichTable

    color = color and not os.environ.get("NO_COLOR")  # https://no-color.org: plain text
    tables = list(tables)
    buf = io.StringIO()
    # Off a terminal the width is unbounded: a pipe gets whole lines, as before.
    console = Console(
        file=buf,
        width=width if width and width >= 20 else _unbounded(tables),
        force_terminal=color,
        color_system="standard" if color else None,
        highlight=False,
        emoji=False,
        markup=False,
        soft_wrap=False,
    )
    for title, columns, rows in tables:
        console.print()
        if title:
            console.print(title)
        t = RichTable(
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            padding=(0, 1, 0, 0),  # two spaces between columns (with the box's one)
            header_style="bold" if color else "",
        )
        for k, (name, align) in enumerate(columns):
            text = align in ("left", "wrap")
            # numbers keep every digit: only text columns give way to the width
            widest = max([len(name), *(len(r[k]) for r in rows)])
            t.add_column(
                name,
                justify="left" if text else "right",
                no_wrap=align != "wrap",  # "wrap": prose kept whole, on more lines
                overflow="fold" if align == "wrap" else "ellipsis",
                min_width=None if text else widest,
            )
        for row in rows:
            t.add_row(*row)
        console.print(t)
    return "\n".join(ln.rstrip() for ln in buf.getvalue().splitlines())


def _unbounded(tables: list[Table]) -> int:
    """A console width no line of ``tables`` reaches (every cell on one
    line, every character counted as two columns, tabs expanded): the
    tables come out as with no limit at all. Not simply a huge width: rich
    pads each printed line to the console's width before the trailing
    spaces are stripped, which at 100,000 columns was most of the time a
    ``qoslab run`` spent drawing its table."""
    widest = 20
    for title, columns, rows in tables:
        cells = [
            max([len(name), *(len(r[k].expandtabs()) for r in rows)])
            for k, (name, _) in enumerate(columns)
        ]
        widest = max(widest, 2 * len(title.expandtabs()), sum(2 * c + 3 for c in cells))
    return widest + 1


def preload() -> Callable[[], None]:
    """Starts importing rich (what :func:`rich_tables` draws with: about a
    fifth of a short ``qoslab run``) in a thread, and returns the function
    that waits for it. ``qoslab run`` calls it as the simulation starts:
    the engine runs with the GIL released, so on a machine with a core to
    spare the import costs no wall time. The caller waits before it
    imports anything else, so the two threads never import at once; an
    import error is left for the import that draws the table to raise."""
    import threading

    def load() -> None:
        # The modules rich_tables imports (a failure: raised there, not here).
        with contextlib.suppress(Exception):
            import rich.box
            import rich.console
            import rich.table  # noqa: F401

    t = threading.Thread(target=load, name="qoslab-preload-rich", daemon=True)
    t.start()
    return t.join


def terminal() -> tuple[int | None, bool]:
    """Standard output's width and whether to colour it: the terminal's
    columns and bold headers on a terminal; off one (a pipe, a file), no
    limit and plain text, so ``| grep`` sees whole lines."""
    import shutil
    import sys

    if not sys.stdout.isatty():
        return None, False
    return shutil.get_terminal_size().columns, True


def print_tables(tables: Iterable[Table]) -> None:
    """``tables`` printed to standard output by :func:`rich_tables`, fitted
    to the terminal (:func:`terminal`)."""
    width, color = terminal()
    print(rich_tables(tables, width, color).lstrip("\n"))


def _rtt_table(s: dict[str, Any], detail: bool) -> list[Table]:
    rtt_flows = [f for f in s["flows"] if f["rtt_ms"]["samples"]]
    if not rtt_flows:
        return []
    num = [(c, "right") for c in ("min", "mean", "p50", "p95", "max")]
    if detail:
        rows = []
        for f in rtt_flows:
            m = f["rtt_ms"]
            rows.append(
                [
                    f"[{f['id']:>3}] {f['protocol']}",
                    *(f"{m[k]:.2f}" for k in ("min", "mean", "p50", "p95", "max")),
                    str(m["samples"]),
                ]
            )
        return [("", [("RTT (ms)", "left"), *num, ("samples", "right")], rows)]
    # Percentiles do not add up across flows: min, sample-weighted mean, max.
    rows = []
    for lab in sorted({_label_of(f) for f in rtt_flows}, key=_natural):
        grp = [f["rtt_ms"] for f in rtt_flows if _label_of(f) == lab]
        n = sum(m["samples"] for m in grp)
        mean = sum(m["mean"] * m["samples"] for m in grp) / n
        rows.append(
            [
                lab,
                str(len(grp)),
                f"{min(m['min'] for m in grp):.2f}",
                f"{mean:.2f}",
                f"{max(m['max'] for m in grp):.2f}",
                str(n),
            ]
        )
    cols = [("RTT (ms) by label", "left"), ("flows", "right")]
    return [
        (
            "",
            [*cols, ("min", "right"), ("mean", "right"), ("max", "right"), ("samples", "right")],
            rows,
        )
    ]


def _policy_table(s: dict[str, Any]) -> list[Table]:
    if not s["policies"]:
        return []
    cols = [("policy", "left"), ("kind", "left")] + [
        (c, "right") for c in ("packets", "dropped", "drop%", "green", "yellow", "red", "maxq pkts")
    ]
    rows = []
    for p in s["policies"]:
        n = p["packets_in"]
        d = p["drops"]["packets"]
        c = p["colors"]
        rows.append(
            [
                p["name"],
                p["kind"],
                str(n),
                str(d),
                f"{100 * d / n:.1f}" if n else "-",
                str(c["green"]["packets"]),
                str(c["yellow"]["packets"]),
                str(c["red"]["packets"]),
                str(p["max_queue_packets"]),
            ]
        )
    out: list[Table] = [("", cols, rows)]
    for p in s["policies"]:
        if len(p["classes"]) > 1:
            out.append(_class_table(p))
    return out


def _class_table(p: dict[str, Any]) -> Table:
    """One line per class of a policy tree, indented under its parent, with
    the user's class ids (``tc -s class show``): its rate, what it sent
    (bit/s over the run), packets in/sent/dropped and its largest queue."""
    classes = p["classes"]
    depth = [0] * len(classes)
    for i, c in enumerate(classes):
        if c["parent"] is not None:
            depth[i] = depth[c["parent"]] + 1
    cols = [("class", "left"), ("kind", "left")] + [
        (c, "right") for c in ("rate", "bit/s out", "in", "out", "dropped", "drop%", "maxq pkts")
    ]
    rows = []
    for d, c in zip(depth, classes, strict=True):
        pin = c["packets_in"]
        drop = c["drops"]["packets"]
        rows.append(
            [
                f"{'  ' * d}{c['name']}",
                c["kind"],
                str(c["params"].get("rate", "")),
                fmt_rate(c["throughput_bps"]).strip(),
                str(pin),
                str(c["packets_out"]),
                str(drop),
                f"{100 * drop / pin:.1f}" if pin else "-",
                str(c["max_queue_packets"]),
            ]
        )
    return (f"{p['name']} classes", cols, rows)


#: A rate written with tc's ``bps`` unit (bytes per second), any prefix/case.
_BPS = re.compile(r"""(\w+)\s*=\s*["']\s*([0-9.]+\s*(?:[kmgt]i?)?bps)\s*["']""", re.IGNORECASE)


def rate_unit_warnings(text: str, filename: str) -> list[str]:
    """A warning per rate written in ``bps`` (``cir = "50Mbps"``): tc reads
    ``bps`` as *bytes* per second (tc(8), "RATES"), so 50Mbps is 400 Mbit/s,
    not the 50 Mbit/s a network engineer usually means."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        for m in _BPS.finditer(code):
            key, value = m.group(1), m.group(2)
            w = bytes_rate_warning(value)
            if w is not None:
                out.append(f'{filename}:{lineno}: {key} = "{value}" {w}')
    return out


#: A whole value in tc's ``bps`` unit (``"50Mbps"``, ``"1 kibps"``).
_BPS_VALUE = re.compile(r"[0-9.]+\s*(?:[kmgt]i?)?bps", re.IGNORECASE)


def bytes_rate_warning(value: str) -> str | None:
    """For a rate in tc's ``bps`` unit (bytes per second), what it means in
    bits: ``is tc's bytes per second: 400 Mbits/sec (400000000 bit/s); for
    bits write "50Mbit"``; ``None`` for any other value."""
    from qoslab import _core

    value = value.strip()
    if not _BPS_VALUE.fullmatch(value):
        return None
    try:
        bps = _core.parse_rate(value)
    except ValueError:
        return None
    return (
        f"is tc's bytes per second: {fmt_rate(bps).strip()} ({bps} bit/s); "
        f'for bits write "{value[: -len("bps")].strip()}bit"'
    )


def render_html(r: SimulationResult) -> str:
    """A summary for Jupyter: one row per flow, one per policy."""
    s = r.summary
    import html

    e = html.escape

    def table(head: list[str], rows: list[list[Any]]) -> str:
        th = "".join(f"<th>{e(h)}</th>" for h in head)
        body = "".join(
            "<tr>" + "".join(f"<td>{e(str(v))}</td>" for v in row) + "</tr>" for row in rows
        )
        return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"

    flows = [
        [
            f["id"],
            f["label"],
            f["protocol"],
            f"{f['from']}->{f['to']}",
            f.get("direction", ""),
            fmt_rate(f["goodput_bps"]).strip(),
            f["bytes"],
            f["retransmits"],
            f["rtt_ms"]["mean"] if f["rtt_ms"]["samples"] else "",
        ]
        for f in s["flows"]
    ]
    policies = [
        [
            p["name"],
            p["kind"],
            p["packets_in"],
            p["drops"]["packets"],
            p["max_queue_packets"],
        ]
        for p in s["policies"]
    ]
    parts = [
        f"<p><b>{e(s['scenario'])}</b> seed {s['seed']}, {s['duration_s']:g} s; "
        f"sum goodput {e(fmt_rate(s['sum_goodput_bps']).strip())}, "
        f"Jain's fairness {s['jain_fairness']:.3f}</p>",
        table(
            [
                "id",
                "label",
                "protocol",
                "path",
                "direction",
                "goodput",
                "bytes",
                "retransmits",
                "rtt_ms.mean",
            ],
            flows,
        ),
    ]
    if policies:
        parts.append(
            table(["policy", "kind", "packets_in", "drops.packets", "max_queue_packets"], policies)
        )
    return "".join(parts)
