#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it: formatting, lints with warnings denied, all tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Every test that skips part of itself on this machine appends a line here
# (pfsqos_testkit::skip); the list is printed at the end, pass or fail.
export PFSQOS_SKIP_LOG="${CARGO_TARGET_DIR:-$PWD/target}/skipped-tests.txt"
mkdir -p "$(dirname "$PFSQOS_SKIP_LOG")"
: >"$PFSQOS_SKIP_LOG"
skipped_summary() {
  local n
  n="$(sort -u "$PFSQOS_SKIP_LOG" | grep -c . || true)"
  echo "== tests that skipped part of themselves here: $n"
  sort -u "$PFSQOS_SKIP_LOG"
}
trap skipped_summary EXIT
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
# The Python package: its wheel and pytest suite (after the Rust tests, whose build it reuses).
bash scripts/test-python.sh
