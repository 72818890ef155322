#!/usr/bin/env bash
# Bytes the OSS serves per byte the applications read, through `pfsqos mount` (1 ossd with
# 2 OSTs, files striped over both in 1 MiB stripes, the mount's defaults: direct I/O, the
# client's read-ahead), for 1 and for 4 concurrent sequential fio readers (1 MiB reads, psync,
# one file each). The bytes served are the read_bytes of the readers' job in the ossd's
# job_stats, which the job's TBF rate and accounting see; the bytes read are fio's. Each
# reader count is its own job (SLURM_JOB_ID), so one run's reads never count in another's.
# Prints a Markdown table for the docs. READERS_SIZE (default 256M) is each reader's file;
# READERS_MOUNT_ARGS adds options to `pfsqos mount` (e.g. "--max-read-ahead-mb 4").
# A measuring run, not a test: nothing passes or fails on a ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
size=${READERS_SIZE:-256M}
cargo build -q --locked -p pfsqos-cli
bin=$(realpath "${CARGO_TARGET_DIR:-target}/debug/pfsqos")
work=$(mktemp -d "${TMPDIR:-/tmp}/pfsqos-concurrent-readers.XXXXXX")
# shellcheck source=scripts/lib/loopback-cluster.sh
. scripts/lib/loopback-cluster.sh
# shellcheck disable=SC2086 # READERS_MOUNT_ARGS is a list of options
loopback_cluster --jobid-var SLURM_JOB_ID ${READERS_MOUNT_ARGS:-}

# served JOB: the bytes the ossd read for JOB, summed over its OSTs.
served() {
  "$bin" lctl --server "$oss" --key-file "$work/server.key" get_param -n 'obdfilter.*.job_stats' |
    python3 -c '
import re, sys
job, total, mine = sys.argv[1], 0, False
for line in sys.stdin:
    m = re.match(r"\s*-\s*job_id:\s*(\S+)", line)
    if m:
        mine = m.group(1) == job
        continue
    m = re.match(r"\s*read_bytes:.*\bsum:\s*(\d+)", line)
    if mine and m:
        total += int(m.group(1))
print(total)' "$1"
}

# readers N: "N read served" for N concurrent readers of their own files.
readers() {
  local n=$1 dir="$work/mnt/r$1"
  mkdir "$dir"
  SLURM_JOB_ID="layout-$n" fio --name=layout --directory="$dir" --rw=write --bs=1M --size="$size" \
    --numjobs="$n" --ioengine=psync --end_fsync=1 --fallocate=none --output-format=json \
    >"$work/layout-$n.json"
  SLURM_JOB_ID="read-$n" fio --name=layout --directory="$dir" --rw=read --bs=1M --size="$size" \
    --numjobs="$n" --ioengine=psync --invalidate=0 --output-format=json >"$work/read-$n.json"
  local read
  read=$(python3 -c '
import json, sys
print(sum(j["read"]["io_bytes"] for j in json.load(open(sys.argv[1]))["jobs"]))' "$work/read-$n.json")
  echo "$n $read $(served "read-$n")"
}

rows=()
for n in 1 4; do
  rows+=("$(readers "$n")")
  echo "readers ${rows[-1]}" >&2
done

echo "machine: $(nproc) cores; $(date -u +%F); load average: $(cut -d' ' -f1-3 /proc/loadavg); mount options: ${READERS_MOUNT_ARGS:-defaults}"
echo
printf '%s\n' "${rows[@]}" | python3 -c '
import sys
print("| concurrent fio readers (1 MiB reads, %s each) | MiB read | MiB served by the OSS | served / read |" % sys.argv[1])
print("|---|---|---|---|")
for l in sys.stdin:
    n, read, served = map(int, l.split())
    print("| %d | %.1f | %.1f | %.4f |" % (n, read / 2**20, served / 2**20, served / read))
' "$size"
