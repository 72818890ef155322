#!/usr/bin/env bash
# Scheduling cost in the OSS, each NRS policy with non-binding rules (TBF: rates no client
# reaches; SFQ(D), DSFQ: equal weights) against FIFO, measured two ways in one run:
#  1. wall clock: criterion plus alternating paired rounds (the bench's own output);
#  2. instructions per round under callgrind (`--fixed-work`), which the noise of a shared 2-core
#     machine does not move: (count at R2 rounds - count at R1 rounds) / (R2 - R1).
# Benchmarks are not tests: nothing here passes or fails on a number.
set -euo pipefail
cd "$(dirname "$0")/.."
R1=${R1:-2}
R2=${R2:-8}
if [[ "${SKIP_WALL:-0}" != 1 ]]; then
  cargo bench -q -p pfsqos-ossd --bench oss_sched -- --warm-up-time 1 --measurement-time "${BENCH_SECONDS:-3}" 2>&1 |
    grep -E "time:|paired|median"
fi
bin=$(cargo bench -q -p pfsqos-ossd --bench oss_sched --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "oss_sched" and m.get("executable"):
        print(m["executable"])')
command -v valgrind >/dev/null || { echo "valgrind missing: no instruction counts" >&2; exit 0; }
count() { # policy workload rounds -> total instructions (all threads)
  local out; out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" --fixed-work "$1" "$2" "$3" >/dev/null 2>&1
  sed -n 's/^totals: \([0-9]*\).*/\1/p' "$out"; rm -f "$out" "$out".*
}
echo "instructions per round (4 clients x 32 RPCs), callgrind, (R=$R2) - (R=$R1):"
echo "| workload | FIFO | TBF | SFQ(D) | DSFQ | TBF / FIFO | SFQ(D) / FIFO | DSFQ / FIFO |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
per_round() { echo $(( ($(count "$1" "$2" "$R2") - $(count "$1" "$2" "$R1")) / (R2 - R1) )); }
for w in write_4k write_1m read_1m; do
  f=$(per_round fifo "$w"); t=$(per_round tbf "$w"); s=$(per_round sfqd "$w"); d=$(per_round dsfq "$w")
  echo "| $w | $f | $t | $s | $d | $(python3 -c "print(f'{$t/$f:.4f} | {$s/$f:.4f} | {$d/$f:.4f}')") |"
done
