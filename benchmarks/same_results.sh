#!/usr/bin/env bash
# Proves an engine change leaves every shipped scenario's result unchanged:
# runs `qoslab run FILE --json` on scenarios/, scenarios/trees/ and the
# reproduction scenarios (python/qoslab/data/scenarios/reproduce/) and writes
# one JSON file per scenario into DIR.
#   bash benchmarks/same_results.sh DIR              # record
#   bash benchmarks/same_results.sh DIR BEFORE_DIR   # record, then diff with BEFORE_DIR
#   EXACT_RTT=1 bash benchmarks/same_results.sh ...  # runs with [record]
#     rtt_percentiles = "exact" (the summaries as before the RTT histogram)
# Record BEFORE_DIR on the old commit (after `pip install -e .`), then DIR on
# the new one; exit status 1 when any result differs.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
out=${1:?usage: same_results.sh DIR [BEFORE_DIR]}
mkdir -p "$out"
repro=python/qoslab/data/scenarios/reproduce
trap 'rm -f scenarios/.exact-rtt-* scenarios/*/.exact-rtt-* "$repro"/.exact-rtt-*' EXIT
for f in scenarios/*.toml scenarios/trees/*.toml "$repro"/*.toml; do
  name=$(echo "${f#scenarios/}" | sed 's|^python/qoslab/data/scenarios/||' | tr / _)
  if [ -n "${EXACT_RTT:-}" ]; then
    # Same directory level as the original (scenarios may name files beside them).
    g="$(dirname "$f")/.exact-rtt-$(basename "$f")"
    if grep -q '^\[record\]' "$f"; then
      sed 's/^\[record\]$/[record]\nrtt_percentiles = "exact"/' "$f" > "$g"
    else
      { cat "$f"; printf '\n[record]\nrtt_percentiles = "exact"\n'; } > "$g"
    fi
    run_file=$g
  else
    run_file=$f
  fi
  qoslab run "$run_file" --json > "$out/${name%.toml}.json.tmp"
  mv "$out/${name%.toml}.json.tmp" "$out/${name%.toml}.json"
  [ "$run_file" = "$f" ] || rm -f "$run_file"
done
echo "$(ls "$out" | wc -l) results in $out"
[ $# -ge 2 ] || exit 0
# Compared after dropping the keys a change may add or is meant to alter:
# the event count (printed before -> after) and the RTT summary's
# "percentiles" method; everything else must be equal value for value
# (Python's json round-trips floats exactly).
python3 - "$2" "$out" <<'PY'
import json, pathlib, sys

def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k not in ("events", "percentiles")}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x

before, after = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
bad = 0
for b in sorted(before.glob("*.json")):
    x, y = json.loads(b.read_text()), json.loads((after / b.name).read_text())
    same = json.dumps(strip(x), indent=1) == json.dumps(strip(y), indent=1)
    bad += not same
    print(f"{b.stem:40} events {x['events']:>10} -> {y['events']:>10}  {'same' if same else 'DIFFERENT'}")
print(f"{'all results identical' if not bad else f'{bad} results differ'} (apart from event counts)")
sys.exit(1 if bad else 0)
PY
