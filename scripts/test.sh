#!/usr/bin/env bash
# All of qoslab's tests: Rust format, lints, docs and tests (doctests included);
# Python lints, types, doctests and tests.
# Run scripts/setup.sh once first.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"

echo "== cargo fmt --check"; cargo fmt --all --check
echo "== cargo clippy";      cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test";        cargo test --workspace --exclude qoslab-py  # + doctests
# Broken or private intra-doc links fail here, not on docs.rs.
echo "== cargo doc";         RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
echo "== rebuild extension"; pip install -q -e '.[dev]'
# (one command per line: `set -e` ignores failures on the left of `&&`)
echo "== ruff check";        ruff check python tests examples scripts validation benchmarks
echo "== ruff format";       ruff format --check python tests examples scripts validation benchmarks
echo "== mypy";              mypy  # files and settings: [tool.mypy] in pyproject.toml
# The documented examples (`>>>` in docstrings) run as written.
mapfile -t doctested < <(grep -rl --include='*.py' '>>> ' python/qoslab)
echo "== doctests";          pytest -q --doctest-modules "${doctested[@]}"
# pytest exits 5 when it collects nothing; with `set -e` that fails the run,
# so a lost tests/ directory cannot pass silently.
echo "== pytest";            pytest -q tests
