"""Deliberately naive reference markers, written from the RFC text alone.

Exact arithmetic: token counts are ``Fraction`` bytes; tokens arrive
continuously at CIR/PIR bytes per second (rate_bps / 8), both buckets full at
time 0. No shared code with qoslab-core: if both agree on random traces, both
read the RFCs the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

GREEN, YELLOW, RED = 0, 1, 2
NS_PER_S = 1_000_000_000


def srtcm(
    times_ns: Sequence[int],
    sizes: Sequence[int],
    cir_bps: int,
    cbs: int,
    ebs: int,
    colors: Sequence[int] | None = None,
) -> list[int]:
    """RFC 2697 single rate three colour marker (colour-blind when ``colors``
    is None, colour-aware otherwise)."""
    tc, te = Fraction(cbs), Fraction(ebs)
    last = 0
    out = []
    for i, (t, b) in enumerate(zip(times_ns, sizes, strict=True)):
        # §3: tokens arrive at CIR; they fill C first, overflow into E, and are
        # lost when both are full.
        new = Fraction(cir_bps, 8) * Fraction(t - last, NS_PER_S)
        last = t
        room_c = cbs - tc
        if new <= room_c:
            tc += new
        else:
            tc = Fraction(cbs)
            te = min(Fraction(ebs), te + new - room_c)
        pre = GREEN if colors is None else colors[i]
        # §3.1 (blind) / §3.2 (aware)
        if pre == GREEN and tc - b >= 0:
            tc -= b
            out.append(GREEN)
        elif pre in (GREEN, YELLOW) and te - b >= 0:
            te -= b
            out.append(YELLOW)
        else:
            out.append(RED)
    return out


def trtcm(
    times_ns: Sequence[int],
    sizes: Sequence[int],
    cir_bps: int,
    cbs: int,
    pir_bps: int,
    pbs: int,
    colors: Sequence[int] | None = None,
) -> list[int]:
    """RFC 2698 two rate three colour marker: P fills at PIR up to PBS, C at
    CIR up to CBS, independently; both full at time 0."""
    tp, tc = Fraction(pbs), Fraction(cbs)
    last = 0
    out = []
    for i, (t, b) in enumerate(zip(times_ns, sizes, strict=True)):
        dt = Fraction(t - last, NS_PER_S)
        last = t
        tp = min(Fraction(pbs), tp + Fraction(pir_bps, 8) * dt)
        tc = min(Fraction(cbs), tc + Fraction(cir_bps, 8) * dt)
        pre = GREEN if colors is None else colors[i]
        # §3 colour-blind: red if Tp < B; else yellow if Tc < B (Tp -= B);
        # else green (both -= B). Colour-aware: a red packet stays red, a
        # yellow one can be at best yellow.
        if pre == RED or tp - b < 0:
            out.append(RED)
        elif pre == YELLOW or tc - b < 0:
            tp -= b
            out.append(YELLOW)
        else:
            tp -= b
            tc -= b
            out.append(GREEN)
    return out
