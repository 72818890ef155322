#!/usr/bin/env bash
# Builds the command line and the Python wheel in release mode, installs the wheel into a
# virtual environment under the target directory and runs python/bench/bench.py, which writes the
# Python section of docs/benchmarks.md. BENCH_REPS runs of each (default 3).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
venv=$target/python-bench-venv
export PIP_DISABLE_PIP_VERSION_CHECK=1
cargo build --release --locked -p pfsqos-cli
if ! "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
  rm -rf "$venv"
  "${PYTHON:-python3}" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet maturin pandas numpy
"$venv/bin/python" -m pip install --quiet pyarrow || echo "bench: without pyarrow" >&2
rm -rf "$target/python-wheels-release"
CARGO_TARGET_DIR=$target "$venv/bin/maturin" build --release --locked --quiet \
  --out "$target/python-wheels-release"
"$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps \
  "$target"/python-wheels-release/pfsqos-*-abi3-*.whl
cd "$target"
"$venv/bin/python" "$repo/python/bench/bench.py" --cli "$target/release/pfsqos" \
  --reps "${BENCH_REPS:-3}" --write "$repo/docs/benchmarks.md"
