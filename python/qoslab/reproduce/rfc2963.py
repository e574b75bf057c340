"""O. Bonaventure, S. De Cnodder, RFC 2963 (October 2000), Appendix A: ten
customers behind trTCM markers, five of them with a trRAS (Table A.3) or a
G-trRAS (Tables A.5, A.6) in front of the marker, three-colour RIO on a
70 Mbit/s bottleneck."""

from __future__ import annotations

from typing import Any

from qoslab.reproduce.checks import Checks
from qoslab.reproduce.measures import rel
from qoslab.reproduce.model import Assumption, Case, Experiment, Published, Reference, Variant
from qoslab.results import SimulationResult

WARMUP_S = 2.0  # "the first two seconds are not used to gather TCP statistics"
COLOURS = ("green", "yellow", "red")


def customer_rates(r: SimulationResult) -> dict[int, dict[str, float]]:
    """Per customer i, in Mbit/s over the same interval (after the warm-up):
    ``total`` = goodput of its workstations, and ``green`` / ``yellow`` =
    the total split in the proportions its marker coloured the bytes it
    forwarded in that interval (the RFC's green and yellow throughputs add
    up with red to the total; the marker's counts include the packets the
    bottleneck later drops, so the split assumes the RIO's losses do not
    change the proportions - see the assumption "colour basis")."""
    dur = float(r.summary["duration_s"])
    span = dur - WARMUP_S
    label = {f["id"]: f["label"] for f in r.summary["flows"]}
    g = r.goodput
    g = g[g["time_ns"] > WARMUP_S * 1e9]
    out: dict[int, dict[str, float]] = {}
    for fid, d in g.groupby("flow"):
        i = int(label[fid].split()[0][1:])
        row = out.setdefault(i, {"total": 0.0})
        row["total"] += float(d["bytes"].sum()) * 8 / span / 1e6
    col = r.colors
    if not len(col):
        return out
    col = col[col["time_ns"] > WARMUP_S * 1e9]
    names = [p["name"] for p in r.summary["policies"]]  # the series' policy is an index
    for policy, d in col.groupby("policy"):
        node = names[int(policy)].split("->")[0]
        if node[:1] != "m" or not node[1:].isdigit() or int(node[1:]) not in out:
            continue
        marked = {k: float(d[f"{k}_bytes"].sum()) for k in COLOURS}
        whole = sum(marked.values())
        row = out[int(node[1:])]
        for k in COLOURS:
            row[k] = row["total"] * marked[k] / whole if whole else 0.0
    return out


TITLES = {
    "unshaped": "trTCM alone (Table A.5)",
    "trras": "trRAS + trTCM (Table A.3)",
    "g_trras": "G-trRAS + trTCM (Table A.6)",
}
#: (reference table, run, first customer): Table A.5 is the G-trRAS run's C1..C5.
TABLES = (("unshaped", "g_trras", 0), ("trras", "trras", 5), ("g_trras", "g_trras", 5))
SHAPED = range(6, 11)
UNSHAPED = range(1, 6)


def _sum(rr: dict[int, dict[str, float]], key: str, who: range) -> float | None:
    vals = [rr.get(i, {}).get(key) for i in who]
    present = [v for v in vals if v is not None]
    return None if len(present) < len(vals) else sum(present)


def check(c: Checks, ref: Reference, results: dict[str, SimulationResult]) -> None:
    rates = {run: customer_rates(r) for run, r in results.items()}
    for table, run, offset in TABLES:
        for k, row in enumerate(ref.value(f"{table}.rows")):
            cir = row[0]
            ours = rates[run].get(offset + k + 1, {})
            at = ref.value(f"{table}.at")
            for col, what in ((3, "total"), (1, "green"), (2, "yellow")):
                c.number(
                    table,
                    f"{TITLES[table]}: {what} Mbit/s at CIR {cir}",
                    Published(float(row[col]), f"{at}, row {cir} Mbps, {what}"),
                    ours.get(what),
                )
    for run, name in (("trras", "trRAS"), ("g_trras", "G-trRAS")):
        rr = rates[run]
        t_s, t_u = _sum(rr, "total", SHAPED), _sum(rr, "total", UNSHAPED)
        every = [(rr.get(i + 5, {}).get("total"), rr.get(i, {}).get("total")) for i in UNSHAPED]
        ok = all(a is not None and b is not None for a, b in every)
        c.claim(
            f"{run} vs unshaped",
            f"{name} customers' total > unshaped at every CIR (same run)",
            ref.claim(f"{run}_total"),
            " ".join(f"{a:.2f}>{b:.2f}" for a, b in every) if ok else None,
            all(a > b for a, b in every) if ok else None,  # type: ignore[operator]
            rel(t_s, t_u) if t_s is not None and t_u else None,
        )
    rr = rates["trras"]
    g_s, g_u = _sum(rr, "green", SHAPED), _sum(rr, "green", UNSHAPED)
    c.claim(
        "trras vs unshaped",
        "trRAS customers get more green than unshaped (sum over the CIRs)",
        ref.claim("trras_green"),
        None if g_s is None or g_u is None else f"{g_s:.2f} > {g_u:.2f}",
        None if g_s is None or g_u is None else g_s > g_u,
        rel(g_s, g_u) if g_s is not None and g_u else None,
    )
    t, g = rates["trras"], rates["g_trras"]
    tt, gt = _sum(t, "total", SHAPED), _sum(g, "total", SHAPED)
    c.claim(
        "g_trras vs trras",
        "G-trRAS customers' total > trRAS customers' total",
        ref.claim("g_vs_tr_total"),
        None if tt is None or gt is None else f"{gt:.2f} > {tt:.2f}",
        None if tt is None or gt is None else gt > tt,
        rel(gt, tt) if gt is not None and tt else None,
        note="our G-trRAS releases early only what the marker would colour green",
    )
    ty, gy = _sum(t, "yellow", SHAPED), _sum(g, "yellow", SHAPED)
    tg, gg = _sum(t, "green", SHAPED), _sum(g, "green", SHAPED)
    have = None not in (ty, gy, tg, gg)
    c.claim(
        "g_trras vs trras",
        "G-trRAS: more yellow, not more green than trRAS (C6..C10)",
        ref.claim("g_vs_tr_colours"),
        f"yellow {ty:.2f} -> {gy:.2f}, green {tg:.2f} -> {gg:.2f}" if have else None,
        (gy > ty and gg <= tg) if have else None,  # type: ignore[operator]
        rel(gy, ty) if have and ty else None,  # type: ignore[arg-type]
    )


def _ras_buffer(size: str) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        for pol in doc["policy"].values():
            shape = pol.get("egress", {}).get("shape")
            if shape and shape.get("kind") in ("trras", "g-trras"):
                shape["buffer"] = size

    edit.__doc__ = f"every RAS buffer = {size}"
    return edit


def _bottleneck_delay(delay: str) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        links = [lk for lk in doc["link"] if (lk["a"], lk["b"]) == ("er1", "er2")]
        if len(links) != 1:
            raise KeyError("rfc2963 scenario: no single er1 -> er2 link")
        links[0]["delay"] = delay

    edit.__doc__ = f"er1 -> er2 delay = {delay}"
    return edit


EXPERIMENT = Experiment(
    "rfc2963",
    "RFC 2963 Appendix A: trTCM vs trRAS vs G-trRAS, three-colour RIO at 70 Mbit/s",
    "rfc2963-appendix.toml",
    (
        Case("trras", "rfc2963-trras.toml", quick_s=15, series=("colors",)),
        Case("g_trras", "rfc2963-g-trras.toml", quick_s=15, series=("colors",)),
    ),
    check,
    (
        Assumption(
            "RAS buffer and thresholds",
            "buffer 65536 B (MIR_th), CIR_th = CBS, PIR_th = PBS, MIR = 34 Mbit/s, K = 100 ms",
            "not published; RFC 2963 §2.2 ties the thresholds to CBS/PBS",
            "buffer 32-128 KB",
            tuple(
                Variant(f"RAS buffer {b}", (("*", _ras_buffer(b)),)) for b in ("32768B", "131072B")
            ),
        ),
        Assumption(
            "bottleneck delay",
            "1 ms on ER1 -> ER2 (base RTT 16 ms)",
            "not published",
            "1-10 ms",
            (Variant("bottleneck delay 10ms", (("*", _bottleneck_delay("10ms")),)),),
        ),
        Assumption(
            "TCP details",
            "Reno + SACK, no delayed ACKs, 65535-byte window, all flows start at 0",
            "the RFC gives SACK TCP, MSS 1460, 64 KB window only",
            "delayed ACKs on or off, staggered starts",
            no_run="no sensitivity run yet: a variant needs per-flow start times "
            "in the generated scenario",
        ),
        Assumption(
            "colour basis",
            "green / yellow = the goodput after the warm-up split in the marker's "
            "proportions over the same interval",
            "the RFC reports the throughput of green and yellow packets; we count colours "
            "where they are marked, not where they are delivered",
            "RIO drops red first, so delivered green is at least this share",
            no_run="not a scenario value: a measurement choice (delivered colours are not "
            "counted per customer)",
        ),
    ),
)
