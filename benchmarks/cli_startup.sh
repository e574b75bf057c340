#!/usr/bin/env bash
# Wall time of qoslab commands, median of 5 runs each, in seconds, with the
# CPU time (user + sys, median) and the load average before each line (a
# loaded machine gives ratios, not speeds: compare CPU times there; the
# targets are wall times on a quiet machine).
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
  python3 -c 'import os, resource as r, statistics as s, subprocess as p, sys, time
def t():
    c0 = r.getrusage(r.RUSAGE_CHILDREN); t0 = time.perf_counter()
    p.run(sys.argv[1:], stdout=p.DEVNULL, check=True)
    w = time.perf_counter() - t0; c1 = r.getrusage(r.RUSAGE_CHILDREN)
    return w, c1.ru_utime - c0.ru_utime + c1.ru_stime - c0.ru_stime
load = os.getloadavg()[0]
runs = [t() for _ in range(5)]
wall, cpu = s.median(w for w, _ in runs), s.median(c for _, c in runs)
print("qoslab", *sys.argv[2:], end=": "); print(f"median of 5 = {wall:.3f} s (CPU {cpu:.3f} s; load {load:.1f})")' \
    "${QOSLAB:-$PWD/.venv/bin/qoslab}" "$@"
}
if [ $# -gt 0 ]; then
  bench "$@"
else
  bench --help
  bench run scenarios/isr4000-police.toml
  bench run scenarios/isr4000-police.toml --report "$tmp/report.html" --quiet
fi
