#!/usr/bin/env bash
# The fluid engine's speed: one 500-application, 25-day GIFT scenario (64 HDD OSTs, FCFS +
# EASY backfilling) under POFS and GIFT over three seeds, release build, as gift_repro prints
# it (its `wall s` column is this machine's), plus the whole process's peak memory. Prints
# Markdown (scripts/bench-doc.py puts it in docs/benchmarks.md). A benchmark: nothing fails on a time.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
cargo build -q --locked --release -p pfsqos-sim --example gift_repro
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
/usr/bin/time -v "$target/release/examples/gift_repro" scenarios/gift/sim-500.toml --seeds 3 pofs gift 2>"$log"
peak_kib=$(sed -n 's/^\s*Maximum resident set size (kbytes): //p' "$log")
wall=$(sed -n 's/^\s*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$log")
echo
echo "The whole process (6 runs): $wall wall, at most $((peak_kib / 1024)) MiB resident. Target: at most 60 s per run."
