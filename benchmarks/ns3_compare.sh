#!/usr/bin/env bash
# Paired timing of ns-3 3.44 and qoslab's engine on twin scenarios — CPU
# seconds (user + system) of each, run back to back per case, with both
# goodputs. Cases:
#   RATE:SECS:FLOWS  the FIFO dumbbell (C++ twin benchmarks/ns3/dumbbell_fifo.cc,
#                    qoslab `bench grid:RATE:SECS:FLOWS`, twin scenario
#                    benchmarks/ns3/dumbbell_fifo.toml)
#   a | b | c        the engine bench's cases: 4 flows through a 20 Mbit/s TBF,
#                    through a 20 Mbit/s policer, 100 flows at 70 Mbit/s (C++
#                    twins in benchmarks/ns3/dumbbell_cases.cc)
#   pip install ns3            # the wheel ships ns-3's headers and libraries
#   bash benchmarks/ns3_compare.sh [CASE ...]   # default 100000000:10:4 a b c
# NS3_DIR=... overrides where the wheel's ns3/ directory (include/, lib64/) is.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
ns3=${NS3_DIR:-$(python3 - <<'PY' 2>/dev/null || true
import importlib.util, pathlib
spec = importlib.util.find_spec("ns3") or importlib.util.find_spec("ns")
if spec and spec.submodule_search_locations:
    for d in spec.submodule_search_locations:
        p = pathlib.Path(d)
        for cand in (p, p.parent / "ns3"):
            if (cand / "include" / "ns3" / "core-module.h").exists():
                print(cand); raise SystemExit
PY
)}
if [ -z "$ns3" ] || [ ! -f "$ns3/include/ns3/core-module.h" ]; then
  echo "ns3_compare: ns-3 not found: 'pip install ns3' (or set NS3_DIR to the wheel's ns3/ directory)" >&2
  exit 2
fi
for name in dumbbell_fifo dumbbell_cases; do
  twin=target/ns3-twin/$name
  src=benchmarks/ns3/$name.cc
  if [ ! -x "$twin" ] || [ "$src" -nt "$twin" ]; then
    mkdir -p "$(dirname "$twin")"
    echo "building the ns-3 twin $name against $ns3 ..." >&2
    g++ -O2 -std=c++20 -DNS3_BUILD_PROFILE_RELEASE -DNS3_LOG_ENABLE -DNS3_ASSERT_ENABLE \
      -I"$ns3/include" "$src" -o "$twin.tmp" -L"$ns3/lib64" -Wl,-rpath,"$ns3/lib64" \
      -lns3.44-applications -lns3.44-internet -lns3.44-traffic-control \
      -lns3.44-point-to-point -lns3.44-network -lns3.44-core -lns3.44-stats -lns3.44-bridge
    mv "$twin.tmp" "$twin"
  fi
done
cargo build --release -q -p qoslab-sim --example bench
bench=target/release/examples/bench
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-22s %12s %12s %9s %16s %16s\n' case "ns-3 CPU s" "qoslab CPU s" "ratio" "ns-3 Mbit/s" "qoslab Mbit/s"
[ $# -gt 0 ] || set -- 100000000:10:4 a b c
for c in "$@"; do
  case $c in
    a | b | c) twin=target/ns3-twin/dumbbell_cases; args=("$c"); ours=$c ;;
    *:*:*)
      IFS=: read -r rate secs flows <<<"$c"
      twin=target/ns3-twin/dumbbell_fifo; args=("$rate" "$secs" "$flows")
      ours="grid:$rate:$secs:$flows" ;;
    *) echo "ns3_compare: unknown case '$c' (a, b, c or RATE:SECS:FLOWS)" >&2; exit 2 ;;
  esac
  t=$( { /usr/bin/time -f 'CPU %U %S' "$twin" "${args[@]}" >"$twin.out"; } 2>&1 | grep '^CPU')
  ns_cpu=$(awk '{print $2 + $3}' <<<"$t")
  ns_gp=$(grep -o 'goodput [0-9.]*' "$twin.out" | cut -d' ' -f2)
  r=$("$bench" "$ours" | grep '^RESULT')
  q_cpu=$(awk '{print $3}' <<<"$r")
  q_gp=$(awk '{printf "%.3f", $8 / 1e6}' <<<"$r")
  printf '%-22s %12.3f %12.3f %8.0fx %16s %16s\n' "$c" "$ns_cpu" "$q_cpu" \
    "$(awk -v a="$ns_cpu" -v b="$q_cpu" 'BEGIN{print a / b}')" "$ns_gp" "$q_gp"
done
