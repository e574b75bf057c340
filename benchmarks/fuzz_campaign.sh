#!/usr/bin/env bash
# A longer fuzz campaign than CI's (issue 15): the same properties with far
# larger budgets. Prints each property's case count and outcome; any failure
# leaves proptest's / hypothesis's minimal failing case in the output (add it
# as a regression test). Usage: benchmarks/fuzz_campaign.sh [CASES]
# (default 10000 per parser property; conditioner properties get CASES/10
# per property, each case drawing one of 11 kinds, so >= 1000 per kind needs
# CASES >= 110000); the Python trace reader gets CASES. Run from the
# repository with .venv set up.
set -euo pipefail
cd "$(dirname "$0")/.."
cases="${1:-10000}"
echo "== scenario parser, unit parser: PROPTEST_CASES=$cases per property"
PROPTEST_CASES="$cases" cargo test -q -p qoslab-scenario --test fuzz
PROPTEST_CASES="$cases" cargo test -q -p qoslab-core --test fuzz_units
echo "== tc / MQC import parsers, capture reader: PROPTEST_CASES=$cases per property"
PROPTEST_CASES="$cases" cargo test -q --release -p qoslab-import --test fuzz
PROPTEST_CASES="$cases" cargo test -q --release -p qoslab-capture --test capture -- never_panic
echo "== conditioners up to the 2^62 ns horizon: PROPTEST_CASES=$((cases / 10))"
PROPTEST_CASES="$((cases / 10))" cargo test -q -p qoslab-core --test horizon
echo "== trace reader (whole and streamed): QOSLAB_FUZZ_TRACE_EXAMPLES=$cases"
QOSLAB_FUZZ_TRACE_EXAMPLES="$cases" .venv/bin/python -m pytest -q tests/test_fuzz.py \
  -k test_any_trace_reads_or_fails_with_its_line
echo "== CLI parameters, API times: QOSLAB_FUZZ_EXAMPLES=$((cases / 10))"
QOSLAB_FUZZ_EXAMPLES="$((cases / 10))" .venv/bin/python -m pytest -q tests/test_fuzz.py \
  -k "not test_any_trace_reads_or_fails_with_its_line"
