#!/usr/bin/env bash
# Wall time of qoslab commands, median of 5 runs each, in seconds, with the
# load average before each line (a loaded machine gives ratios, not speeds).
# Usage: bash benchmarks/cli_startup.sh            (the issue-14 set, below)
#        bash benchmarks/cli_startup.sh ARGS...    (one command: qoslab ARGS)
# The set: `--help` (target <= 0.3 s), `run` of the ISR 4000 police case
# without figures (<= 0.3 s) and with its HTML report (<= 1.5 s).
# QOSLAB_DRAWER=0 in the environment times `run --report` without the figure
# processes started at the command's beginning (qoslab.cli._drawer): the A/B.
set -euo pipefail
cd "$(dirname "$0")/.."
# Byte-compile the package first: an editable install under
# PYTHONDONTWRITEBYTECODE=1 would otherwise compile qoslab's modules from
# source on every run (about 0.1 s of a 0.3 s `run`), which an installed
# package never does.
"${PYTHON:-$PWD/.venv/bin/python}" -m compileall -q python/qoslab
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bench() {
  python3 -c 'import os, statistics as s, subprocess as p, sys, time
def t():
    t0 = time.perf_counter(); p.run(sys.argv[1:], stdout=p.DEVNULL, check=True); return time.perf_counter() - t0
load = os.getloadavg()[0]
print("qoslab", *sys.argv[2:], end=": "); print(f"median of 5 = {s.median(t() for _ in range(5)):.3f} s (load {load:.1f})")' \
    "${QOSLAB:-$PWD/.venv/bin/qoslab}" "$@"
}
if [ $# -gt 0 ]; then
  bench "$@"
else
  bench --help
  bench run scenarios/isr4000-police.toml
  bench run scenarios/isr4000-police.toml --report "$tmp/report.html" --quiet
fi
