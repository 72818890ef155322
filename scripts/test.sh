#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it: formatting, lints with warnings denied, all tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
# The Python package: its wheel and pytest suite (after the Rust tests, whose build it reuses).
bash scripts/test-python.sh
