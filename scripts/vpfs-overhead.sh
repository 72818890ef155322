#!/usr/bin/env bash
# vPFS Fig. 3-4 (vPFS, MSST '12, §IV-B), live: what the scheduler costs in throughput. Starts a
# cluster with `pfsqos up` (one ossd with two OSTs, an mds, one FUSE mount, in a temporary
# directory), then, in alternating rounds, runs JOBS fio writers (then readers) of 1 MiB
# blocks, each under its own SLURM_JOB_ID, for SECS seconds under each NRS policy: `fifo`
# (Lustre's default, the paper's "Native"), `sfqd jobid` and `dsfq jobid` with one weight rule
# per job, all weights equal, so the weights never bind (the paper's "Virtual-DSFQ"; with one
# ossd DSFQ has no peer, so this is its local cost). Prints each round's aggregate MiB/s and
# the median per policy with its ratio to FIFO. Rounds alternate the policies so that a drift
# of the machine's load hits all of them alike; on a shared machine, read the ratios, not the
# absolute rates.
# Usage: scripts/vpfs-overhead.sh            (ROUNDS=3 SECS=10 JOBS=4 by default)
# Its Markdown output is docs/reproductions/vpfs.md's generated:run:vpfs-overhead block
# (scripts/bench-doc.py --doc docs/reproductions/vpfs.md --only run:vpfs-overhead).
# Needs fio and /dev/fuse (scripts/setup.sh installs fio and fuse3); uses ports 7988/7989.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}
secs=${SECS:-10}
jobs=${JOBS:-4}
cargo build --release --locked -q -p pfsqos-cli
bin=$(realpath "${CARGO_TARGET_DIR:-target}/release/pfsqos")
work=$(mktemp -d)
cleanup() {
  (cd "$work" && "$bin" down >/dev/null 2>&1) || true
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
"$bin" up >up.log 2>&1 || { cat up.log; exit 1; }
mnt="$work/pfsqos-mnt"

set_policy() {
  "$bin" lctl set_param "ost.OSS.ost_io.nrs_policies=fifo" >/dev/null
  case "$1" in
    fifo) ;;
    sfqd | dsfq)
      "$bin" lctl set_param "ost.OSS.ost_io.nrs_policies=$1 jobid" >/dev/null
      for j in $(seq 1 "$jobs"); do
        "$bin" lctl set_param "ost.OSS.ost_io.nrs_${1}_weight=start w$j jobid={90$j} weight=1" >/dev/null
      done
      ;;
  esac
}

# One round: JOBS fio processes of direction $1 (write or read) in parallel; prints the
# aggregate MiB/s (sum of each job's bytes over its runtime, from fio's JSON).
round() {
  local rw=$1 pids=() j
  for j in $(seq 1 "$jobs"); do
    SLURM_JOB_ID="90$j" fio --name="j$j" --filename="$mnt/data.$j" --rw="$rw" --bs=1M \
      --size=256M --ioengine=psync --time_based --runtime="$secs" --output-format=json \
      --output="$work/fio.$j.json" >/dev/null 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  python3 - "$rw" "$work" "$jobs" <<'EOF'
import json, sys
rw, work, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
total = 0.0
for j in range(1, jobs + 1):
    job = json.load(open(f"{work}/fio.{j}.json"))["jobs"][0][rw]
    total += job["io_bytes"] / (job["runtime"] / 1000.0)
print(f"{total / 2**20:.1f}")
EOF
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# Lay the files out once, so that reads read written data.
set_policy fifo
round write >/dev/null

echo "Machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "$jobs fio jobs of 1 MiB blocks, $secs s per round, $rounds rounds per policy, alternating."
echo
echo "| direction | policy | MiB/s per round | median | vs fifo |"
echo "|---|---|---|---|---|"
for rw in write read; do
  declare -A results=()
  for r in $(seq 1 "$rounds"); do
    for policy in fifo sfqd dsfq; do
      set_policy "$policy"
      results[$policy]+="$(round "$rw") "
    done
  done
  fifo_median=$(echo "${results[fifo]}" | tr ' ' '\n' | grep . | median)
  for policy in fifo sfqd dsfq; do
    m=$(echo "${results[$policy]}" | tr ' ' '\n' | grep . | median)
    ratio=$(awk -v a="$m" -v b="$fifo_median" 'BEGIN {printf "%+.1f %%", (a / b - 1) * 100}')
    echo "| $rw | \`$policy\` | ${results[$policy]% } | $m | $ratio |"
  done
  unset results
done
echo
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
