#!/usr/bin/env bash
# Set up a fresh Debian machine for qoslab: a virtualenv in .venv with the
# Python package (and its Rust extension, built by maturin) installed editable.
# Needs only python3 (with venv) and a Rust toolchain; everything else comes
# from PyPI / crates.io / Debian.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! python3 -m venv --help >/dev/null 2>&1; then
  apt-get update -q && apt-get install -y -q python3-venv
fi
# Headless Chromium + chromedriver: tests/test_report.py opens report.html in
# it (and fails when they are missing, unless QOSLAB_NO_BROWSER=1).
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  apt-get update -q && apt-get install -y -q chromium chromium-driver
fi
# The emulator (qoslab emulate) runs real iperf3 and ping between network
# namespaces and configures them with iproute2 (ip, tc, nstat) and ethtool.
need=()
for t in iperf3:iperf3 ethtool:ethtool ping:iputils-ping ip:iproute2 tc:iproute2 nstat:iproute2; do
  command -v "${t%%:*}" >/dev/null 2>&1 || need+=("${t#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}"
fi
for c in rustfmt clippy; do
  command -v "cargo-${c/rustfmt/fmt}" >/dev/null 2>&1 || rustup component add "$c" || true
done
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q 'maturin>=1.7,<2'
.venv/bin/pip install -q -e '.[dev]'
echo "qoslab is set up: activate with 'source .venv/bin/activate'"
