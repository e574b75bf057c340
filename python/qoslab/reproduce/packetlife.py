"""Jeremy Stretch, "Policing versus shaping", packetlife.net, 30 July 2008:
a Cisco 3725 policing or shaping four Windows iperf flows to 1 Mbit/s."""

from __future__ import annotations

from qoslab.reproduce.checks import Checks
from qoslab.reproduce.measures import goodputs, jain, rel
from qoslab.reproduce.model import Assumption, Case, Experiment, Reference, Variant
from qoslab.results import SimulationResult

K = 1e3  # kbit/s


def check(c: Checks, ref: Reference, results: dict[str, SimulationResult]) -> None:
    for case in ("unrestricted", "police", "shape"):
        ours = goodputs(results[case], K)
        n = len(ref.value(f"{case}.per_flow_kbps"))
        pub = sorted(range(n), key=lambda i: ref.value(f"{case}.per_flow_kbps")[i])
        have = len(ours) == n
        c.number(case, "sum kbit/s", ref.number(f"{case}.sum_kbps"), sum(ours) if have else None)
        c.number(
            case,
            "lowest flow kbit/s",
            ref.number(f"{case}.per_flow_kbps", pub[0]),
            min(ours) if have else None,
            note="which flow a policer hits is chance; only the spread is comparable"
            if case == "police"
            else "",
        )
        c.number(
            case,
            "highest flow kbit/s",
            ref.number(f"{case}.per_flow_kbps", pub[-1]),
            max(ours) if have else None,
        )
    p, s = goodputs(results["police"], K), goodputs(results["shape"], K)
    gain = rel(sum(s), sum(p)) if p and s else None
    c.claim(
        "shape vs police",
        "shaper sum > policer sum",
        ref.claim("shape_gain"),
        None if gain is None else f"{sum(s):.4g} > {sum(p):.4g} kbit/s",
        None if gain is None else gain > 0,
        gain,
    )
    js, jp = jain(s), jain(p)
    c.claim(
        "shape",
        "equal shares under shaping: Jain's index >= 0.99",
        ref.claim("shape_fair"),
        f"{js:.3f}" if s else None,
        js >= 0.99 if s else None,
    )
    c.claim(
        "police",
        "unequal shares under policing: Jain's index <= 0.97",
        ref.claim("police_unequal"),
        f"{jp:.3f}" if p else None,
        jp <= 0.97 if p else None,
        1 - jp if p else None,
    )


_DELAY = ("topology.access.delay", "topology.bottleneck.delay")

EXPERIMENT = Experiment(
    "packetlife",
    "packetlife: Cisco 3725, 1 Mbit/s, iperf -P 4 (unrestricted, police, shape)",
    "packetlife-1mbit.toml",
    (
        Case("unrestricted", "packetlife-unrestricted.toml", quick_s=5),
        Case("police", "packetlife-police.toml", quick_s=30),
        Case("shape", "packetlife-shape.toml", quick_s=30),
    ),
    check,
    (
        Assumption(
            "link delay",
            "0.1 ms per link (base RTT ~0.6 ms)",
            "a LAN; the source gives no RTT",
            "0.1-2 ms per link",
            tuple(
                Variant(f"link delay {d}", tuple(("*", (k, d)) for k in _DELAY))
                for d in ("0.5ms", "2ms")
            ),
        ),
        Assumption(
            "shaping queue",
            "flow-based fair-queue (64 packets per flow queue) under the shaper",
            "classic IOS shapes class-default into WFQ (our knowledge of IOS, not the source's)",
            "fair-queue or one FIFO",
            (
                Variant(
                    "FIFO under the shaper (64 p)",
                    (
                        (
                            "shape",
                            # The scenario gives the router's MQC text; this
                            # counterfactual queue is written as the table.
                            (
                                "policy.bottleneck.egress",
                                {
                                    "shape": {"kind": "shape", "cir": "1mbit", "profile": "ios"},
                                    "qdisc": {"kind": "pfifo", "limit": 64},
                                },
                            ),
                        ),
                    ),
                ),
            ),
        ),
        Assumption(
            "TCP",
            "profile windows-xp: NewReno + SACK, IW 2, 65535-byte receive window",
            "the client is Windows (2008); the 8 KB iperf printed is the socket buffer",
            "Windows XP-era NewReno to Windows Vista+ Compound TCP",
            (Variant("TCP profile windows10", (("*", ("traffic.0.profile", "windows10")),)),),
        ),
        Assumption(
            "router queue without a policy",
            "40 packets (IOS hold-queue 40 out)",
            "our knowledge of IOS; affects only the unrestricted case",
            "40-1000 packets",
            (
                Variant(
                    "router queue 1000 p", (("*", ("topology.bottleneck.queue_limit", "1000p")),)
                ),
            ),
        ),
    ),
)
