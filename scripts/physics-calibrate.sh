#!/usr/bin/env bash
# Calibrates this machine's disk with `pfsqos calibrate` and regenerates the measured section
# of docs/physics.md from the profile it writes, with the facts of the host it ran on.
#
#   scripts/physics-calibrate.sh [DIR] [BUDGET_S]
#
# DIR must be on the device to measure and support O_DIRECT (not tmpfs); default: a
# directory under the cargo target directory. The profile is written to
# profiles/measured/this-machine.toml, the host's facts to profiles/measured/this-machine.host.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
dir="${1:-$target/physics/calibrate}"
budget="${2:-120}"
out=profiles/measured/this-machine.toml
mkdir -p "$dir" profiles/measured
cargo build -q -p pfsqos-cli
bin="$target/debug/pfsqos"
"$bin" calibrate "$dir" --budget "$budget" --file-size-mib 64 --streams-max 16 \
  --queue-depth-max 64 --name this-machine --out "$out"
bash scripts/physics-host-facts.sh "$dir" >profiles/measured/this-machine.host
python3 scripts/physics-doc.py --measured "$out" --host-facts profiles/measured/this-machine.host
