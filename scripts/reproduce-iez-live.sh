#!/usr/bin/env bash
# iez on the live runtime (docs/reproductions/iez.md, "Live runs"): fio shaped like IOR
# file-per-process and like HACC-I/O through a loopback cluster of 3 ossds x 5 OSTs (the
# paper's testbed shape, OSTs scaled down to OST_MIB each), each workload run twice: the first
# run traced by the mount and placed by Lustre's allocator (the MDS's `iez` placer for files
# without a prediction), the second placed by iez from the first
# run's trace (`pfsqos iez train --job`), each run's files read back (one dd per file at
# once, `read_back`) before they are removed. Prints, per workload and start state (empty OSTs, or oss0's OSTs
# 40 % full of another job's data), after each run: every OST's utilization (its objects'
# bytes over its capacity), each OSS's (its OSTs' mean), OSTCost (eq. 7: fullest OST over the
# mean), fio's aggregate write rate and the read-back's (MB/s, 10^6 bytes), and how the second run's
# files were placed. Rates are one run's on whatever machine runs it: on a shared machine
# they say little; placement does not depend on them.
# Writes the same results as two tables into docs/reproductions/iez.md, between
# `<!-- generated:iez-live -->` and `<!-- /generated:iez-live -->`, with the machine (nproc,
# CPU, uptime before and after); NO_DOCS=1 only prints.
#
# Needs root, /dev/fuse and fio. Uses ports BASE_PORT..BASE_PORT+3 on 127.0.0.1 and a
# temporary directory (removed at the end); stops only the processes it started.
# Usage: scripts/reproduce-iez-live.sh            (builds pfsqos, release)
#        PFSQOS=/path/to/pfsqos scripts/reproduce-iez-live.sh
# Knobs (environment): OST_MIB (256), NPROC (16), IOR_FILE_MIB (48), IOR_SC (4),
#   HACC_PARTICLES (1000000), HACC_SC (8), BASE_PORT (27988).
set -euo pipefail
cd "$(dirname "$0")/.."

OST_MIB=${OST_MIB:-256}
NPROC=${NPROC:-16}
IOR_FILE_MIB=${IOR_FILE_MIB:-48}
IOR_SC=${IOR_SC:-4}
HACC_PARTICLES=${HACC_PARTICLES:-1000000}
HACC_SC=${HACC_SC:-8}
BASE_PORT=${BASE_PORT:-27988}
for v in OST_MIB NPROC IOR_FILE_MIB IOR_SC HACC_PARTICLES HACC_SC BASE_PORT; do
  [[ ${!v} =~ ^[0-9]+$ ]] || { echo "$v must be a whole number" >&2; exit 2; }
done
(( IOR_SC >= 1 && IOR_SC <= 15 && HACC_SC >= 1 && HACC_SC <= 15 )) \
  || { echo "stripe counts must be 1..15" >&2; exit 2; }
command -v fio >/dev/null || { echo "fio is required" >&2; exit 2; }
[[ -e /dev/fuse ]] || { echo "/dev/fuse is required" >&2; exit 2; }

if [[ -z ${PFSQOS:-} ]]; then
  cargo build --release --locked -q -p pfsqos-cli
  PFSQOS=${CARGO_TARGET_DIR:-target}/release/pfsqos
fi
[[ -x $PFSQOS ]] || { echo "$PFSQOS is not executable" >&2; exit 2; }

OSSES=3
OSTS_PER_OSS=5
OST_BYTES=$((OST_MIB << 20))
JOB_VAR=PFSQOS_IEZ_JOB
work=$(mktemp -d /tmp/pfsqos-iez-live.XXXXXX)
mnt=$work/mnt
pids=()
cleanup() {
  set +e
  if mountpoint -q "$mnt" 2>/dev/null; then
    fusermount3 -u "$mnt" 2>/dev/null || fusermount -u "$mnt" 2>/dev/null || umount "$mnt"
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

wait_for() { # what, command...: poll up to 60 s
  local what=$1; shift
  for _ in $(seq 600); do "$@" && return 0; sleep 0.1; done
  echo "timed out waiting for $what" >&2; exit 1
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

"$PFSQOS" keygen "$work/key" >/dev/null
# The servers' own key: the statistics reports iez needs are a server role.
"$PFSQOS" keygen "$work/server.key" >/dev/null
mds_port=$BASE_PORT
oss_args=()
ost_dirs=()
for i in $(seq 0 $((OSSES - 1))); do
  port=$((BASE_PORT + 1 + i))
  osts=()
  for k in $(seq 0 $((OSTS_PER_OSS - 1))); do
    d=$work/oss$i-ost$k
    osts+=(--ost "$d")
    ost_dirs+=("$d")
  done
  "$PFSQOS" ossd --listen "127.0.0.1:$port" "${osts[@]}" --key-file "$work/key" \
    --server-key-file "$work/server.key" --report-mds "127.0.0.1:$mds_port" --report-period-ms 1000 \
    --ost-capacity-bytes "$OST_BYTES" >"$work/oss$i.log" 2>&1 &
  pids+=($!)
  oss_args+=(--oss "127.0.0.1:$port:$OSTS_PER_OSS")
done
"$PFSQOS" mds --listen "127.0.0.1:$mds_port" --db "$work/mds.db" --key-file "$work/key" \
  --server-key-file "$work/server.key" \
  "${oss_args[@]}" --stripe-count 1 --placer iez >"$work/mds.log" 2>&1 &
pids+=($!)
wait_for "the MDS" port_open "$mds_port"
mkdir -p "$mnt"
"$PFSQOS" mount "$mnt" --mds "127.0.0.1:$mds_port" --key-file "$work/key" \
  --jobid-var "$JOB_VAR" --iez-trace "$work/trace.csv" >"$work/mount.log" 2>&1 &
pids+=($!)
wait_for "the mount" mountpoint -q "$mnt"

# Bytes of objects on each OST, one per line, in OST order.
ost_bytes() {
  local d
  for d in "${ost_dirs[@]}"; do
    find "$d/objects" -type f -printf '%s\n' 2>/dev/null | awk '{s += $1} END {print s + 0}'
  done
}
# "OSTs u0 u1 ... | OSSs v0 v1 v2 | OSTCost c" from ost_bytes' lines (in OST order, OSS by
# OSS); with `tsv`, the same as "OST utils<TAB>OSS utils<TAB>OSTCost" for the doc's tables.
ost_summary() {
  local tsv=${1:-}
  awk -v cap="$OST_BYTES" -v per_oss="$OSTS_PER_OSS" -v tsv="$tsv" '
    { u[NR] = $1 / cap; s += u[NR]; if (u[NR] > m) m = u[NR] }
    END {
      if (tsv != "") {
        osts = ""; osses = ""
        for (i = 1; i <= NR; i++) osts = osts sprintf("%s%.0f", i > 1 ? " " : "", 100 * u[i])
        for (i = 1; i <= NR; i += per_oss) {
          t = 0
          for (k = i; k < i + per_oss; k++) t += u[k]
          osses = osses sprintf("%s%.1f", i > 1 ? " " : "", 100 * t / per_oss)
        }
        # The cost is computed first: a greater-than sign among the printf arguments redirects.
        cost = "-"
        if (s > 0) cost = sprintf("%.3f", m / (s / NR))
        printf "%s\t%s\t%s\n", osts, osses, cost
        exit
      }
      line = "OSTs "
      for (i = 1; i <= NR; i++) line = line sprintf("%.0f%% ", 100 * u[i])
      line = line "| OSSs "
      for (i = 1; i <= NR; i += per_oss) {
        t = 0
        for (k = i; k < i + per_oss; k++) t += u[k]
        line = line sprintf("%.1f%% ", 100 * t / per_oss)
      }
      if (s > 0) printf "%s| OSTCost %.3f\n", line, m / (s / NR); else print line "| OSTCost -"
    }'
}
punched() { [[ "$(ost_bytes)" == "$base" ]]; }
# Statistics measured after the removal: the ossds report every second; the MDS uses the
# latest. (A script, not a test: a fixed pause of 2.5 periods.)
stats_refreshed() { sleep 2.5; }

# Runs fio writing the job's files and prints its aggregate rate in MB/s (terse format 3,
# field 48: the write bandwidth in KiB/s).
run_fio() { # job dir kind
  local job=$1 dir=$2 kind=$3
  local size bs
  if [[ $kind == ior ]]; then
    size=$((IOR_FILE_MIB << 20)); bs=1M
  else
    # HACC-I/O: 38 bytes per particle in 9 arrays (7 floats, an 8-byte id, a 2-byte mask),
    # written one after the other: fio's blocks of one float array each.
    size=$((HACC_PARTICLES * 38)); bs=$((HACC_PARTICLES * 4))
  fi
  env "$JOB_VAR=$job" fio --name="$job" --directory="$dir" --numjobs="$NPROC" --nrfiles=1 \
    --filename_format="$kind.\$jobnum" --filesize="$size" --bs="$bs" --rw=write \
    --ioengine=psync --fallocate=none --fsync_on_close=1 --group_reporting \
    --output-format=terse --terse-version=3 \
    | awk -F';' 'NR == 1 { printf "%.0f", $48 * 1024 / 1e6 }'
}

# Reads every file of `dir` back, one reader per file at once (dd, 1 MiB reads), and prints
# the rate in MB/s: their bytes over the wall time from the first read's start to the last's
# end. Not fio: fio lays a file out again (a new create) when its size is not a multiple of
# the block size, as HACC-I/O's are. Each file's page cache is dropped first (`nocache`), so
# the reads go through the mount to the ossds.
read_back() { # job dir
  local job=$1 dir=$2 f t0 t1 bytes
  local readers=()
  for f in "$dir"/*; do
    dd if="$f" iflag=nocache count=0 status=none
  done
  bytes=$(stat -c %s "$dir"/* | awk '{s += $1} END {print s + 0}')
  t0=$(date +%s%N)
  for f in "$dir"/*; do
    env "$JOB_VAR=$job" dd if="$f" of=/dev/null bs=1M status=none &
    readers+=($!)
  done
  for p in "${readers[@]}"; do wait "$p"; done
  t1=$(date +%s%N)
  awk -v b="$bytes" -v ns=$((t1 - t0)) 'BEGIN { printf "%.0f", b / 1e6 / (ns / 1e9) }'
}

uptime_before=$(uptime)
results=$work/results.tsv
: >"$results"
echo "# iez live: $OSSES OSSs x $OSTS_PER_OSS OSTs of $OST_MIB MiB, $NPROC processes"
echo "# IOR FPP: $IOR_FILE_MIB MiB per file, stripe count $IOR_SC;" \
  "HACC-I/O: $HACC_PARTICLES particles (38 B each) per file, stripe count $HACC_SC"
for start in empty uneven; do
  if [[ $start == uneven ]]; then
    # Another job's data: 40 % of each of oss0's OSTs (one file, stripe count 5 from OST 0).
    "$PFSQOS" setstripe -c "$OSTS_PER_OSS" -i 0 -S 1M "$mnt/fill"
    env "$JOB_VAR=fill" dd if=/dev/zero of="$mnt/fill" bs=1M \
      count=$((OST_MIB * 2 / 5 * OSTS_PER_OSS)) conv=fsync status=none
  fi
  base=$(ost_bytes)
  for kind in ior hacc; do
    if [[ $kind == ior ]]; then sc=$IOR_SC; else sc=$HACC_SC; fi
    job=$kind-$start
    dir=$mnt/$job
    mkdir "$dir"
    "$PFSQOS" setstripe -c "$sc" "$dir"
    w=$(run_fio "$job" "$dir" "$kind")
    r=$(read_back "$job" "$dir")
    echo "$kind ($start) lustre: $(ost_bytes | ost_summary) | write $w MB/s | read $r MB/s"
    printf '%s\t%s\tlustre\t%s\t%s\t%s\t%s\n' "$kind" "$start" "$(ost_bytes | ost_summary tsv)" \
      "$w" "$r" "-" >>"$results"
    rm -f "$dir"/*
    wait_for "the first run's objects to be destroyed" punched
    stats_refreshed
    "$PFSQOS" iez train "$work/trace.csv" --job "$job" --mds "127.0.0.1:$mds_port" \
      --key-file "$work/key" | sed 's/^/  /'
    w=$(run_fio "$job" "$dir" "$kind")
    r=$(read_back "$job" "$dir")
    echo "$kind ($start) iez:         $(ost_bytes | ost_summary) | write $w MB/s | read $r MB/s"
    placed=$(for f in "$dir"/*; do "$PFSQOS" getstripe "$f" | grep -c '^placed_by: iez$' || true; done \
      | awk '{s += $1} END {print s + 0}')
    echo "  files placed by iez: $placed of $NPROC"
    printf '%s\t%s\tiez\t%s\t%s\t%s\t%s\n' "$kind" "$start" "$(ost_bytes | ost_summary tsv)" \
      "$w" "$r" "$placed" >>"$results"
    rm -f "$dir"/*
    wait_for "the second run's objects to be punched" punched
    stats_refreshed
  done
done
uptime_after=$(uptime)

[[ ${NO_DOCS:-0} == 1 ]] && exit 0
# The doc's tables, from this run's results only.
RESULTS=$results NPROC_RUN=$NPROC OST_MIB=$OST_MIB IOR_FILE_MIB=$IOR_FILE_MIB IOR_SC=$IOR_SC \
HACC_PARTICLES=$HACC_PARTICLES HACC_SC=$HACC_SC UPTIME_BEFORE="$uptime_before" \
UPTIME_AFTER="$uptime_after" CORES=$(nproc) PROFILE="$(basename "$(dirname "$PFSQOS")")" \
CPU="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')" python3 - <<'PY'
import os
import re
import sys

sys.path.insert(0, "scripts/lib")
import generated  # noqa: E402

env = os.environ
rows = {}
for line in open(env["RESULTS"]):
    kind, start, placer, osts, osses, cost, w, r, placed = line.rstrip("\n").split("\t")
    rows[(kind, start, placer)] = dict(osts=osts.split(), osses=osses.split(), cost=cost,
                                       w=int(w), r=int(r), placed=placed)
label = {
    ("ior", "empty"): f"IOR FPP, stripe count {env['IOR_SC']}, empty",
    ("hacc", "empty"): f"HACC-I/O, stripe count {env['HACC_SC']}, empty",
    ("ior", "uneven"): f"IOR FPP, stripe count {env['IOR_SC']}, oss0 40 % full",
    ("hacc", "uneven"): f"HACC-I/O, stripe count {env['HACC_SC']}, oss0 40 % full",
}
def ost_range(osts):
    v = [int(x) for x in osts]
    return f"{min(v)}-{max(v)} %" if min(v) != max(v) else f"{v[0]} %"
out = [
    f"Generated by `scripts/reproduce-iez-live.sh` from one run ({env['PROFILE']} build; {env['CORES']} cores, "
    f"{env['CPU']}; uptime before: `{env['UPTIME_BEFORE'].strip()}`, after: "
    f"`{env['UPTIME_AFTER'].strip()}`). {env['NPROC_RUN']} processes; IOR FPP "
    f"{env['IOR_FILE_MIB']} MiB per file; HACC-I/O {int(env['HACC_PARTICLES']):,} particles "
    f"per file; OSTs of {env['OST_MIB']} MiB. Do not edit: rerun the script.",
    "",
    "| workload, start | OSTCost, lustre | OSTCost, iez | OSTs, lustre | OSTs, iez | files placed by iez |",
    "|---|---:|---:|---|---|---:|",
]
for key, name in label.items():
    l, i = rows[key + ("lustre",)], rows[key + ("iez",)]
    out.append(f"| {name} | {l['cost']} | {i['cost']} | {ost_range(l['osts'])} | "
               f"{ost_range(i['osts'])} | {i['placed']} of {env['NPROC_RUN']} |")
out += [
    "",
    "| workload, start | OSS util (0/1/2), lustre | OSS util (0/1/2), iez | write MB/s, lustre → iez | read MB/s, lustre → iez |",
    "|---|---|---|---:|---:|",
]
for key, name in label.items():
    l, i = rows[key + ("lustre",)], rows[key + ("iez",)]
    out.append(f"| {name} | {' / '.join(l['osses'])} % | {' / '.join(i['osses'])} % | "
               f"{l['w']:,} → {i['w']:,} | {l['r']:,} → {i['r']:,} |")
path = "docs/reproductions/iez.md"
text = open(path).read()
text = generated.replace(text, "iez-live", "\n".join(out), where=path)
open(path, "w").write(text)
print(f"wrote the generated:iez-live section of {path}")
PY
