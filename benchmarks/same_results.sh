#!/usr/bin/env bash
# Proves an engine change leaves every shipped scenario's result unchanged:
# runs `qoslab run FILE --json` on scenarios/, scenarios/trees/ and
# scenarios/reproduce/ and writes one JSON file per scenario into DIR.
#   bash benchmarks/same_results.sh DIR              # record
#   bash benchmarks/same_results.sh DIR BEFORE_DIR   # record, then diff with BEFORE_DIR
# Record BEFORE_DIR on the old commit (after `pip install -e .`), then DIR on
# the new one. The comparison is byte for byte on every line except the
# `"events":` count (the engine's work, which a performance change is meant
# to alter; printed before -> after); exit status 1 when anything else differs.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
out=${1:?usage: same_results.sh DIR [BEFORE_DIR]}
mkdir -p "$out"
for f in scenarios/*.toml scenarios/trees/*.toml scenarios/reproduce/*.toml; do
  name=$(echo "${f#scenarios/}" | tr / _)
  qoslab run "$f" --json > "$out/${name%.toml}.json.tmp"
  mv "$out/${name%.toml}.json.tmp" "$out/${name%.toml}.json"
done
echo "$(ls "$out" | wc -l) results in $out"
[ $# -ge 2 ] || exit 0
status=0
for b in "$2"/*.json; do
  a="$out/$(basename "$b")"
  if ! diff -q <(grep -v '^  "events": ' "$b") <(grep -v '^  "events": ' "$a") >/dev/null; then
    echo "DIFFERENT: $(basename "$b")"; status=1
  fi
  printf '%-40s events %10s -> %10s\n' "$(basename "$b" .json)" \
    "$(grep -o '^  "events": [0-9]*' "$b" | grep -o '[0-9]*$')" \
    "$(grep -o '^  "events": [0-9]*' "$a" | grep -o '[0-9]*$')"
done
[ $status -eq 0 ] && echo "all results byte-identical to $2 (apart from the event counts)"
exit $status
