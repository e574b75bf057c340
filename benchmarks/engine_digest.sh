#!/usr/bin/env bash
# Result digests of every shipped scenario and every engine bench case, to
# prove an engine change leaves results bit-identical (issue 12). Pure Rust:
# no Python extension to rebuild.
#   bash benchmarks/engine_digest.sh FILE            # record into FILE
#   bash benchmarks/engine_digest.sh --check FILE    # record, compare with FILE
# A line is `name digest=… delivered_bytes=… retransmits=… lost=…
# rtt_samples=… policy_drops=… events=…`; the digest covers every flow and
# policy row and the per-segment / per-RTT-sample series (see
# `SimResult::digest`). --check compares everything but the event count
# (printed before -> after) and exits 1 when any result differs.
# benchmarks/engine_digest.txt is the record of the current model: a change
# that is meant to alter results regenerates it (first form) and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
check=
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
want=${1:?usage: engine_digest.sh [--check] FILE}
cargo build --release -q -p qoslab-sim --example bench
cargo build --release -q -p qoslab-scenario --example digest
out=$(mktemp)
trap 'rm -f "$out" "$out.a" "$out.b"' EXIT
target/release/examples/digest scenarios/*.toml scenarios/trees/*.toml \
  python/qoslab/data/scenarios/reproduce/*.toml >"$out"
target/release/examples/bench digest >>"$out"
if [ -z "$check" ]; then
  mv "$out" "$want.tmp" && mv "$want.tmp" "$want"
  echo "$(wc -l <"$want") digests in $want"
  exit 0
fi
strip() { sed 's/ events=[0-9]*$//' "$1"; }
strip "$want" >"$out.a"
strip "$out" >"$out.b"
paste -d' ' <(awk '{print $1, $NF}' "$want") <(awk '{print $NF}' "$out") |
  sed 's/events=//g' | awk '{printf "%-45s events %10s -> %10s\n", $1, $2, $3}'
if diff -u "$out.a" "$out.b"; then
  echo "all $(wc -l <"$out.b") results identical (apart from event counts)"
else
  echo "RESULTS DIFFER (lines above)" >&2
  exit 1
fi
