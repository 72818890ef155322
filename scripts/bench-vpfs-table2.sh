#!/usr/bin/env bash
# The RPC engine with DSFQ at 96 servers: vPFS's Table 2 scenario (256 processes, 60 simulated
# s) as scripts/reproduce-vpfs.sh runs it, release build; vpfs_repro's last column is events per
# wall-clock second of each run. Prints Markdown (scripts/bench-doc.py puts it in
# docs/benchmarks.md). A benchmark: nothing fails on a time.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
cargo build -q --locked --release -p pfsqos-sim --example vpfs_repro
"$target/release/examples/vpfs_repro" table2 scenarios/vpfs/table2-96-servers.toml
echo
echo "Target: 5 million events per wall-clock second on this scenario."
