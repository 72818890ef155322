#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it: formatting, lints with warnings denied, all tests.
set -euo pipefail
cd "$(dirname "$0")/.."
# Every test that skips part of itself on this machine appends a line here
# (pfsqos_testkit::skip); the list is printed at the end, pass or fail.
export PFSQOS_SKIP_LOG="${CARGO_TARGET_DIR:-$PWD/target}/skipped-tests.txt"
mkdir -p "$(dirname "$PFSQOS_SKIP_LOG")"
: >"$PFSQOS_SKIP_LOG"
# Where the suite's time goes: each step's wall time, printed at the end with the skips.
SECONDS=0
# A fresh clone has no incremental state to reuse, and writing it costs build time.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
timings=()
step() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  timings+=("$name: $((SECONDS - start)) s")
}
summary() {
  local status=$? n
  echo "== wall time per step (of $SECONDS s in all):"
  printf '   %s\n' "${timings[@]}"
  n="$(sort -u "$PFSQOS_SKIP_LOG" | grep -c . || true)"
  echo "== tests that skipped part of themselves here: $n"
  sort -u "$PFSQOS_SKIP_LOG"
  return "$status"
}
trap summary EXIT
step setup bash scripts/setup.sh
step fmt cargo fmt --all -- --check
step clippy cargo clippy --workspace --all-targets --locked -- -D warnings
# Building the tests apart from running them shows the two costs separately.
step "test build" cargo test --workspace --locked --no-run
step "test run" cargo test --workspace --locked
# The Python package: its wheel and pytest suite (after the Rust tests, whose build it reuses).
step python bash scripts/test-python.sh
