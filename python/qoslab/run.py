"""Run a scenario: ``qoslab.simulate(...)`` and the ``qoslab run`` command.

The simulation runs in Rust with the GIL released; Ctrl-C stops it within
one progress report and raises ``qoslab.Cancelled`` (a ``KeyboardInterrupt``).
The terminal output imitates iperf3: a line per flow per second, a ``[SUM]``
line, then RTT statistics and what each policy did.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from qoslab import _core, outputs
from qoslab import progress as _progress
from qoslab import table as _table
from qoslab.results import SimulationResult, write_results
from qoslab.scenario import ScenarioSource, load_scenario, scenario_info, with_seed

#: ``qoslab run --format``: what stdout carries.
FORMATS = ("table", "json", "iperf3")

__all__ = ["FORMATS", "default_memory_limit", "estimate", "main", "simulate"]

#: ``progress(sim_time_ns, duration_ns, events)``; return ``False`` to cancel.
ProgressFn = Callable[[int, int, int], Any]


def simulate(
    scenario: ScenarioSource,
    seed: int | None = None,
    progress: ProgressFn | None = None,
    *,
    memory_limit: int | str | None = None,
) -> SimulationResult:
    """Runs a scenario (a path, TOML text or a dict) and returns its result.

    ``seed`` overrides the scenario's seed. ``memory_limit`` (bytes, or a
    size such as ``"4GB"``; default: half of physical RAM) refuses, before
    anything runs, a run whose estimated peak memory (:func:`estimate`) is
    larger, with ``qoslab.ResourceError`` (a ``MemoryError``). Raises
    ``qoslab.ScenarioError`` (``file:line:col: key: message``) for a bad
    scenario and ``qoslab.Cancelled`` when interrupted.
    """
    if seed is not None and (isinstance(seed, bool) or not 0 <= int(seed) < 2**64):
        # a ConfigError is a qoslab.QoslabError and still a ValueError
        raise _core.ConfigError(f"seed: must be an integer in 0..2**64-1, got {seed!r}")
    limit = _limit_bytes(memory_limit, "memory_limit")
    text, filename = load_scenario(scenario)
    scenario_info(text, filename)  # issues its warnings, as `qoslab run` shows them
    seed = None if seed is None else int(seed)
    check_memory(_core.estimate_toml(text, filename, seed), limit, "memory_limit=")
    # Engine Columns: NumPy is imported when a column is first read as an array.
    raw = _core.simulate_toml(text, filename, seed, progress, numpy=False)
    return SimulationResult(raw)


def estimate(scenario: ScenarioSource, seed: int | None = None) -> dict[str, Any]:
    """Validates a scenario as :func:`simulate` would and estimates, without
    running it, what the run takes: ``events``, ``series_rows`` (rows per
    recorded series), ``peak_memory_bytes`` (an upper bound of the run's
    own peak memory, series copied into Python included) and its parts."""
    text, filename = load_scenario(scenario)
    return _core.estimate_toml(text, filename, None if seed is None else int(seed))


def default_memory_limit() -> int:
    """Half of physical RAM (``MemTotal`` of /proc/meminfo, else sysconf)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024 // 2
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (OSError, ValueError, AttributeError):
        return 2**63 - 1  # unknown: no limit rather than a made-up one


def _limit_bytes(limit: int | str | None, knob: str) -> int:
    if limit is None:
        return default_memory_limit()
    if isinstance(limit, bool):
        raise ValueError(f"{knob}: expected a size in bytes or such as '4GB', got {limit!r}")
    if isinstance(limit, int):
        if limit <= 0:
            raise ValueError(f"{knob}: expected a positive size, got {limit}")
        return limit
    if isinstance(limit, str):
        try:
            v = _core.parse_size(limit)
        except ValueError as e:
            raise ValueError(f"{knob}: {e}") from None
        if v <= 0:
            raise ValueError(f"{knob}: expected a positive size, got '{limit}'")
        return v
    raise ValueError(f"{knob}: expected a size in bytes or such as '4GB', got {limit!r}")


def check_memory(est: dict[str, Any], limit: int, knob: str) -> None:
    """Refuses a run whose estimated peak memory is over ``limit``: one line
    naming the estimate, the limit and the knob."""
    need = int(est["peak_memory_bytes"])
    if need > limit:
        raise _core.ResourceError(
            f"{est['name']}: the run needs an estimated {fmt_bytes(need)} of memory, more than "
            f"the limit of {fmt_bytes(limit)}: raise {knob} (if the machine has it), or shorten "
            "the run, record fewer series or raise [record] interval"
        )


# The iperf3-style table lives in qoslab.table (re-exported: analyze, emulate use it).
render_table = _table.render
fmt_bytes = _table.fmt_bytes
fmt_rate = _table.fmt_rate


#: The engine's event rate on one core, slowest and fastest of the engine
#: benchmark's cases on this project's 2-vCPU machine (docs/performance.md:
#: 5.5 M events/s at 10 Gbit/s, 6.8 M at 100 Mbit/s; many-flow and policy-tree
#: runs are slower): the run-time estimate is events over these.
EVENTS_PER_CPU_S = (3_000_000, 7_000_000)

#: A run estimated above this many CPU seconds is announced before it starts.
LONG_RUN_S = 60.0


def cpu_seconds(est: dict[str, Any]) -> tuple[float, float]:
    """The estimated CPU time of a run, (shortest, longest), from its events."""
    slow, fast = EVENTS_PER_CPU_S
    return est["events"] / fast, est["events"] / slow


def _fmt_s(s: float) -> str:
    return f"{s / 60:.1f} min" if s >= 120 else f"{s:.2g} s" if s < 10 else f"{s:.0f} s"


def render_estimate(est: dict[str, Any], limit: int) -> str:
    """The ``--dry-run`` text: what the run would take, and the limit."""
    lines = [
        f"{est['name']}: {est['duration_ns'] / 1e9:g} s simulated, {est['flows']} flows "
        f"({est['tcp_flows']} TCP), {est['policies']} policies, "
        f"{est['link_directions']} link directions",
        f"  events           ~{est['events']:,}",
        f"  packet hops      ~{est['packet_hops']:,}",
        "  CPU time         ~{} to {} (one core, {}-{} M events/s)".format(
            *map(_fmt_s, cpu_seconds(est)), *(r // 1_000_000 for r in EVENTS_PER_CPU_S)
        ),
    ]
    for name, rows in est["series_rows"].items():
        lines.append(f"  series {name:<9} {rows:,} rows")
    lines += [
        f"  series memory    {fmt_bytes(est['series_bytes'])}",
        f"  flow state       {fmt_bytes(est['flow_state_bytes'])}",
        f"  packets (bound)  {fmt_bytes(est['packet_bytes'])}",
        f"  peak memory      <= {fmt_bytes(est['peak_memory_bytes'])} "
        f"(limit {fmt_bytes(limit)}: "
        f"{'ok' if est['peak_memory_bytes'] <= limit else 'REFUSED'})",
    ]
    return "\n".join(lines)


def capture_plan(
    specs: list[str], scenario_links: list[tuple[str, str | None]], out: str | None
) -> tuple[list[tuple[str, str | None]], str | None]:
    """The (``LINK[:side]``, file or ``None`` for one in ``--out``) captures of a
    run: ``--capture`` specs if given, else the scenario's ``[capture]`` links.
    Refuses a capture with neither a file nor ``--out``."""
    wanted: list[tuple[str, str | None]] = []
    source = "--capture"
    if specs:
        for spec in specs:
            where, eq, path = spec.partition("=")
            if eq and not path:
                raise ValueError(f"--capture {spec}: no file after '=' (LINK=FILE)")
            wanted.append((where, path or None))
    else:
        wanted = list(scenario_links)
        source = "[capture] links"
    if not out:
        for where, file in wanted:
            if file is None:
                raise ValueError(
                    f"{source} {where}: no file given; add =FILE or run with --out DIR"
                )
    return wanted, source


def main(
    args: argparse.Namespace,
    on_result: Callable[[SimulationResult, str], Any] | None = None,
) -> int:
    """``qoslab run``: returns the exit status. Errors propagate to the CLI.
    ``on_result(result, scenario_text_as_run)`` is called after the run (the
    ``--report`` flag uses it)."""
    fmt = output_format(args)
    if args.scenario == "-":  # stdin, as Unix filters read it
        text, filename = sys.stdin.read(), "<stdin>"
        inputs: list[str] = []
    else:
        text, filename = load_scenario(args.scenario)
        inputs = [args.scenario]
    info = scenario_info(text, filename)  # a bad scenario fails here, before any output
    limit = args.memory_limit if args.memory_limit is not None else default_memory_limit()
    est = _core.estimate_toml(text, filename, args.seed)
    if args.dry_run:
        if fmt != "table":
            lo, hi = cpu_seconds(est)
            out = {**est, "memory_limit_bytes": limit, "cpu_seconds_estimate": [lo, hi]}
            print(json.dumps(out, indent=2))
        else:
            print(render_estimate(est, limit))
        return 0
    check_memory(est, limit, "--memory-limit")
    lo, hi = cpu_seconds(est)
    if lo > LONG_RUN_S and not args.quiet:
        print(
            f"qoslab: this run is estimated at {_fmt_s(lo)} to {_fmt_s(hi)} of CPU "
            f"(~{est['events']:,} events; --dry-run shows the estimate, Ctrl-C stops it)",
            file=sys.stderr,
        )
    # Bad --out/--report paths fail before the run, not after it.
    report = getattr(args, "report", None)
    outputs.check_run_outputs(args.out, report, inputs)
    links = [(str(w), f) for w, f in info["capture"]["links"]]
    wanted, _ = capture_plan(args.capture, links, args.out)
    for _, path in wanted:
        if path is not None:
            outputs.check_file(path, "--capture", inputs)
    to_stdout = [
        o
        for o, path in [("--report", report), *(("--capture", p) for _, p in wanted)]
        if path == "-"
    ]
    if len(to_stdout) > 1:
        raise ValueError(f"{' and '.join(to_stdout)} both want stdout ('-'); give one a file")
    snaplen = info["capture"]["snaplen"] if args.snaplen is None else args.snaplen
    bar = _progress.TimeBar(
        delay_s=0.0 if args.progress else 1.0, quiet=args.quiet, force=args.progress
    )
    # Captures bound for --out (or stdout) are written to a scratch directory
    # and copied in with the results (one unit), so --out stays
    # complete-or-untouched.
    scratch: Path | None = None
    into_out: dict[str, Path] = {}
    pcap_to_stdout: Path | None = None
    captures: list[tuple[str, str]] | None = None
    if wanted:
        captures = []
        for where, path in wanted:
            if path is None or path == "-":
                if scratch is None:  # in the system's temp dir: no litter beside --out
                    import tempfile

                    scratch = Path(tempfile.mkdtemp(prefix="qoslab-capture-"))
                name = where.replace("->", "-").replace(":", "-") + ".pcap"
                if path == "-":
                    pcap_to_stdout = scratch / f"stdout-{name}"
                    path = str(pcap_to_stdout)
                else:
                    into_out[name] = scratch / name
                    path = str(into_out[name])
            captures.append((where, path))
    # The table's drawing library loads while the engine runs (GIL released).
    draws = fmt == "table" and not args.quiet and not to_stdout
    loaded = _table.preload() if draws else None
    try:
        try:
            extra = {} if captures is None else {"captures": captures, "snaplen": snaplen}
            cb = bar if bar.enabled else None  # no callback at all: the engine runs unhindered
            # Columns, not NumPy arrays: the table is printed without NumPy
            # (imported only by the outputs that need it: --out, --report...).
            raw = _core.simulate_toml(text, filename, args.seed, cb, numpy=False, **extra)
        finally:
            if loaded is not None:
                loaded()  # before anything else imports: one importing thread at a time
            bar.close()
        result = SimulationResult(raw)
        as_run = text if args.seed is None else with_seed(text, args.seed)
        if args.out:
            write_results(args.out, result, as_run, extra_files=into_out)
        if pcap_to_stdout is not None:
            import shutil

            with open(pcap_to_stdout, "rb") as f:
                shutil.copyfileobj(f, sys.stdout.buffer)
            sys.stdout.buffer.flush()
    finally:
        if scratch is not None:
            import shutil

            shutil.rmtree(scratch, ignore_errors=True)
    if on_result is not None:
        on_result(result, as_run)
    if to_stdout:  # stdout carries that file and nothing else
        return 0
    warnings = _table.rate_unit_warnings(text, filename)
    if fmt == "json":
        print(result.to_json())
    elif fmt == "iperf3":
        print(json.dumps(result.to_iperf3(), indent=2))
    elif not args.quiet:
        tty = sys.stdout.isatty()
        width = None
        if tty:
            import shutil

            width = shutil.get_terminal_size().columns
        table = render_table(
            result, per_flow=args.per_flow, width=width, warnings=warnings, color=tty
        )
        print(table)
        if args.out:
            print(f"wrote {args.out}")
        return 0
    if not args.quiet:
        for w in warnings:  # the JSON stays parseable: warnings go to stderr
            print(f"qoslab: warning: {w}", file=sys.stderr)
    return 0


def output_format(args: argparse.Namespace) -> str:
    """``--format`` (``--json`` is ``--format json``); refuses both disagreeing."""
    fmt = getattr(args, "format", None)
    if getattr(args, "json", False):
        if fmt not in (None, "json"):
            raise ValueError(f"--json and --format {fmt} disagree; give one")
        return "json"
    return fmt or "table"
