#!/usr/bin/env bash
# Wall time of `qoslab ARGS` (default: --help), median of 5 runs, in seconds.
# Usage: bash benchmarks/cli_startup.sh [ARGS...]   (after scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- --help
python3 -c 'import statistics as s, subprocess as p, sys, time
def t():
    t0 = time.perf_counter(); p.run(sys.argv[1:], stdout=p.DEVNULL, check=True); return time.perf_counter() - t0
print("qoslab", *sys.argv[2:], end=": "); print(f"median of 5 = {s.median(t() for _ in range(5)):.3f} s")' \
  "${QOSLAB:-$PWD/.venv/bin/qoslab}" "$@"
