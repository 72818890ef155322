#!/usr/bin/env bash
# Checks (and where possible installs) what building and testing pfsqos needs on a fresh machine.
set -euo pipefail
need() {
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "pfsqos setup: '$1' is missing: $2" >&2
    exit 1
  fi
}
need cargo "install Rust with rustup (https://rustup.rs)"
if ! cargo fmt --version >/dev/null 2>&1; then
  rustup component add rustfmt
fi
if ! cargo clippy --version >/dev/null 2>&1; then
  rustup component add clippy
fi
