"""The figure processes of ``qoslab run --report``, started at its beginning.

Drawing a report's figures needs matplotlib, whose import (about 0.5 s of
CPU) used to start only once the run was over, on one core. Here the command
forks a process as it starts; that process imports matplotlib (and
qoslab.plots) while this one simulates (and imports NumPy) on the other core.
When the result is there it is handed over (pickled into an anonymous
memory file), the figure process forks once more, and the two draw the
figures, each taking the next one from a shared pipe as it is done (so the
cores stay balanced whatever each figure costs), and send the PNG bytes
back. Meanwhile this process compiles the report's template. It never
imports matplotlib itself.

Same figures: the processes run the same drawing code on the same data
(:func:`qoslab.report.figure_jobs`), so the PNG bytes are those drawn in one
process (tests/test_report.py compares them). Whatever goes wrong on that
side (no ``fork``, a process that dies, a figure that raises, a result too
large to copy) falls back to drawing here, so an error is raised as it
would be without these processes.

Protocol (all pipes and the memory file are made before the forks):

- control pipe, parent -> drawer: 8 bytes, the length of the pickled data
  ``(raw result, [(caption, raw extra result)])`` at offset 0 of the memory
  file; end of file without them: no report, exit;
- task pipe, drawer -> both drawers: one 2-byte job index per figure, read
  2 bytes at a time (a pipe read of at most PIPE_BUF bytes takes whole
  writes' bytes in order, so two readers never split an index);
- one result pipe per drawer, drawer -> parent: records ``<index u32,
  kind u8, length u64>`` + payload; the first drawer's first record is the
  job list ``[(name, caption)]`` (pickled).
"""

from __future__ import annotations

import os
import signal
import struct
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qoslab.report import Drawn
    from qoslab.results import SimulationResult

__all__ = ["Drawer", "discard_early", "enabled", "start_early", "take_early"]

_HEAD = struct.Struct("<IBQ")
_JOBS, _PNG, _NONE, _ERROR = range(4)
_TASK = struct.Struct("<H")
#: Figures that take the least drawing (a single panel of few points; CPU
#: times of the ISR 4000 report's figures: these 0.07-0.09 s, the time
#: series 0.12-0.15 s), handed out last.
_CHEAP = ("queue", "rtt_cdf", "goodput_cdf")
#: Results whose pickle is larger are drawn here instead (the parent's fork
#: of :func:`qoslab.plots.render` shares them copy-on-write): a copy through
#: the memory file costs this much memory twice more.
MAX_DATA_BYTES = 256 * 1024 * 1024


def enabled() -> bool:
    """Figure processes are worth starting: Linux (``fork``), at least 2
    CPUs this process may use, and no other Python thread (one could hold a
    lock across the fork). ``QOSLAB_DRAWER=0`` turns them off."""
    import threading

    if os.environ.get("QOSLAB_DRAWER", "1") == "0":
        return False
    if not sys.platform.startswith("linux") or threading.active_count() != 1:
        return False
    try:
        return len(os.sched_getaffinity(0)) >= 2
    except OSError:
        return False


class Drawer:
    """The figure processes of one report: :meth:`start` them first,
    :meth:`draw` once the result is there, :meth:`close` in any case."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self._data = -1
        self._ctrl = -1
        self._results: list[int] = []

    @classmethod
    def start(cls) -> Drawer | None:
        """Forks the first figure process (it starts importing matplotlib at
        once); ``None`` when :func:`enabled` says no or the fork fails."""
        if not enabled():
            return None
        d = cls()
        fds: list[int] = []
        try:
            d._data = os.memfd_create("qoslab-report-data", os.MFD_CLOEXEC)
            fds.append(d._data)
            ctrl_r, d._ctrl = os.pipe()
            res_a = os.pipe()
            res_b = os.pipe()
            fds += [ctrl_r, d._ctrl, *res_a, *res_b]
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
        except OSError:
            for fd in fds:
                os.close(fd)
            return None
        if pid == 0:  # the figure process: never returns
            os.close(d._ctrl)
            os.close(res_a[0])
            os.close(res_b[0])
            _drawer_main(d._data, ctrl_r, res_a[1], res_b[1])
        d.pid = pid
        os.close(ctrl_r)
        os.close(res_a[1])
        os.close(res_b[1])
        d._results = [res_a[0], res_b[0]]
        return d

    def draw(self, result: SimulationResult, extra: Mapping[str, SimulationResult]) -> Drawn:
        """The figures of :func:`qoslab.report.run_report`, drawn by the
        figure processes (:func:`qoslab.report.draw_here` for any they did
        not draw). Calls :func:`qoslab.report._prepare` while they draw."""
        import pickle

        from qoslab import report

        jobs: list[tuple[str, str]] | None = None
        done: dict[int, tuple[int, bytes]] = {}
        try:
            payload = pickle.dumps((result.raw, [(c, r.raw) for c, r in extra.items()]), protocol=5)
        except Exception:  # whatever it is, the figures are drawn here
            payload = None
        if payload is not None and len(payload) <= MAX_DATA_BYTES:
            try:
                view = memoryview(payload)
                while view:
                    view = view[os.write(self._data, view) :]
                os.write(self._ctrl, struct.pack("<Q", len(payload)))
                os.close(self._ctrl)
                self._ctrl = -1
            except OSError:  # the figure process is gone (BrokenPipeError)
                pass
            else:
                del payload, view
                report._prepare()
                jobs, done = self._collect()
        self.close()
        if jobs is None:
            return report.draw_here(result, extra)
        out: Drawn = []
        missing = [i for i in range(len(jobs)) if i not in done or done[i][0] == _ERROR]
        redo: dict[str, bytes | None] = {}
        if missing:  # drawn here: an error is raised as without the processes
            from qoslab import plots

            here = report.figure_jobs(result, extra)
            for i in missing:
                fig = here[i][2]()
                redo[here[i][0]] = None if fig is None else plots.png_bytes(fig)
        for i, (name, caption) in enumerate(jobs):
            png = redo[name] if i in missing else done[i][1] if done[i][0] == _PNG else None
            if png is not None:
                out.append((name, caption, png))
        return out

    def _collect(self) -> tuple[list[tuple[str, str]] | None, dict[int, tuple[int, bytes]]]:
        """Reads both result pipes to their end; the job list and, by job
        index, ``(kind, payload)``."""
        import pickle
        import selectors

        bufs = {fd: bytearray() for fd in self._results}
        with selectors.DefaultSelector() as sel:
            for fd in self._results:
                sel.register(fd, selectors.EVENT_READ)
            open_fds = len(self._results)
            while open_fds:
                for key, _ in sel.select():
                    fd = int(key.fd)
                    chunk = os.read(fd, 1 << 20)
                    if chunk:
                        bufs[fd] += chunk
                    else:
                        sel.unregister(fd)
                        open_fds -= 1
        jobs: list[tuple[str, str]] | None = None
        done: dict[int, tuple[int, bytes]] = {}
        for buf in bufs.values():
            pos = 0
            while pos + _HEAD.size <= len(buf):
                index, kind, n = _HEAD.unpack_from(buf, pos)
                pos += _HEAD.size
                if pos + n > len(buf):
                    break  # cut short: the process died while writing
                data = bytes(buf[pos : pos + n])
                pos += n
                if kind == _JOBS:
                    jobs = pickle.loads(data)
                else:
                    done[index] = (kind, data)
        return jobs, done

    def close(self) -> None:
        """Ends the figure process (at once, if it has not been handed a
        result: a run that failed has no report to draw) and reaps it."""
        if self._ctrl >= 0:
            os.close(self._ctrl)
            self._ctrl = -1
            if self.pid is not None:
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except OSError:
                    pass
        for fd in [*self._results, self._data]:
            if fd >= 0:
                os.close(fd)
        self._results = []
        self._data = -1
        if self.pid is not None:
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
            self.pid = None


#: The figure processes :func:`start_early` started, until taken or
#: discarded, and whether it tried (``Drawer.start`` may say no).
_early: Drawer | None = None
_early_tried = False


def wants_report(argv: list[str]) -> bool:
    """``argv`` looks like ``run ... --report[=HTML]`` that will draw (no
    ``--help``, ``--dry-run``): a guess from the words alone, before click
    parses them; a wrong guess costs a process that is ended unused."""
    if not argv or argv[0] != "run" or os.environ.get("_QOSLAB_COMPLETE"):
        return False
    words = argv[1 : argv.index("--")] if "--" in argv else argv[1:]
    if any(w in ("-h", "--help", "--dry-run", "--version") for w in words):
        return False
    return any(w == "--report" or w.startswith("--report=") for w in words)


def start_early(argv: list[str]) -> None:
    """Starts the figure processes of ``qoslab run --report`` (see
    :func:`wants_report`) before the command line is even parsed;
    ``qoslab run`` takes them with :func:`take_early`."""
    global _early, _early_tried
    discard_early()
    if wants_report(argv):
        _early_tried = True
        _early = Drawer.start()


def take_early() -> tuple[bool, Drawer | None]:
    """Whether :func:`start_early` tried, and the figure processes it
    started (now the caller's)."""
    global _early, _early_tried
    out = (_early_tried, _early)
    _early, _early_tried = None, False
    return out


def discard_early() -> None:
    """Ends figure processes started early and not taken (the guess was wrong,
    or the command ended before its run)."""
    _, d = take_early()
    if d is not None:
        d.close()


def _send(fd: int, index: int, kind: int, data: bytes) -> None:
    view = memoryview(_HEAD.pack(index, kind, len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _without_3d() -> None:
    """Keeps matplotlib from importing its 3-D toolkit in this process:
    ``matplotlib.projections`` imports ``mpl_toolkits.mplot3d`` only to
    register the "3d" projection, and treats ``Axes3D = None`` as "not
    available" (it registers nothing). No qoslab figure is 3-D, and this
    process only draws them, so a stand-in module saves that import (about
    0.05 s of CPU here, on the path to the first figure). Not done where
    matplotlib is imported already (a parent that had drawn), nor anywhere
    else: a notebook user keeps the whole of matplotlib."""
    import types

    if "matplotlib.projections" in sys.modules or "mpl_toolkits.mplot3d" in sys.modules:
        return
    stand_in = types.ModuleType("mpl_toolkits.mplot3d")
    stand_in.Axes3D = None  # type: ignore[attr-defined]
    sys.modules["mpl_toolkits.mplot3d"] = stand_in


def _drawer_main(data_fd: int, ctrl_fd: int, out_a: int, out_b: int) -> None:
    """The first figure process: imports the drawing code, waits for the
    result, forks the second, and both draw. Ends with ``os._exit`` (no
    atexit handlers, no flushing of buffers inherited from the parent)."""
    import pickle

    status = 1
    try:
        # Ctrl-C reaches the whole process group: end quietly (the parent
        # says "cancelled"), and keep off the parent's stdin and stdout (a
        # reader of `--report -` waits for every writer to close stdout).
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
        _without_3d()
        from qoslab import plots, report
        from qoslab.results import SimulationResult

        plots._warm_drawing()
        head = b""
        while len(head) < 8:
            more = os.read(ctrl_fd, 8 - len(head))
            if not more:
                os._exit(0)  # no report to draw: the run failed or was cut short
            head += more
        os.close(ctrl_fd)
        (n,) = struct.unpack("<Q", head)
        with os.fdopen(data_fd, "rb", closefd=True) as f:
            f.seek(0)
            raw, extra_raw = pickle.loads(f.read(n))
        result = SimulationResult(raw)
        extra = {c: SimulationResult(r) for c, r in extra_raw}
        jobs = report.figure_jobs(result, extra)
        _send(out_a, 0, _JOBS, pickle.dumps([(name, cap) for name, cap, _ in jobs]))
        plots._warm_arrays(result)
        for other in extra.values():
            plots._warm_arrays(other)
        task_r, task_w = os.pipe()
        # The cheapest figures last: whichever process finishes first takes
        # the next, so the other is left with at most one small figure.
        order = sorted(range(len(jobs)), key=lambda i: jobs[i][0] in _CHEAP)
        os.write(task_w, b"".join(_TASK.pack(i) for i in order))
        os.close(task_w)
        child = os.fork()
        if child == 0:
            os.close(out_a)
            out = out_b
        else:
            os.close(out_b)
            out = out_a
        while len(task := os.read(task_r, _TASK.size)) == _TASK.size:
            (i,) = _TASK.unpack(task)
            try:
                fig = jobs[i][2]()
                if fig is None:
                    _send(out, i, _NONE, b"")
                else:
                    _send(out, i, _PNG, plots.png_bytes(fig))
            except Exception as e:  # redrawn by the parent, which raises it
                _send(out, i, _ERROR, repr(e).encode())
        os.close(out)
        if child != 0:
            os.waitpid(child, 0)
        status = 0
    except BaseException:  # the parent draws what is missing
        status = 1
    finally:
        try:
            sys.stderr.flush()
        finally:
            os._exit(status)
