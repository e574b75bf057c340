"""`qoslab import tc|cisco FILE|-`: a tc script (or `tc -s -d … show` output)
or Cisco MQC into the scenario policy TOML (`[policy.LINK.DIR]`), with the
derived defaults and the warnings tc or IOS would print; `--json` for the spec.

The parsing is `qoslab-import` (Rust, `_core.import_config`); this module
only reads the file and prints."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from qoslab import _core

EPILOG = """\
The output is the [policy.LINK.DIR] table of a scenario (paste it into one). A
scenario can also embed the text itself, errors located at their line in the file:
  [policy.bottleneck.egress]
  tc = \"\"\"tc qdisc add dev eth0 root tbf rate 1mbit burst 3000 limit 30000\"\"\"
What maps to what: docs/import.md. From a live system:
  tc -s -d qdisc show dev eth1; tc -s -d class show dev eth1   (pipe into 'import tc -')

examples:
  qoslab import tc examples/import/tbf.sh
  qoslab import tc examples/import/htb-sfq.sh --json
  qoslab import cisco --platform ios-xe examples/import/isr4000-shaper.cfg
  qoslab import cisco --platform ios examples/import/llq.cfg --interface Serial0/0
  qoslab import tc examples/import/tbf.sh --link r1-r2
"""


def add_import_parser(sub: Any, fmt: type[argparse.HelpFormatter]) -> None:
    p = sub.add_parser(
        "import",
        help="turn a tc script or Cisco MQC config into the scenario policy TOML",
        description=(
            "Read a Linux tc script (or tc -s -d qdisc/class show output) or a Cisco "
            "IOS / IOS XE MQC configuration and print the equivalent [policy.LINK.DIR] "
            "table, every derived default (Bc, Tc, limit, quantum, queue-limit) written "
            "out as a comment."
        ),
        epilog=EPILOG,
        formatter_class=fmt,
        allow_abbrev=False,
    )
    p.add_argument("source", choices=("tc", "cisco"), help="the configuration language")
    p.add_argument("file", metavar="FILE", help="the configuration file, '-' for stdin")
    p.add_argument(
        "--platform",
        choices=("ios", "ios-xe"),
        default="ios-xe",
        help="cisco: whose defaults apply (classic IOS or IOS XE; default ios-xe)",
    )
    p.add_argument(
        "--direction",
        choices=("egress", "ingress"),
        default="egress",
        help="which policy (tc root / ingress; MQC service-policy output / input)",
    )
    p.add_argument(
        "--interface",
        "--dev",
        dest="attach",
        metavar="NAME",
        help="the device or interface, when the text configures several",
    )
    p.add_argument(
        "--link",
        metavar="LINK",
        help="the scenario link for the table header (default: bottleneck; access for ingress)",
    )
    p.add_argument("--json", action="store_true", help="print the spec, derived values, warnings")


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8") as f:
        return f.read()


def main(args: argparse.Namespace) -> int:
    """Runs `qoslab import`; raises `_core.ConfigImportError` located in FILE."""
    text = _read(args.file)
    link = args.link or ("bottleneck" if args.direction == "egress" else "access")
    table = f"policy.{link}.{args.direction}"
    try:
        out = _core.import_config(
            args.source,
            text,
            direction=args.direction,
            attach=args.attach,
            platform=args.platform,
            table=table,
        )
    except _core.ConfigImportError as e:
        where = "<stdin>" if args.file == "-" else args.file
        line = getattr(e, "line", 0)
        if line:
            col = getattr(e, "column", 0)
            token = getattr(e, "token", "")
            message = getattr(e, "message", str(e))
            detail = f"'{token}': {message}" if token else message
            raise ValueError(f"{where}:{line}:{col}: {detail}") from None
        raise ValueError(f"{where}: {e}") from None
    if args.json:
        doc = {k: out[k] for k in ("attach", "direction", "spec", "warnings", "policies")}
        doc["derived"] = dict(out["derived"])
        doc["build_error"] = out["build_error"]
        doc["source_lines"] = out["source_lines"]
        print(json.dumps(doc, indent=2))
    else:
        sys.stdout.write(out["toml"])
        for w in out["warnings"]:
            print(f"qoslab import: warning: {w}", file=sys.stderr)
    return 0
