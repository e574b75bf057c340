"""Where a sweep's runs execute: local threads or processes, a Dask cluster,
or the emulator, one run at a time.

All executors feed the same loop: outcomes are stored as they arrive (in
batches, see ``store``), the progress bar shows done/total, ETA and
failures, and Ctrl-C stops cleanly: no new runs start, simulations in
progress are cancelled (threads) or finish their small batch (processes,
Dask), what finished is written, then ``KeyboardInterrupt`` propagates.

Local default: processes. The simulator releases the GIL while it runs, but
building each result (dicts of the flows' figures) and the summary rows holds
it; for runs of a few milliseconds that share is large enough that
processes were faster here (docs/performance.md, benchmarks/sweep_bench.py).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures import wait as fwait
from typing import Any

from qoslab.sweep.resolve import Run
from qoslab.sweep.worker import Outcome, run_batch, run_one, summarise

__all__ = ["EXECUTORS", "chunks", "run_dask", "run_emulate", "run_local"]

EXECUTORS = ("processes", "threads")

#: Called with each outcome as it arrives.
Sink = Callable[[Outcome], None]


def default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def chunks(runs: list[Run], workers: int, most: int = 64) -> list[list[Run]]:
    """Batches for processes/Dask: about 8 per worker (load balance), at most
    ``most`` runs each (a Ctrl-C waits for at most one batch per worker)."""
    size = max(1, min(most, len(runs) // (workers * 8) or 1))
    return [runs[i : i + size] for i in range(0, len(runs), size)]


def _ignore_sigint() -> None:
    # Ctrl-C goes to the whole process group: the parent handles it and lets
    # the workers finish their batch instead of dying mid-write.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def run_local(runs: list[Run], sink: Sink, workers: int, executor: str = "processes") -> None:
    """Runs on this machine with ``workers`` threads or processes."""
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    if executor == "threads":
        _run_threads(runs, sink, workers)
    else:
        _run_processes(runs, sink, workers)


def _run_threads(runs: list[Run], sink: Sink, workers: int) -> None:
    stop = threading.Event()
    ex = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sweep")
    pending: set[Future[Outcome]] = set()
    it = iter(runs)
    try:
        # A bounded window of futures: 10,000 submitted at once cost memory
        # and make a Ctrl-C wait for the pool to drain its queue.
        for r in _take(it, workers * 4):
            pending.add(ex.submit(run_one, r, stop))
        while pending:
            done, pending = fwait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            for f in done:
                sink(f.result())
                for r in _take(it, 1):
                    pending.add(ex.submit(run_one, r, stop))
    except KeyboardInterrupt:
        stop.set()
        for f in pending:
            f.cancel()
        for f in pending:
            if not f.cancelled():
                o = f.result()
                if o.error != "cancelled":
                    sink(o)
        raise
    finally:
        stop.set()
        ex.shutdown(wait=True, cancel_futures=True)


def _take(it: Iterator[Run], n: int) -> list[Run]:
    out = []
    for _ in range(n):
        try:
            out.append(next(it))
        except StopIteration:
            break
    return out


def _run_processes(runs: list[Run], sink: Sink, workers: int) -> None:
    ex = ProcessPoolExecutor(max_workers=workers, initializer=_ignore_sigint)
    futs: set[Future[list[Outcome]]] = set()
    try:
        futs = {ex.submit(run_batch, c) for c in chunks(runs, workers)}
        while futs:
            done, futs = fwait(futs, timeout=0.2, return_when=FIRST_COMPLETED)
            for f in done:
                for o in f.result():
                    sink(o)
    except KeyboardInterrupt:
        for f in futs:
            f.cancel()
        _drain(futs, sink)
        raise
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def _drain(futs: set[Future[list[Outcome]]], sink: Sink) -> None:
    """After Ctrl-C: keep the batches already running (they finish soon)."""
    for f in futs:
        if f.cancelled():
            continue
        try:
            for o in f.result():
                sink(o)
        except Exception:  # a batch broken by the interrupt: its runs rerun next time
            continue


def run_dask(runs: list[Run], sink: Sink, address: str, workers: int) -> tuple[str, float, float]:
    """Runs on a Dask cluster at ``address``, or on a new ``LocalCluster`` of
    ``workers`` single-threaded worker processes for ``address == "local"``.
    Returns a description of the cluster, the seconds it took to be ready
    (start or connect) and the seconds from the first submission to the last
    result: runs/s leaves out the cluster's start and shutdown."""
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise ValueError(
            "--dask needs Dask: pip install 'qoslab[dask]' (dask[distributed])"
        ) from None
    cluster = None
    t0 = time.monotonic()
    if address == "local":
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
        client = Client(cluster)
    else:
        try:
            client = Client(address, timeout="10s")
        except OSError as e:
            raise ValueError(f"--dask {address}: cannot connect ({e})") from None
    nworkers = len(client.scheduler_info().get("workers", {})) or workers
    ready_s = time.monotonic() - t0
    desc = f"dask {'LocalCluster' if cluster else address}, {nworkers} workers"
    futs: list[Any] = []
    t_submit = time.monotonic()
    busy_s = 0.0
    try:
        futs = [client.submit(run_batch, c, pure=False) for c in chunks(runs, nworkers)]
        for f in as_completed(futs):
            for o in f.result():
                sink(o)
        busy_s = time.monotonic() - t_submit
    except KeyboardInterrupt:
        # Batches not yet delivered are cancelled; what was delivered is stored.
        client.cancel([f for f in futs if not f.done()])
        raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return desc, ready_s, busy_s


def run_emulate(runs: list[Run], sink: Sink, backend: str = "userspace") -> None:
    """Runs each point through ``qoslab emulate`` (real Linux TCP between
    namespaces), one at a time: runs share the machine's network stack and
    timing, so they must not overlap."""
    from qoslab._core import Cancelled
    from qoslab.emulate.run import emulate

    for r in runs:
        out = Outcome(r.hash, r.point, r.seed)
        try:
            result = emulate(r.text, seed=r.seed, backend=backend)
        except Cancelled:
            raise KeyboardInterrupt from None
        except (ValueError, RuntimeError, OSError) as e:
            out.error = " ".join(str(e).split())
        else:
            out.row, out.flows = summarise(result.raw)
        sink(out)


class Progress:
    """done/total, rate, ETA and failures on stderr
    (:class:`qoslab.progress.RunCounter`; off when quiet or when stderr is
    not a terminal)."""

    def __init__(self, total: int, quiet: bool) -> None:
        from qoslab.progress import RunCounter

        self.counter = RunCounter(total, quiet)

    def update(self, o: Outcome) -> None:
        self.counter.update(failed=o.error is not None)

    def close(self) -> None:
        self.counter.close()
