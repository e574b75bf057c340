"""``qoslab meter`` and ``qoslab shape``: a trace CSV (or a capture) through
any kind of the registry (qoslab-policy), with the summary they print.

Options the command does not know (``--cir 20mbit``) become the kind's
parameters, as does ``--param cir=20mbit``: click passes them through
(``ignore_unknown_options``) and :func:`_collect_params` reads them.
"""

from __future__ import annotations

import argparse
import difflib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from qoslab import _core
from qoslab._core import ConfigError
from qoslab.cli._click import CONTEXT_SETTINGS, PATH, Command, UsageError, namespace

if TYPE_CHECKING:
    from qoslab.table import Table

#: One-line helps (also the commands' descriptions).
METER_HELP = "colour (and police) a trace CSV with a meter"
SHAPE_HELP = "shape a trace CSV with a shaper, queue, scheduler or policy tree"

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


def _options(name: str) -> list[click.Parameter]:
    """The parameters meter and shape share."""
    return [
        click.Argument(
            ["kind"], required=False, metavar="KIND", help=f"the {name} kind (see --list)"
        ),
        click.Option(
            ["--list"], is_flag=True, help=f"list the {name} kinds (with --json: as JSON)"
        ),
        click.Option(
            ["--param"],
            multiple=True,
            metavar="KEY=VALUE",
            help="a parameter (repeatable); '--KEY VALUE' works too",
        ),
        click.Option(["--input"], type=PATH, metavar="CSV", help="the trace to read ('-': stdin)"),
        click.Option(
            ["--output"],
            type=PATH,
            metavar="CSV",
            help="where to write the per-packet result ('-': stdout, then nothing else is printed)",
        ),
        click.Option(["--json"], is_flag=True, help="print the summary as JSON"),
    ]


#: Unknown options are the kind's parameters, and with them their values.
_PASS_THROUGH = {**CONTEXT_SETTINGS, "ignore_unknown_options": True, "allow_extra_args": True}


def _make(name: str, helptext: str, epilog: str) -> click.Command:
    params = _options(name)
    if name == "shape":
        params.insert(
            3,
            click.Option(
                ["--policy"],
                metavar="TOML",
                help="KIND tree: a policy TOML file, or the TOML inline "
                "(the table of a scenario's [policy.LINK.DIR])",
            ),
        )

    def callback(**values: Any) -> int:
        ctx = click.get_current_context()
        return _conditioner(name, values, ctx.args)

    return Command(
        name,
        params=params,
        callback=callback,
        help=helptext,
        epilog=epilog,
        context_settings=_PASS_THROUGH,
    )


def _conditioner(command: str, values: dict[str, Any], extras: Sequence[str]) -> int:
    from qoslab import outputs

    args = namespace(command, values)
    kinds = _core.meter_kinds() if command == "meter" else _core.shaper_kinds()
    if args.list:
        return _list(kinds, "meter" if command == "meter" else "shaper", args.json)
    where = f"(see 'qoslab {command} --help')"
    if not args.kind:
        raise UsageError(f"{command}: KIND is required {where}; kinds: 'qoslab meter --list'")
    if args.kind.startswith("-"):
        # `meter --cir 1mbit srtcm`: the unknown option took KIND's place.
        names = {k for k, _, _ in kinds}
        late = [x for x in extras if x.lower() in names]
        if late:
            raise UsageError(f"{command}: KIND must come first: 'qoslab {command} {late[0]} ...'")
        raise UsageError(f"{command}: KIND must come first {where}")
    params = _collect_params(args.param, extras)
    _warn_bytes_rates(params)
    if not args.input:
        raise UsageError(f"{command}: --input CSV is required {where}")
    if args.output is not None:  # before the run; "" is refused, not ignored
        outputs.check_file(args.output, "--output", [args.input])
    try:
        if command == "meter":
            return _run_meter(args, params)
        return _run_shape(args, params)
    except ConfigError as e:
        raise _with_typo_hint(e, params) from None


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


def _warn_bytes_rates(params: dict[str, str]) -> None:
    """A warning on stderr per rate given in tc's ``bps`` unit (bytes per
    second: ``--cir 50Mbps`` is 400 Mbit/s), as ``qoslab run`` warns for a
    scenario; stderr, so ``--output -`` keeps stdout for the CSV."""
    import sys

    from qoslab.table import bytes_rate_warning

    for key, value in params.items():
        w = bytes_rate_warning(value)
        if w is not None:
            print(f"qoslab: warning: --{key} {value} {w}", file=sys.stderr)


def _list(kinds: list[tuple[str, str, str]], family: str, as_json: bool = False) -> int:
    if as_json:
        rows = [{"kind": k, "family": f, "description": d} for k, f, d in kinds]
        print(json.dumps(rows, indent=2))
        return 0
    if not kinds:
        print(f"no {family} kinds are built into this qoslab")
        return 0
    from qoslab.table import print_tables

    cells = [[k, f, d] for k, f, d in kinds]
    print_tables([("", [("kind", "left"), ("family", "left"), ("description", "wrap")], cells)])
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
    from qoslab import outputs
    from qoslab.api import COLOR_NAMES
    from qoslab.tracecmd import run_meter

    summary = run_meter(args.kind, params, args.input, args.output or None)
    described = summary["params"]
    if args.output == outputs.STDOUT:
        return 0  # stdout carries the per-packet CSV and nothing else
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    from qoslab.table import print_tables

    _print_params(summary["kind"], described)
    total = summary["bytes"]
    counts = [(c, summary["colors"][c]) for c in COLOR_NAMES]
    print_tables([_counts_table("colour", [*counts, ("dropped", summary["dropped"])], total)])
    if args.output:
        print(f"wrote {args.output}")
    return 0


def _run_shape(args: argparse.Namespace, params: dict[str, str]) -> int:
    from qoslab import outputs
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
    from qoslab.table import print_tables

    _print_params(summary["kind"], shown)
    print_tables([_counts_table("", [(k, s[k]) for k in ("sent", "dropped")], s["bytes"])])
    delay = s["delay_ns"]
    print(
        f"delay max {delay['max'] / 1e6:.3f} ms, mean {delay['mean'] / 1e6:.3f} ms; "
        f"max backlog {s['max_backlog_packets']} packets"
    )
    if len(classes) > 1:
        print()
        print_tables([_class_table(classes)])
    for w in s.get("warnings", []):
        print(f"warning: {w}")
    if args.output:
        print(f"wrote {args.output}")
    return 0


def _counts_table(first: str, counts: list[tuple[str, dict[str, int]]], total: int) -> Table:
    """Packets and bytes per colour or outcome, with each one's share of the
    bytes (the JSON summary's ``packets`` / ``bytes``)."""
    cols = [(first, "left"), ("packets", "right"), ("bytes", "right"), ("% bytes", "right")]
    rows = [[k, str(v["packets"]), str(v["bytes"]), _pct(v["bytes"], total)] for k, v in counts]
    return ("", cols, rows)


def _class_table(classes: list[dict[str, Any]]) -> Table:
    """One line per class, indented under its parent (``tc -s class show``),
    with the columns of ``qoslab run``'s class table."""
    depth = [0] * len(classes)
    for i, c in enumerate(classes):
        if c["parent"] is not None:
            depth[i] = depth[c["parent"]] + 1
    cols = [("class", "left"), ("kind", "left")] + [
        (c, "right") for c in ("in", "out", "dropped", "drop%", "maxq pkts")
    ]
    rows = []
    for d, c in zip(depth, classes, strict=True):
        pin, drop = c["packets_in"], c["packets_dropped"]
        rows.append(
            [
                f"{'  ' * d}{c['name']}",
                c["kind"],
                str(pin),
                str(c["packets_out"]),
                str(drop),
                f"{100 * drop / pin:.1f}" if pin else "-",
                str(c["max_queue_packets"]),
            ]
        )
    return ("", cols, rows)


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


meter = _make("meter", METER_HELP, METER_EPILOG)
shape = _make("shape", SHAPE_HELP, SHAPE_EPILOG)
