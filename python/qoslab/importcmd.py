"""`qoslab import tc|cisco FILE|-`: a tc script (or `tc -s -d … show` output)
or Cisco MQC into the scenario policy TOML (`[policy.LINK.DIR]`), with the
derived defaults and the warnings tc or IOS would print; `--json` for the spec.

The parsing is `qoslab-import` (Rust, `_core.import_config`); this module
only reads the file and prints."""

from __future__ import annotations

import argparse
import json
import sys

from qoslab import _core


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
