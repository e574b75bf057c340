"""The ``qoslab`` command line.

``qoslab run SCENARIO`` simulates a scenario file (see ``qoslab.run``).
``qoslab meter KIND`` and ``qoslab shape KIND`` run a trace CSV through any
kind of the registry (qoslab-policy): meters; shapers; AQMs, queues and
schedulers behind a link of ``--rate``; ``qoslab shape tree --policy`` a
whole policy tree.
Options the command does not know (``--cir 20mbit``) become conditioner
parameters, as does ``--param cir=20mbit``.

Errors in the user's input print one line, ``qoslab: error: <file>:<line>:
<message>`` or ``qoslab: error: <param>: <message>``, and exit with status 2;
Ctrl-C prints ``qoslab: cancelled`` and exits with 130.
Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

# Only light modules here: every command's own modules (NumPy, pandas,
# matplotlib, pyarrow behind them) are imported when that command runs or
# builds its parser, so `qoslab --help` and `qoslab CMD --help` stay fast
# and Ctrl-C during those imports is caught by main() (no traceback).
from qoslab import __version__, _core, outputs
from qoslab._core import Cancelled, ConfigError, ScenarioError

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """A bad command line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


METER_EPILOG = """\
input CSV: header 'time_ns,size_bytes[,color]' (color: green/yellow/red or 0/1/2;
other columns are passed through). Output: the input columns plus 'color' and
'action' (transmit/drop/remark); an input 'color' column is kept as 'color_in'.
A pcap/pcapng capture (also .xz) works as the input too: its frames' times and lengths.
Parameters: any '--KEY VALUE' the command does not know, or '--param KEY=VALUE';
units as in tc (1mbit, 3000B, 32kb, 50ms), see 'qoslab meter --list' for kinds.
'-' is stdin for --input and stdout for --output (which then carries only the CSV).

examples:
  qoslab meter srtcm --cir 1mbit --cbs 3000B --ebs 6000B \\
      --input examples/trace.csv --output /tmp/colored.csv --json
  qoslab meter srtcm --param cir=1mbit --param cbs=3000B --violate drop --input examples/trace.csv
  qoslab meter srtcm --cir 1mbit --cbs 3000B --ebs 6000B --input examples/trace.csv --output -
  qoslab meter --list --json
"""

SHAPE_EPILOG = """\
input CSV: header 'time_ns,size_bytes' (other columns are passed through), or a
pcap/pcapng capture (also .xz): its frames' times and lengths on the wire.
'-' is stdin for --input and stdout for --output (which then carries only the CSV).
Output: the input columns plus 'departure_ns' (empty when dropped) and
'dropped' (0/1). Parameters as for 'qoslab meter'; 'qoslab shape --list'
shows every kind with its family.

Shapers (tbf, shape, srras, ...) pace packets themselves. Every other kind
has no service rate of its own and needs --rate, the link draining it:
queues (pfifo, bfifo, pfifo_head_drop), AQMs (red, wred, rio, codel, pie),
classless schedulers (sfq, fq_codel, fair-queue) and prio; departure_ns is
when a packet leaves the qdisc for that link.

KIND 'tree' runs a whole policy tree: --policy FILE.toml, or the TOML inline,
holding the table a scenario writes under [policy.LINK.DIR] (a root qdisc
key such as htb = { default = "20" }, [[class]] and [[filter]] tables,
[qdisc], police). htb and drr come this way (they need classes). --rate is
the link draining the tree, required unless its root is a shaper or htb.

Header columns a scheduler or filter reads, each optional: flow (the flow id
sfq, fq_codel and fair-queue hash), dscp (0-63), src, dst (a.b.c.d), src_port,
dst_port, proto (number or tcp/udp/icmp), color. Without them every packet is
one flow with all those fields 0: filters on them never match (a 'dport 5001'
filter does not), so such packets go to the default class.
--json adds one row per class (root first): packets, bytes, drops, colours.

examples:
  qoslab shape tbf --rate 1mbit --burst 3000B --limit 30000B \\
      --input examples/trace.csv --output /tmp/shaped.csv --json
  qoslab shape codel --rate 3mbit --target 5ms --interval 100ms \\
      --input examples/trace.csv --output /tmp/codel.csv --json
  qoslab shape sfq --rate 2mbit --limit 50 --input examples/trace.csv --json
  qoslab shape tree --policy examples/htb-two-classes.toml \\
      --input examples/two-flows.csv --json
  qoslab shape tree --policy examples/hfsc-two-classes.toml \\
      --input examples/two-flows.csv --json
  qoslab shape tree --policy 'prio = { bands = 3 }' --rate 2mbit --input examples/trace.csv
  qoslab shape --list
"""

MAIN_EPILOG = """\
examples:
  qoslab run scenarios/example.toml
  qoslab meter srtcm --cir 1mbit --cbs 3000B --ebs 6000B \\
      --input examples/trace.csv --output /tmp/colored.csv --json
  qoslab shape --list
"""


def _add_run(sub: Any, fmt: type[argparse.HelpFormatter]) -> None:
    from qoslab import run as run_cmd

    run_cmd.add_run_parser(sub, fmt)
    sub.choices["run"].add_argument(
        "--report",
        nargs="?",
        const="",
        metavar="HTML",
        help="write an HTML report (default: DIR/report.html with --out, else report.html; "
        "'-': stdout)",
    )


def _add_analyze(sub: Any, fmt: type[argparse.HelpFormatter]) -> None:
    from qoslab import analyze as analyze_cmd

    analyze_cmd.add_analyze_parser(sub, fmt)


def _add_import(sub: Any, fmt: type[argparse.HelpFormatter]) -> None:
    from qoslab import importcmd as import_cmd

    import_cmd.add_import_parser(sub, fmt)


def _add_compare(sub: Any, fmt: type[argparse.HelpFormatter]) -> None:
    from qoslab import compare

    compare.add_compare_parser(sub, fmt)


def _add_reproduce(sub: Any, fmt: type[argparse.HelpFormatter]) -> None:
    from qoslab.reproduce.command import add_reproduce_parser

    add_reproduce_parser(sub, fmt)


def _add_emulate(sub: Any, fmt: type[argparse.HelpFormatter]) -> None:
    from qoslab.emulate import cli as emulate_cli

    emulate_cli.add_emulate_parser(sub, fmt)


def _add_sweep(sub: Any, fmt: type[argparse.HelpFormatter]) -> None:
    from qoslab.sweep import command as sweep_cmd

    sweep_cmd.add_sweep_parser(sub, fmt)


def _add_advise(sub: Any, fmt: type[argparse.HelpFormatter]) -> None:
    from qoslab.sweep import advise

    advise.add_advise_parser(sub, fmt)


#: Every command in the order `qoslab --help` lists them: its one-line help
#: (shown without importing the command's module; tests/test_cli_startup.py
#: checks it is the one the module's own parser gives) and what adds its
#: full parser. meter and shape are built here (_add_conditioner_parsers).
COMMANDS: dict[str, tuple[str, Callable[[Any, type[argparse.HelpFormatter]], None] | None]] = {
    "run": ("simulate a scenario file", _add_run),
    "analyze": ("analyse a pcap/pcapng capture (flows, TCP analysis, policing)", _add_analyze),
    "import": ("turn a tc script or Cisco MQC config into the scenario policy TOML", _add_import),
    "compare": ("run scenarios side by side (one table, overlaid plots, one report)", _add_compare),
    "reproduce": (
        "run the published experiments and compare with their numbers",
        _add_reproduce,
    ),
    "emulate": ("run a scenario with real Linux TCP through qoslab's conditioners", _add_emulate),
    "sweep": (
        "run a scenario over a grid of key values and seeds; query and plot the results",
        _add_sweep,
    ),
    "advise": (
        "which policer Bc / shaper queue for this rate, RTT and flows; police or shape?",
        _add_advise,
    ),
    "meter": ("colour (and police) a trace CSV with a meter", None),
    "shape": ("shape a trace CSV with a shaper, queue, scheduler or policy tree", None),
}


def _command_of(argv: Sequence[str] | None) -> str | None:
    """The command word of ``argv``: its first word not starting with '-'
    (the top-level options, --help and --version, take no value)."""
    args = sys.argv[1:] if argv is None else argv
    return next((a for a in args if not a.startswith("-")), None)


def _build_parser(command: str | None = None, *, full: bool = True) -> argparse.ArgumentParser:
    """The parser; with ``full=False`` only ``command``'s subparser is built
    in full (its module imported) and the others are one-line entries, which
    is all `qoslab --help` and `qoslab CMD ...` need."""
    fmt = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog="qoslab",
        description="qoslab: a traffic-conditioning laboratory",
        epilog=MAIN_EPILOG,
        formatter_class=fmt,
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"qoslab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (helptext, add) in COMMANDS.items():
        if add is None:
            _add_conditioner_parser(sub, fmt, name)
        elif full or name == command:
            add(sub, fmt)
        else:
            sub.add_parser(name, help=helptext, add_help=False)
    return parser


def _add_conditioner_parser(sub: Any, fmt: type[argparse.HelpFormatter], name: str) -> None:
    """`qoslab meter` / `qoslab shape` (cheap: argparse only)."""
    helptext = COMMANDS[name][0]
    epilog = METER_EPILOG if name == "meter" else SHAPE_EPILOG
    p = sub.add_parser(
        name,
        help=helptext,
        description=helptext,
        epilog=epilog,
        formatter_class=fmt,
        allow_abbrev=False,
    )
    p.add_argument("kind", nargs="?", metavar="KIND", help=f"the {name} kind (see --list)")
    p.add_argument(
        "--list", action="store_true", help=f"list the {name} kinds (with --json: as JSON)"
    )
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a parameter (repeatable); '--KEY VALUE' works too",
    )
    if name == "shape":
        p.add_argument(
            "--policy",
            metavar="TOML",
            help="KIND tree: a policy TOML file, or the TOML inline "
            "(the table of a scenario's [policy.LINK.DIR])",
        )
    p.add_argument("--input", metavar="CSV", help="the trace to read ('-': stdin)")
    p.add_argument(
        "--output",
        metavar="CSV",
        help="where to write the per-packet result ('-': stdout, then nothing else is printed)",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def _collect_params(pairs: Sequence[str], extras: Sequence[str]) -> dict[str, str]:
    """``--param k=v`` values then unknown ``--k v`` / ``--k=v`` options."""
    items: list[tuple[str, str]] = []
    for pv in pairs:
        key, eq, value = pv.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"--param expects KEY=VALUE, got '{pv}'")
        items.append((key.strip(), value))
    i = 0
    while i < len(extras):
        tok = extras[i]
        if not tok.startswith("--") or tok == "--":
            raise UsageError(f"unexpected argument '{tok}'")
        key, eq, value = tok[2:].partition("=")
        if not eq:
            if i + 1 >= len(extras) or extras[i + 1].startswith("--"):
                raise UsageError(f"option --{key} needs a value (e.g. --{key} VALUE)")
            value = extras[i + 1]
            i += 1
        items.append((key, value))
        i += 1
    out: dict[str, str] = {}
    for k, v in items:
        norm = k.lower().replace("_", "-")
        if norm in out:
            from qoslab.api import _config_error

            raise _config_error(norm, "given more than once")
        out[norm] = v
    return out


def _list(kinds: list[tuple[str, str, str]], family: str, as_json: bool = False) -> int:
    if as_json:
        rows = [{"kind": k, "family": f, "description": d} for k, f, d in kinds]
        print(json.dumps(rows, indent=2))
        return 0
    if not kinds:
        print(f"no {family} kinds are built into this qoslab")
        return 0
    width = max(len(k) for k, _, _ in kinds)
    fwidth = max(len(f) for _, f, _ in kinds)
    for k, f, d in kinds:
        print(f"{k:<{width}}  {f:<{fwidth}}  {d}")
    return 0


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def _print_params(kind: str, params: dict[str, Any]) -> None:
    """``kind: k=v ...``, then one indented line per class/band/warning."""
    from qoslab.api import params_lines

    head, *items = params_lines(params)
    print(f"{kind}: {head}")
    for line in items:
        print(f"  {line}")


def _run_meter(args: argparse.Namespace, params: dict[str, str]) -> int:
    from qoslab.api import COLOR_NAMES
    from qoslab.tracecmd import run_meter

    summary = run_meter(args.kind, params, args.input, args.output or None)
    described = summary["params"]
    if args.output == outputs.STDOUT:
        return 0  # stdout carries the per-packet CSV and nothing else
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    _print_params(summary["kind"], described)
    print(f"{'colour':<8}{'packets':>10}{'bytes':>14}{'% bytes':>9}")
    total = summary["bytes"]
    for c in COLOR_NAMES:
        v = summary["colors"][c]
        print(f"{c:<8}{v['packets']:>10}{v['bytes']:>14}{_pct(v['bytes'], total):>9}")
    d = summary["dropped"]
    print(f"{'dropped':<8}{d['packets']:>10}{d['bytes']:>14}{_pct(d['bytes'], total):>9}")
    if args.output:
        print(f"wrote {args.output}")
    return 0


def _run_shape(args: argparse.Namespace, params: dict[str, str]) -> int:
    from qoslab.tracecmd import run_shape

    s, classes, described = run_shape(
        args.kind, params, args.policy, args.input, args.output or None
    )
    summary: dict[str, Any] = {
        "command": "shape",
        "kind": described.get("kind", args.kind),
        "params": described,
        "input": args.input,
        "output": args.output,
        **s,
    }
    if args.policy is not None:
        summary["policy"] = args.policy
    if classes:
        summary["classes"] = classes
    if args.output == outputs.STDOUT:
        return 0  # stdout carries the per-packet CSV and nothing else
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    # The tree's warnings are printed below, once.
    shown = {k: v for k, v in described.items() if not (k == "warning" and s.get("warnings"))}
    _print_params(summary["kind"], shown)
    total = s["bytes"]
    print(f"{'':<8}{'packets':>10}{'bytes':>14}{'% bytes':>9}")
    for label in ("sent", "dropped"):
        v = s[label]
        print(f"{label:<8}{v['packets']:>10}{v['bytes']:>14}{_pct(v['bytes'], total):>9}")
    delay = s["delay_ns"]
    print(
        f"delay   max {delay['max'] / 1e6:.3f} ms, mean {delay['mean'] / 1e6:.3f} ms; "
        f"max backlog {s['max_backlog_packets']} packets"
    )
    if len(classes) > 1:
        _print_classes(classes)
    for w in s.get("warnings", []):
        print(f"warning: {w}")
    if args.output:
        print(f"wrote {args.output}")
    return 0


def _print_classes(classes: list[dict[str, Any]]) -> None:
    """One line per class, indented under its parent (tc -s class show)."""
    depth = [0] * len(classes)
    for i, c in enumerate(classes):
        if c["parent"] is not None:
            depth[i] = depth[c["parent"]] + 1
    names = [f"{'  ' * d}{c['name']}" for d, c in zip(depth, classes, strict=True)]
    w = max(8, *(len(n) for n in names))
    print(f"{'class':<{w}}  {'kind':<10}{'in':>9}{'sent':>9}{'dropped':>9}{'max queue':>11}")
    for n, c in zip(names, classes, strict=True):
        print(
            f"{n:<{w}}  {c['kind']:<10}{c['packets_in']:>9}{c['packets_out']:>9}"
            f"{c['packets_dropped']:>9}{c['max_queue_packets']:>11}"
        )


def _run(argv: Sequence[str] | None) -> int:
    parser = _build_parser(_command_of(argv), full=False)
    args, extras = parser.parse_known_args(argv)
    if args.command is None:
        if extras:
            raise UsageError(f"unrecognized arguments: {' '.join(extras)} (see 'qoslab --help')")
        parser.print_help()  # bare `qoslab`: the help, as `qoslab --help` (status 0)
        return 0
    if args.command == "emulate":
        return _run_emulate(args, extras)
    if args.command in ("sweep", "advise"):
        return _run_sweep(args, extras)
    if args.command == "import":
        from qoslab import importcmd as import_cmd

        if extras:
            raise UsageError(f"import: unrecognized arguments: {' '.join(extras)}")
        try:
            return import_cmd.main(args)
        except ValueError as e:
            raise UsageError(f"import: {e}") from None
    if args.command == "analyze":
        from qoslab import analyze as analyze_cmd

        if extras:
            raise UsageError(f"analyze: unrecognized arguments: {' '.join(extras)}")
        try:
            return analyze_cmd.main(args)
        except ValueError as e:
            raise UsageError(f"analyze: {e}") from None
    if args.command in ("compare", "reproduce") or getattr(args, "report", None) is not None:
        return _run_viz(args, extras)
    if args.command == "run":
        from qoslab import run as run_cmd

        if extras:
            raise UsageError(f"run: unrecognized arguments: {' '.join(extras)}")
        try:
            return run_cmd.main(args)
        except ValueError as e:  # a bad --capture / [capture] that is not located
            if isinstance(e, (ScenarioError, ConfigError)):
                raise
            raise UsageError(f"run: {e}") from None
    kinds = _core.meter_kinds() if args.command == "meter" else _core.shaper_kinds()
    if args.list:
        return _list(kinds, "meter" if args.command == "meter" else "shaper", args.json)
    where = f"(see 'qoslab {args.command} --help')"
    if not args.kind:
        raise UsageError(f"{args.command}: KIND is required {where}; kinds: 'qoslab meter --list'")
    if args.kind.startswith("-"):
        raise UsageError(f"{args.command}: KIND must come first {where}")
    names = {k for k, _, _ in kinds}
    late = [x for x in extras if x.lower() in names]
    if args.kind.lower() not in names and late:
        # `meter --cir 1mbit srtcm`: argparse took '1mbit' for KIND.
        raise UsageError(
            f"{args.command}: KIND must come first: 'qoslab {args.command} {late[0]} ...'"
        )
    params = _collect_params(args.param, extras)
    if not args.input:
        raise UsageError(f"{args.command}: --input CSV is required {where}")
    if args.output is not None:  # before the run; "" is refused, not ignored
        outputs.check_file(args.output, "--output", [args.input])
    try:
        if args.command == "meter":
            return _run_meter(args, params)
        return _run_shape(args, params)
    except ConfigError as e:
        raise _with_typo_hint(e, params) from None


# --- viz: `qoslab compare`, `qoslab reproduce` and `qoslab run --report` -----


def _run_viz(args: argparse.Namespace, extras: Sequence[str]) -> int:
    from pathlib import Path

    from qoslab import compare, report, reproduce
    from qoslab import run as run_cmd

    if extras:
        raise UsageError(f"{args.command}: unrecognized arguments: {' '.join(extras)}")
    try:
        if args.command == "compare":
            return compare.main(args)
        if args.command == "reproduce":
            return reproduce.main(args)
    except ValueError as e:
        raise UsageError(f"{args.command}: {e}") from None
    path = args.report or str(Path(args.out or ".") / "report.html")

    def write(result: Any, text: str) -> None:
        report.run_report(result, text, extra=report.run_captures(args)).write(path)
        if not args.quiet and not args.json and path != outputs.STDOUT:
            print(f"wrote {path}")

    try:
        return run_cmd.main(args, on_result=write)
    except ValueError as e:  # a bad --capture / [capture] that is not located
        if isinstance(e, (ScenarioError, ConfigError)):
            raise
        raise UsageError(f"{args.command}: {e}") from None


def _run_emulate(args: argparse.Namespace, extras: Sequence[str]) -> int:
    from qoslab.emulate import cli as emulate_cli

    if extras:
        raise UsageError(f"emulate: unrecognized arguments: {' '.join(extras)}")
    try:
        return emulate_cli.main(args)
    except ValueError as e:
        if isinstance(e, (ScenarioError, ConfigError)):
            raise
        raise UsageError(f"emulate: {e}") from None


def _run_sweep(args: argparse.Namespace, extras: Sequence[str]) -> int:
    from qoslab.sweep import advise
    from qoslab.sweep import command as sweep_cmd

    if extras:
        raise UsageError(f"{args.command}: unrecognized arguments: {' '.join(extras)}")
    try:
        return (sweep_cmd if args.command == "sweep" else advise).main(args)
    except ValueError as e:
        if isinstance(e, (ScenarioError, ConfigError)):
            raise
        raise UsageError(f"{args.command}: {e}") from None


def _with_typo_hint(e: ConfigError, params: dict[str, str]) -> ConfigError:
    """A required parameter is reported missing before unknown keys are;
    if the user gave a near spelling of it, say so."""
    param, message = getattr(e, "param", ""), getattr(e, "message", "")
    if not message.startswith("missing"):
        return e
    # A parameter the kind knows ('cir' beside a missing 'eir') is no typo.
    known = _known_params(e)
    candidates = [k for k in params if k != param and k not in known]
    near = difflib.get_close_matches(param, candidates, n=1, cutoff=0.5)
    if not near:
        return e
    from qoslab.api import _config_error

    return _config_error(param, f"{message} (you gave '{near[0]}': a typo?)")


def _known_params(e: ConfigError) -> set[str]:
    """The parameter names the kind of ``e`` takes, from its description
    (``mef needs eir`` → the kind; its registry line lists the keys)."""
    message = getattr(e, "message", "")
    kind = message.split(" needs ", 1)[0].removeprefix("missing: ").strip()
    for k, _family, description in [*_core.meter_kinds(), *_core.shaper_kinds()]:
        if k == kind:
            return {w.strip("(),|:; ").lower() for w in description.replace("|", ",").split()}
    return set()


#: Longest error line printed: a quoted value can be megabytes.
MAX_ERROR_CHARS = 600


def _truncated(text: str) -> str:
    if len(text) <= MAX_ERROR_CHARS:
        return text
    keep = MAX_ERROR_CHARS // 2
    return f"{text[:keep]}…[{len(text) - 2 * keep} characters]…{text[-keep:]}"


def _one_line(text: str) -> str:
    """``text`` with newlines and other control characters escaped (a value
    quoted from the user's file can hold them), so an error stays one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _fail(message: str) -> int:
    print(f"qoslab: error: {_truncated(_one_line(message))}", file=sys.stderr)
    return EXIT_USAGE


#: Exit status after the reader of stdout went away (``| head``): what a
#: shell reports for a process killed by SIGPIPE, 128 + 13.
EXIT_BROKEN_PIPE = 141


def _broken_pipe() -> int:
    """The reader of stdout closed it: stop quietly, as a Unix filter does.
    stdout is pointed at /dev/null so the interpreter's final flush does not
    complain again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the CLI; returns the exit status (0 ok, 2 bad input)."""
    try:
        return _run(argv)
    except SystemExit as e:  # --help / --version
        return e.code if isinstance(e.code, int) else 0
    except UsageError as e:
        return _fail(str(e))
    except ScenarioError as e:
        return _fail(str(e))
    except (Cancelled, KeyboardInterrupt):
        print("qoslab: cancelled", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return _broken_pipe()
    except MemoryError as e:  # qoslab.ResourceError: over --memory-limit, or out of memory
        return _fail(str(e) or "out of memory")
    except ConfigError as e:
        param = getattr(e, "param", None)
        message = getattr(e, "message", None)
        return _fail(f"{param}: {message}" if param and message else str(e))
    except OSError as e:
        where = e.filename if e.filename is not None else "qoslab"
        return _fail(f"{where}: {e.strerror or e}")
    except Exception as e:
        # The error classes of modules imported only by some commands: such
        # an error can only come from a module that is loaded.
        traceio, netns = sys.modules.get("qoslab.traceio"), sys.modules.get("qoslab.emulate.netns")
        if traceio is not None and isinstance(e, traceio.TraceFileError):
            return _fail(str(e))
        if netns is not None and isinstance(e, netns.EmulationSetupError):
            return _fail(f"emulate: {e}")
        raise


if __name__ == "__main__":
    sys.exit(main())
