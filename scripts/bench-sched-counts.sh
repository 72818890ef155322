#!/usr/bin/env bash
# Instructions and model-cache misses per scheduler step, counted with cachegrind (these VMs
# expose no hardware counters). Builds the SFQ bench (release, as `cargo bench` does) unless
# BENCH_BIN names its binary, runs its `--counted-steps <case>:100000` and `:300000` and divides
# the difference by 200,000, so one step is counted without the setup. Model: D1 48 KiB 12-way,
# last level one core's 2 MiB L2, 16-way (no hardware prefetch). Prints a Markdown table.
#
#   bash scripts/bench-sched-counts.sh case...
#   e.g. bash scripts/bench-sched-counts.sh tbf:100000 sfqd_mixed_sizes:100000
#
# Cases: tbf, sfqd, sfqd_mixed_sizes, threshold, layout, each with its flow count.
set -euo pipefail
cd "$(dirname "$0")/.."
(($# > 0)) || { echo "usage: bench-sched-counts.sh case..." >&2; exit 2; }
command -v valgrind >/dev/null || { echo "needs valgrind" >&2; exit 2; }
bin=${BENCH_BIN:-}
if [[ -z $bin ]]; then
    bin=$(cargo bench --locked -q -p pfsqos-core --bench sfq --no-run --message-format=json \
        | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "sfq" and m.get("executable"):
        print(m["executable"])')
fi
[[ -x $bin ]] || { echo "no SFQ bench binary ($bin)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "Counted with cachegrind on $(nproc) vCPUs, $(lscpu | sed -n 's/^Model name: *//p'); counts do not move with the load."
echo
echo "| case | instructions a step | D1 misses a step | last-level misses a step |"
echo "|---|---:|---:|---:|"
for case in "$@"; do
    [[ $case =~ ^[a-z_]+:[0-9]+$ ]] || { echo "bad case $case" >&2; exit 2; }
    for steps in 100000 300000; do
        valgrind --tool=cachegrind --cache-sim=yes --I1=32768,8,64 --D1=49152,12,64 \
            --LL=2097152,16,64 --cachegrind-out-file=/dev/null \
            "$bin" --counted-steps "$case:$steps" >"$work/$steps.log" 2>&1
    done
    python3 - "$case" "$work/100000.log" "$work/300000.log" <<'PY'
import re, sys
def counts(path):
    text = open(path).read()
    def num(label):
        m = re.search(label + r":\s+([\d,]+)", text)
        return int(m.group(1).replace(",", ""))
    return num(r"I\s+refs"), num(r"D1\s+misses"), num(r"LLd misses")
a, b = counts(sys.argv[2]), counts(sys.argv[3])
i, d1, ll = ((y - x) / 200_000 for x, y in zip(a, b))
print(f"| `{sys.argv[1]}` | {i:,.0f} | {d1:.2f} | {ll:.2f} |")
PY
done
