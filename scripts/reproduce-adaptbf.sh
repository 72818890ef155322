#!/usr/bin/env bash
# Regenerates the charts of docs/reproductions/adaptbf.md from fresh `pfsqos compare` runs of
# the flagship and the AdapTBF Section IV scenarios (what `pfsqos demo` ran before it became the
# bakeoff):
# every SVG chart of the Section IV comparisons is cut out of the reports and saved under
# docs/reproductions/adaptbf/. The numbers in the doc's tables come from the same run's
# summary.json files (printed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p pfsqos-cli
bin=${CARGO_TARGET_DIR:-target}/release/pfsqos
run_dir=$(mktemp -d)
trap 'rm -rf "$run_dir"' EXIT
"$bin" compare scenarios/demo/flagship.toml --out "$run_dir/flagship" >/dev/null
"$bin" compare scenarios/adaptbf/iv-e-redistribution.toml --out "$run_dir/adaptbf-iv-e" >/dev/null
"$bin" compare scenarios/adaptbf/iv-f-recompensation.toml --out "$run_dir/adaptbf-iv-f" >/dev/null
"$bin" compare scenarios/adaptbf/iv-f-recompensation.toml --out "$run_dir/adaptbf-iv-h" \
    --policies adaptbf:period_ms=50,adaptbf:period_ms=100,adaptbf:period_ms=200,adaptbf:period_ms=500,adaptbf:period_ms=1000 \
    >/dev/null
out=docs/reproductions/adaptbf
mkdir -p "$out"
rm -f "$out"/*.svg
python3 scripts/extract-svg.py "$run_dir" "$out"
# The period sweep is read from its bar charts; its per-period time series add nothing here.
rm -f "$out"/adaptbf-iv-h--{demand,record,tokens,throughput-over-time}*.svg
python3 - "$run_dir" <<'PY'
import json, sys
root = sys.argv[1]
for d in ["flagship", "adaptbf-iv-e", "adaptbf-iv-f", "adaptbf-iv-h"]:
    s = json.load(open(f"{root}/{d}/summary.json"))
    print(f"== {d}")
    for r in s["runs"]:
        jobs = " ".join(
            f"{j['job_id']}:{j['throughput_mib_s']:.1f}/{j['active_throughput_mib_s']:.1f}"
            for j in r["jobs"]
        )
        print(f"  {r['policy']:<24} aggregate {r['aggregate_throughput_mib_s']:7.1f} MiB/s"
              f"  weighted Jain {r['weighted_jain_index']:.3f}  jobs (MiB/s, active MiB/s) {jobs}")
PY
