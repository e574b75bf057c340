"""qoslab.progress: the bars of run/compare/reproduce/emulate/sweep (tqdm).

What is checked is the meaning (shown or not, label, counts, cleared at the
end), not tqdm's rendering."""

from __future__ import annotations

import io

from qoslab.progress import RunCounter, TimeBar, emulation_bar, shown


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_hidden_off_a_terminal_and_when_quiet() -> None:
    pipe = io.StringIO()
    for bar in (TimeBar("x", stream=pipe, delay_s=0.0), TimeBar("x", stream=Tty(), quiet=True)):
        assert not bar.enabled
        assert bar(1_000_000_000, 2_000_000_000, 10) is True  # never cancels
        bar.close()
    assert pipe.getvalue() == ""
    assert not shown(Tty(), quiet=True, force=True)  # --quiet wins over --progress
    assert shown(io.StringIO(), force=True)
    assert emulation_bar(quiet=False, stream=io.StringIO()) is None
    assert emulation_bar(quiet=True, stream=Tty()) is None


def test_a_bar_shows_label_seconds_and_events_then_clears_its_line() -> None:
    out = Tty()
    bar = TimeBar("[2/3] police", stream=out, delay_s=0.0)
    bar(0, 20_000_000_000, 0)
    bar._bar.mininterval = 0  # redraw on every update, for the test
    bar(10_000_000_000, 20_000_000_000, 2_500_000)
    bar(20_000_000_000, 20_000_000_000, 5_000_000)
    bar.close()
    bar.close()  # twice is harmless (a finally after an explicit close)
    frames = out.getvalue().split("\r")
    drawn = [f for f in frames if f.strip()]
    assert drawn and all(f.startswith("[2/3] police: ") for f in drawn)
    assert any(" 50%" in f and "10.0/20.0 s" in f and "2.5M events" in f for f in drawn)
    assert any("100%" in f and "20.0/20.0 s" in f for f in drawn)
    assert frames[-1].strip() == ""  # cleared: the table that follows starts clean


def test_a_short_run_shows_nothing_before_the_delay() -> None:
    out = Tty()
    bar = TimeBar(stream=out, delay_s=60.0)
    bar(1, 2, 0)
    bar.close()
    assert out.getvalue().strip() == ""


def test_emulation_bar_counts_frames_and_drops() -> None:
    out = Tty()
    bar = emulation_bar(quiet=False, stream=out)
    assert bar is not None
    bar(5_000_000_000, 10_000_000_000, {"frames_in": 1234, "dropped": 7})
    bar.close()
    assert "1234 frames, 7 dropped" in out.getvalue()


def test_run_counter_counts_runs_and_failures() -> None:
    out = Tty()
    c = RunCounter(3, quiet=False, stream=out)
    c.update()
    c.update(failed=True)
    c.update()
    c.close()
    assert c.failed == 1 and c.bar.n == 3
    assert "3/3" in out.getvalue() and "failed=1" in out.getvalue()
    quiet = RunCounter(3, quiet=True, stream=out)
    assert quiet.bar.disable
