#!/usr/bin/env bash
# Instructions and model-cache misses per scheduler step, counted with cachegrind (the Intel VM
# has no hardware counters). Runs the SFQ bench binary's `--counted-steps <case>:100000` and
# `:300000` and divides the difference by 200,000, so one step is counted without the setup.
# Model: D1 48 KiB 12-way, last level one core's 2 MiB L2, 16-way (no hardware prefetch).
#
#   bash scripts/bench-sched-counts.sh <sfq bench binary> [label] case...
#   e.g. bash scripts/bench-sched-counts.sh target/release/deps/sfq-<hash> now tbf:100000 sfqd_mixed_sizes:100000
#
# Cases: tbf, sfqd, sfqd_mixed_sizes, threshold, layout, each with its flow count.
set -euo pipefail
bin=${1:?usage: bench-sched-counts.sh <sfq bench binary> [label] case...}
label=${2:-}
shift 2 || shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "machine: $(nproc) vCPUs, $(lscpu | sed -n 's/^Model name: *//p'); counts do not move with the load"
printf '%-10s %-28s %12s %12s %12s\n' label case instr/step D1miss/step LLmiss/step
for case in "$@"; do
    for steps in 100000 300000; do
        valgrind --tool=cachegrind --cache-sim=yes --I1=32768,8,64 --D1=49152,12,64 \
            --LL=2097152,16,64 --cachegrind-out-file=/dev/null \
            "$bin" --counted-steps "$case:$steps" >"$work/$steps.log" 2>&1
    done
    python3 - "$label" "$case" "$work/100000.log" "$work/300000.log" <<'PY'
import re, sys
def counts(path):
    text = open(path).read()
    def num(label):
        m = re.search(label + r":\s+([\d,]+)", text)
        return int(m.group(1).replace(",", ""))
    return num(r"I\s+refs"), num(r"D1\s+misses"), num(r"LLd misses")
a, b = counts(sys.argv[3]), counts(sys.argv[4])
i, d1, ll = ((y - x) / 200_000 for x, y in zip(a, b))
print(f"{sys.argv[1]:<10} {sys.argv[2]:<28} {i:12.0f} {d1:12.2f} {ll:12.2f}")
PY
done
