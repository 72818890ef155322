#!/usr/bin/env bash
# Calibrates this machine's disk with `pfsqos calibrate` and regenerates the measured section
# of docs/physics.md from the profile it writes.
#
#   scripts/physics-calibrate.sh [DIR] [BUDGET_S]
#
# DIR must be on the device to measure and support O_DIRECT (not tmpfs); default: a
# directory under target/. The profile is written to target/physics/this-machine.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-target/physics/calibrate}"
budget="${2:-120}"
mkdir -p "$dir" target/physics
cargo build -q -p pfsqos-cli
bin="${CARGO_TARGET_DIR:-target}/debug/pfsqos"
"$bin" calibrate "$dir" --budget "$budget" --file-size-mib 64 --streams-max 16 \
  --queue-depth-max 64 --name this-machine --out target/physics/this-machine.toml
python3 scripts/physics-doc.py --measured target/physics/this-machine.toml
