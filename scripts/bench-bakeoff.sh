#!/usr/bin/env bash
# The head-to-head's wall time: the whole bake-off suite and the demo with the release CLI (one
# worker thread per core), then each design's wall time per simulated RPC and its controller
# decisions (median and p99, histogram upper bounds) from the suite's timing.json. Prints
# Markdown (scripts/bench-doc.py puts it in docs/benchmarks.md). A benchmark: nothing fails on a time.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
cargo build -q --locked --release -p pfsqos-cli
cli="$target/release/pfsqos"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
start=$(date +%s.%N)
"$cli" bakeoff scenarios/bakeoff --out "$out/suite" >/dev/null
suite_s=$(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')")
start=$(date +%s.%N)
"$cli" demo --out "$out/demo" >/dev/null
demo_s=$(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')")
python3 - "$out/suite/timing.json" "$suite_s" "$demo_s" <<'PY'
import json, sys
timing = json.load(open(sys.argv[1]))
print("`pfsqos bakeoff scenarios/bakeoff`: %d runs executed, %d threads, **%s s** wall; "
      "`pfsqos demo`: **%s s** wall. Targets: under 10 minutes and under 1 minute."
      % (timing["executed_runs"], timing["threads"], sys.argv[2], sys.argv[3]))
print()
print("| design | runs | wall s | wall ns per simulated RPC | decisions | decision median | decision p99 |")
print("|---|---:|---:|---:|---:|---:|---:|")
def us(ns):
    return "%.1f µs" % (ns / 1e3) if ns else "–"
for d in sorted(timing["per_design"], key=lambda d: d["design"]):
    per_rpc = "%.0f" % d["ns_per_rpc"] if d["ns_per_rpc"] else "–"
    dec = d["decide"]
    print("| %s | %d | %.1f | %s | %d | %s | %s |" % (
        d["design"], d["runs"], d["wall_s"], per_rpc, dec["count"], us(dec["median_ns"]),
        us(dec["p99_ns"])))
PY
