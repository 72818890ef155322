#!/usr/bin/env bash
# Runs every criterion benchmark briefly, then prints the median of each (from criterion's
# estimates.json) with the machine it ran on, as the table docs/benchmarks.md records.
# Benchmarks are not tests: nothing here passes or fails on a time.
set -euo pipefail
cd "$(dirname "$0")/.."
args=(-- --warm-up-time 1 --measurement-time "${BENCH_SECONDS:-4}")
rm -rf target/criterion
cargo bench -q -p pfsqos-core --bench tbf "${args[@]}" >/dev/null
cargo bench -q -p pfsqos-core --bench adaptbf "${args[@]}" >/dev/null
cargo bench -q -p pfsqos-core --bench gift "${args[@]}" >/dev/null
cargo bench -q -p pfsqos-sim --bench engine "${args[@]}" 2>&1 >/dev/null | grep -E "best of" || true
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - <<'PY'
import json, pathlib
root = pathlib.Path("target/criterion")
rows = []
for est in sorted(root.glob("**/new/estimates.json")):
    bench = json.loads((est.parent / "benchmark.json").read_text())
    median_ns = json.loads(est.read_text())["median"]["point_estimate"]
    tp = bench.get("throughput") or {}
    per = ""
    if "Elements" in tp and tp["Elements"]:
        per = f"{median_ns / tp['Elements']:.1f} ns per element ({tp['Elements']} elements)"
    rows.append((bench["full_id"], median_ns, per))
for name, ns, per in rows:
    if ns >= 1e6:
        t = f"{ns / 1e6:.2f} ms"
    elif ns >= 1e3:
        t = f"{ns / 1e3:.2f} us"
    else:
        t = f"{ns:.1f} ns"
    print(f"| {name} | {t} | {per} |")
PY
