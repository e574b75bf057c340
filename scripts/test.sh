#!/usr/bin/env bash
# All of qoslab's tests: Rust format, lints and tests; Python lints and tests.
# Run scripts/setup.sh once first.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"

echo "== cargo fmt --check"; cargo fmt --all --check
echo "== cargo clippy";      cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test";        cargo test --workspace --exclude qoslab-py
echo "== rebuild extension"; pip install -q -e '.[dev]'
# (one command per line: `set -e` ignores failures on the left of `&&`)
echo "== ruff check";        ruff check python tests examples
echo "== ruff format";       ruff format --check python tests examples
# pytest exits 5 when it collects nothing; with `set -e` that fails the run,
# so a lost tests/ directory cannot pass silently.
echo "== pytest";            pytest -q tests
