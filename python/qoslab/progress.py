"""Progress bars on stderr, built on tqdm, for every command that runs long.

- :class:`TimeBar` -- a run measured in (simulated or emulated) seconds:
  ``qoslab run``, ``compare``, ``reproduce`` (one bar per run, labelled) and
  ``emulate``. It is the progress callback the engine calls
  (``(done_ns, duration_ns, events)``; :func:`emulation_bar` adapts the
  emulator's ``(elapsed_ns, duration_ns, stats)``) and never cancels.
- :class:`RunCounter` -- done/total runs with rate, ETA and failures
  (``qoslab sweep``).

All of them: shown only on a terminal (or when forced, ``run --progress``),
never with ``--quiet``; written to stderr only, so stdout carries the table
or the JSON untouched; the line is cleared when the bar closes, also when
the run is cancelled (Ctrl-C: callers close it in a ``finally``). tqdm is
imported only when a bar is actually shown, so a quiet or piped run does
not pay for it.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, TextIO

__all__ = ["EmulationBar", "RunCounter", "TimeBar", "emulation_bar", "shown"]


def shown(stream: TextIO, quiet: bool = False, force: bool = False) -> bool:
    """Whether a bar is drawn on ``stream``: never when ``quiet``, always
    when ``force``, else when the stream is a terminal."""
    if quiet:
        return False
    if force:
        return True
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or odd stream
        return False


class TimeBar:
    """A bar of ``done/total`` seconds of a run, labelled ``label``, drawn
    once the run has taken ``delay_s`` of wall time (a short run shows
    nothing), redrawn at most 10 times a second. Created hidden when
    :func:`shown` says so: calling it then costs a comparison."""

    def __init__(
        self,
        label: str = "",
        *,
        stream: TextIO | None = None,
        delay_s: float = 1.0,
        quiet: bool = False,
        force: bool = False,
    ) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.label = label
        self.delay_s = delay_s
        self.enabled = shown(self.stream, quiet, force)
        self._bar: Any = None  # the tqdm bar, made on the first update (total known then)

    def update(self, done_s: float, total_s: float, postfix: str = "") -> None:
        if not self.enabled:
            return
        done_s = min(done_s, total_s)
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(  # drawn at once (delay 0) with the state of this first call
                total=total_s,
                initial=done_s,
                postfix=postfix or None,
                desc=self.label.strip() or None,
                unit="s",
                file=self.stream,
                delay=self.delay_s,
                mininterval=0.1,
                leave=False,  # the table or JSON follows: no stale bar above it
                dynamic_ncols=True,
                bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} s [{elapsed}<{remaining}{postfix}]",
            )
            return
        if postfix:
            self._bar.set_postfix_str(postfix, refresh=False)
        self._bar.update(done_s - self._bar.n)

    def __call__(self, sim_ns: int, duration_ns: int, events: int) -> bool:
        """The engine's progress callback: simulated time and events so far."""
        self.update(sim_ns / 1e9, duration_ns / 1e9, f"{events / 1e6:.1f}M events")
        return True

    def close(self) -> None:
        """Clears the bar's line (if it was drawn); safe to call twice."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class EmulationBar:
    """``qoslab emulate``'s bar: elapsed/duration, frames forwarded and
    dropped (the emulator's callback gets its live statistics)."""

    def __init__(self, bar: TimeBar) -> None:
        self.bar = bar

    def __call__(self, elapsed_ns: int, duration_ns: int, stats: Mapping[str, Any]) -> bool:
        frames = f"{stats.get('frames_in', 0)} frames, {stats.get('dropped', 0)} dropped"
        self.bar.update(elapsed_ns / 1e9, duration_ns / 1e9, frames)
        return True

    def close(self) -> None:
        self.bar.close()


def emulation_bar(quiet: bool, stream: TextIO | None = None) -> EmulationBar | None:
    """The emulator's bar, or ``None`` when none is shown (quiet, ``--json``
    or no terminal)."""
    bar = TimeBar("emulate", stream=stream, delay_s=0.0, quiet=quiet)
    return EmulationBar(bar) if bar.enabled else None


class RunCounter:
    """``done/total`` runs with rate, ETA and the failures so far."""

    def __init__(self, total: int, quiet: bool, stream: TextIO | None = None) -> None:
        from tqdm import tqdm

        out = sys.stderr if stream is None else stream
        self.failed = 0
        self.bar = tqdm(
            total=total,
            unit="run",
            disable=not shown(out, quiet),
            file=out,
            dynamic_ncols=True,
            smoothing=0.1,
        )

    def update(self, failed: bool = False) -> None:
        if failed:
            self.failed += 1
            self.bar.set_postfix(failed=self.failed, refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()
