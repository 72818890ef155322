#!/usr/bin/env bash
# Throughput of the FUSE client: fio sequential write, then read of the file written (1 MiB
# blocks, psync, one job, fsync at the end of the write), through `pfsqos mount` (1 ossd with
# 2 OSTs, files striped over both, 1 MiB stripes) and on the directory that backs the OSTs, in
# the same run. Medians of BENCH_ROUNDS (default 3) rounds of BENCH_SIZE (default 2G).
# Page caches cannot be dropped here, so reads are of the file just written on both sides.
# Benchmarks are not tests: nothing passes or fails on a time.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
size=${BENCH_SIZE:-2G}
rounds=${BENCH_ROUNDS:-3}
cargo build --release -q --locked -p pfsqos-cli
bin=$PWD/target/release/pfsqos
work=$(mktemp -d "${TMPDIR:-/tmp}/pfsqos-bench-mount.XXXXXX")
pids=()
cleanup() {
  if mountpoint -q "$work/mnt" 2>/dev/null; then umount -l "$work/mnt" || true; fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Waits (up to 60 s) for the first line of a daemon's stdout and prints it.
first_line() {
  for _ in $(seq 600); do
    if [ -s "$1" ]; then head -1 "$1"; return; fi
    sleep 0.1
  done
  echo "no output in $1" >&2
  exit 1
}

head -c 32 /dev/urandom | base64 >"$work/key"
mkdir -p "$work/ost0" "$work/ost1" "$work/mnt" "$work/plain"
"$bin" ossd --listen 127.0.0.1:0 --ost "$work/ost0" --ost "$work/ost1" --key-file "$work/key" \
  >"$work/ossd.out" 2>"$work/ossd.err" &
pids+=($!)
oss=$(first_line "$work/ossd.out" | sed 's/^ossd listening on //')
"$bin" mds --listen 127.0.0.1:0 --db "$work/mds.db" --key-file "$work/key" --oss "$oss:2" \
  --stripe-count 2 --stripe-size 1048576 >"$work/mds.out" 2>"$work/mds.err" &
pids+=($!)
mds=$(first_line "$work/mds.out" | sed 's/^mds listening on //')
"$bin" mount "$work/mnt" --mds "$mds" --key-file "$work/key" >"$work/mount.out" 2>"$work/mount.err" &
pids+=($!)
first_line "$work/mount.out" >/dev/null

# fio_bw DIR RW: MiB/s of one fio run on DIR/fio.dat.
fio_bw() {
  fio --name=seq --filename="$1/fio.dat" --rw="$2" --bs=1M --size="$size" --ioengine=psync \
    --direct=0 --end_fsync=1 --numjobs=1 --fallocate=none --output-format=json \
    >"$work/fio.json"
  python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
print("%.1f" % (j[sys.argv[2]]["bw_bytes"] / 2**20))' "$work/fio.json" "$2"
}

results=()
for r in $(seq "$rounds"); do
  mw=$(fio_bw "$work/mnt" write); mr=$(fio_bw "$work/mnt" read)
  rm -f "$work/mnt/fio.dat"
  pw=$(fio_bw "$work/plain" write); pr=$(fio_bw "$work/plain" read)
  rm -f "$work/plain/fio.dat"
  echo "round $r: mount write $mw read $mr MiB/s; backing dir write $pw read $pr MiB/s" >&2
  results+=("$mw $mr $pw $pr")
done

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $(date -u +%F); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s\n' "${results[@]}" | python3 -c '
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
med = [statistics.median(c) for c in zip(*rows)]
mw, mr, pw, pr = med
print("| fio, 1 MiB blocks, %s, median of %d | write MiB/s | read MiB/s |" % (sys.argv[1], len(rows)))
print("|---|---|---|")
print("| through `pfsqos mount` | %.0f | %.0f |" % (mw, mr))
print("| backing directory of the OSTs | %.0f | %.0f |" % (pw, pr))
print("| ratio | %.0f %% | %.0f %% |" % (100 * mw / pw, 100 * mr / pr))
print("rounds (mount w, mount r, dir w, dir r): " + "; ".join(" ".join("%.0f" % v for v in r) for r in rows))
' "$size"
