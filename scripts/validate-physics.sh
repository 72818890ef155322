#!/usr/bin/env bash
# Validates the simulator against the live runtime on this machine's disk: calibrates the
# disk (scripts/physics-calibrate.sh), then runs eight workload shapes through real fio on a
# pfsqos FUSE mount onto that disk and through the simulator with the calibrated profile,
# prints them side by side with tolerance verdicts and regenerates the validation table of
# docs/physics.md (scripts/physics-validate.py). About 10 minutes in all.
#
#   scripts/validate-physics.sh [DIR] [CALIBRATION_BUDGET_S]
#
# DIR must be on the disk to measure (not tmpfs); VALIDATE_SKIP_CALIBRATION=1 reuses
# profiles/measured/this-machine.toml. Needs root (FUSE mounts), fio and fuse3.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
target="${CARGO_TARGET_DIR:-target}"
dir="${1:-$target/physics}"
budget="${2:-120}"
mkdir -p "$dir"
if [ "${VALIDATE_SKIP_CALIBRATION:-0}" != 1 ]; then
  bash scripts/physics-calibrate.sh "$dir/calibrate" "$budget"
fi
cargo build -q --release -p pfsqos-cli
cargo build -q --release -p pfsqos-sim --example validate_sim
bash scripts/physics-host-facts.sh "$dir" >"$dir/host-facts"
python3 scripts/physics-validate.py --pfsqos "$target/release/pfsqos" \
  --sim "$target/release/examples/validate_sim" --profile profiles/measured/this-machine.toml \
  --work "$dir/validate" --host-facts "$dir/host-facts" --json-out profiles/measured/validation.json \
  --runtime-s 6 --ramp-s 1 --doc
