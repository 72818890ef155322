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
# The Python package's tools come from PyPI: fetched while the Rust build keeps the cores busy,
# since the download waits on the network, not on them.
python_tools_log="${CARGO_TARGET_DIR:-$PWD/target}/python-tools.log"
bash scripts/test-python.sh --tools-only >"$python_tools_log" 2>&1 &
python_tools=$!
# Clippy lints the workspace while the tests compile: clippy-driver is a whole rustc, so as the
# workspace's compiler (cargo applies RUSTC_WORKSPACE_WRAPPER to workspace members only) it
# builds the test binaries and denies every warning in one pass, where `cargo clippy` would
# type-check every crate and dependency a second time. CLIPPY_ARGS is how cargo-clippy hands
# clippy-driver its arguments (separated by __CLIPPY_HACKERY__). Every cargo command below
# keeps the wrapper, so none of them rebuilds what another built. --all-targets adds the
# benches, which `cargo clippy --all-targets` lints too (and builds the examples as test
# harnesses besides, which costs less than it seems: those compile while the build's last,
# serial steps leave a core idle; building the benches in a second invocation instead was
# slower).
clippy_driver="$(dirname "$(rustup which cargo 2>/dev/null || command -v cargo)")/clippy-driver"
if [[ ! -x $clippy_driver ]]; then
  echo "test.sh: no clippy-driver beside cargo ($clippy_driver): run scripts/setup.sh" >&2
  exit 1
fi
export RUSTC_WORKSPACE_WRAPPER="$clippy_driver"
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
# Building the tests apart from running them shows the two costs separately.
step "clippy and test build" cargo test --workspace --all-targets --locked --no-run
# Most of the run is live tests waiting on fio, daemons and the network, not on the cores:
# three times as many test threads as cores let them overlap (a test asserts no rate or time).
test_threads=${RUST_TEST_THREADS:-$((3 * $(nproc)))}
step "test run" env RUST_TEST_THREADS="$test_threads" cargo test --workspace --locked
# The Python package: its wheel and pytest suite (after the Rust tests, whose build it reuses).
wait "$python_tools" || { cat "$python_tools_log" >&2; exit 1; }
step python bash scripts/test-python.sh
