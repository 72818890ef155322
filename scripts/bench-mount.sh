#!/usr/bin/env bash
# Throughput of the FUSE client: fio sequential write, then read of the file written (1 MiB
# blocks, psync, one job, fsync at the end of the write), through `pfsqos mount` (1 ossd with
# 2 OSTs, files striped over both, 1 MiB stripes) and on the directory that backs the OSTs, in
# the same run. Medians of BENCH_ROUNDS (default 3) rounds of BENCH_SIZE (default 2G).
# The machine's caches cannot be dropped, so reads are of the file just written, twice:
# cold (the file's cached pages dropped first: fio's default invalidate on the backing file and
# on the mount, plus `dd iflag=nocache` on the OST objects, so both sides read from the disk)
# and warm (nothing dropped: the backing read is a page-cache copy, the mount's goes through
# FUSE, the client and the ossd, which read the objects from the page cache).
# BENCH_MOUNT_ARGS adds options to `pfsqos mount` (e.g. "--page-cache").
# Benchmarks are not tests: nothing passes or fails on a time.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
size=${BENCH_SIZE:-2G}
rounds=${BENCH_ROUNDS:-3}
cargo build --release -q --locked -p pfsqos-cli
bin=$(realpath "${CARGO_TARGET_DIR:-target}/release/pfsqos")
work=$(mktemp -d "${TMPDIR:-/tmp}/pfsqos-bench-mount.XXXXXX")
# shellcheck source=scripts/lib/loopback-cluster.sh
. scripts/lib/loopback-cluster.sh
# shellcheck disable=SC2086 # BENCH_MOUNT_ARGS is a list of options
loopback_cluster ${BENCH_MOUNT_ARGS:-}
mkdir -p "$work/plain"

# fio_bw DIR RW INVALIDATE: MiB/s of one fio run on DIR/fio.dat.
fio_bw() {
  fio --name=seq --filename="$1/fio.dat" --rw="$2" --bs=1M --size="$size" --ioengine=psync \
    --direct=0 --end_fsync=1 --numjobs=1 --fallocate=none --invalidate="$3" \
    --output-format=json >"$work/fio.json"
  python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
print("%.1f" % (j[sys.argv[2]]["bw_bytes"] / 2**20))' "$work/fio.json" "$2"
}

results=()
for r in $(seq "$rounds"); do
  mw=$(fio_bw "$work/mnt" write 1)
  for o in "$work"/ost*/objects/*; do dd if="$o" iflag=nocache count=0 status=none; done
  mr=$(fio_bw "$work/mnt" read 1); mh=$(fio_bw "$work/mnt" read 0)
  rm -f "$work/mnt/fio.dat"
  pw=$(fio_bw "$work/plain" write 1); pr=$(fio_bw "$work/plain" read 1); ph=$(fio_bw "$work/plain" read 0)
  rm -f "$work/plain/fio.dat"
  echo "round $r: mount write $mw, cold read $mr, warm read $mh MiB/s; backing dir write $pw, cold read $pr, warm read $ph MiB/s" >&2
  results+=("$mw $mr $mh $pw $pr $ph")
done

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $(date -u +%F); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s\n' "${results[@]}" | python3 -c '
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
med = [statistics.median(c) for c in zip(*rows)]
mw, mr, mh, pw, pr, ph = med
print("| fio, 1 MiB blocks, %s, median of %d%s | write MiB/s | cold read MiB/s | warm read MiB/s |" % (sys.argv[1], len(rows), (", mount " + sys.argv[2]) if sys.argv[2] else ""))
print("|---|---|---|---|")
print("| through `pfsqos mount` | %.0f | %.0f | %.0f |" % (mw, mr, mh))
print("| backing directory of the OSTs | %.0f | %.0f | %.0f |" % (pw, pr, ph))
print("| ratio | %.0f %% | %.0f %% | %.0f %% |" % (100 * mw / pw, 100 * mr / pr, 100 * mh / ph))
print("rounds (mount w, cold r, warm r; dir w, cold r, warm r): " + "; ".join(" ".join("%.0f" % v for v in r) for r in rows))
' "$size" "${BENCH_MOUNT_ARGS:-}"
