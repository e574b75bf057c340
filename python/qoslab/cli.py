"""The ``qoslab`` command line."""

from __future__ import annotations

import argparse
import sys

from qoslab import __version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="qoslab", description="traffic-conditioning laboratory")
    parser.add_argument("--version", action="version", version=f"qoslab {__version__}")
    parser.parse_args(argv)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
