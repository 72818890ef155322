#!/usr/bin/env bash
# A scaled-down Fig. 6/7 of the PI paper (PI control, UCC 2025, §4.5) on the live runtime:
# NODES mounts on loopback, each running one fio with JOBS sequential 1 MiB writers of SIZE
# each (Listing 1 scaled down: rw=write bs=1M, psync instead of libaio through FUSE), against
# one ossd with one OST; once without control and once under `pi` at each of TARGETS. Per
# run it prints (and appends to OUT) the job run times over all NODES x JOBS fio jobs (mean,
# 10th and 90th percentile, longest: Fig. 6 and Fig. 7) and the mean queue of the ossd's I/O
# threads over the run (the controller's sensor), and under `pi` the control loop's periods
# and median CPU per period (the ossd's metrics).
#
# The congestion cost PI could remove is whatever the live ossd has: with BUFFERED=1 (the
# default) the ossd writes through the page cache, so a deep queue of writes meets the
# kernel's write-back throttling; the device is this machine's disk (no --ceiling unless
# CEILING is set). Nothing is modelled.
#
# The mounts all run on this host, so the ossd sees one client node (the NID is the address a
# mount reaches the ossd from): the controller sets one limit and every mount applies it to
# itself, so the plant's input gain is NODES x Ts / 1 MiB requests per MiB/s (eq. 1 with a = 1,
# an integrator above the device's rate, as identified in pi-control.md).
#
# Usage: scripts/pi-fig67-live.sh   (as root: FUSE mounts; needs fio, jq and a release build)
# Environment: PFSQOS (binary, default $CARGO_TARGET_DIR/release/pfsqos or target/release/pfsqos),
#   NODES (4), JOBS (2), SIZE (256M), TARGETS ("4 8 12"), REPEATS (1), BUFFERED (1),
#   CEILING (bytes/s per OST, empty: none), THREADS (16), KS_MS (3000), OUT (pi-fig67-live.csv).
set -euo pipefail
cd "$(dirname "$0")/.."
PFSQOS=${PFSQOS:-${CARGO_TARGET_DIR:-target}/release/pfsqos}
NODES=${NODES:-4}
JOBS=${JOBS:-2}
SIZE=${SIZE:-256M}
TARGETS=${TARGETS:-"4 8 12"}
REPEATS=${REPEATS:-1}
BUFFERED=${BUFFERED:-1}
CEILING=${CEILING:-}
THREADS=${THREADS:-16}
KS_MS=${KS_MS:-3000}
OUT=${OUT:-pi-fig67-live.csv}

# Every setting is a number (or SIZE a fio size): checked before anything runs, since each
# reaches a command line.
for v in NODES JOBS REPEATS BUFFERED THREADS KS_MS; do
  [[ ${!v} =~ ^[0-9]+$ ]] || { echo "$v must be a number" >&2; exit 2; }
done
[[ $SIZE =~ ^[0-9]+[KMG]?$ ]] || { echo "SIZE must be like 256M" >&2; exit 2; }
[[ -z $CEILING || $CEILING =~ ^[0-9]+$ ]] || { echo "CEILING must be bytes/s" >&2; exit 2; }
for t in $TARGETS; do [[ $t =~ ^[0-9]+$ ]] || { echo "TARGETS must be numbers" >&2; exit 2; }; done
(( NODES >= 1 && NODES <= 16 && JOBS >= 1 && JOBS <= 16 )) || { echo "NODES, JOBS: 1..16" >&2; exit 2; }
[[ -x $PFSQOS ]] || { echo "no pfsqos binary at $PFSQOS (cargo build --release -p pfsqos-cli)" >&2; exit 2; }
command -v fio >/dev/null && command -v jq >/dev/null || { echo "needs fio and jq" >&2; exit 2; }

work=$(mktemp -d /tmp/pi-fig67.XXXXXX)
pids=()
mnts=()
cleanup() {
  for m in "${mnts[@]}"; do
    mountpoint -q "$m" && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; }
  done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
  mnts=()
}
trap 'cleanup; rm -rf "$work"' EXIT

# Starts "$@" with stdout to $1.out, waits (bounded) for its line "$prefix..." and sets
# `ready` to the rest of that line (not printed: a command substitution would run this in a
# subshell, and the pid would not reach `pids`).
ready=""
start_ready() {
  local name=$1 prefix=$2; shift 2
  "$@" >"$work/$name.out" 2>"$work/$name.log" &
  pids+=($!)
  local i
  for i in $(seq 1 600); do
    local line
    line=$(grep -m1 "^$prefix" "$work/$name.out" 2>/dev/null || true)
    if [[ -n $line ]]; then ready=${line#"$prefix"}; return 0; fi
    kill -0 "${pids[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  echo "$name did not start:" >&2; cat "$work/$name.log" >&2; return 1
}

metric() { # metric ADDR NAME-PREFIX: the first matching sample's value
  # Read whole first: awk leaving at the first match would fail curl's write (pipefail).
  local text
  text=$(curl -sf "http://$1/metrics")
  awk -v p="$2" 'index($0, p) == 1 { print $NF; exit }' <<<"$text"
}

[[ -f $OUT ]] || echo "date,policy,target,repeat,nodes,jobs,size,mean_s,p10_s,p90_s,max_s,mean_queue_rpcs,written_mib,control_periods,control_median_cpu_ns" >"$OUT"

run_one() { # run_one LABEL TARGET REPEAT [POLICY-SPEC]
  local label=$1 target=$2 repeat=$3 spec=${4:-}
  local d="$work/run"
  # The previous run's files go, and its dirty pages reach the disk before this run starts:
  # write-back left over would slow this run for the last one's sake.
  rm -rf "$d"; sync; mkdir -p "$d"
  head -c 32 /dev/urandom | base64 >"$d/key"
  head -c 32 /dev/urandom | base64 >"$d/server.key"
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  local metrics="127.0.0.1:$port"
  local args=(ossd --listen 127.0.0.1:0 --ost "$d/ost0" --key-file "$d/key" --server-key-file "$d/server.key" --threads "$THREADS"
    --metrics-listen "$metrics")
  (( BUFFERED )) && args+=(--buffered-writes)
  [[ -n $CEILING ]] && args+=(--ceiling-bytes-per-s "$CEILING")
  # PI does not use the capacity, but every controller in the ossd is given one.
  [[ -n $spec ]] && args+=(--policy "$spec" --brw-size-bytes 1048576 --control-record "$d/record.csv"
    --capacity-rpcs-per-s 1000)
  local oss mds
  start_ready ossd "ossd listening on " "$PFSQOS" "${args[@]}"
  oss=$ready
  start_ready mds "mds listening on " "$PFSQOS" mds --listen 127.0.0.1:0 --db "$d/mds.db" \
    --key-file "$d/key" --server-key-file "$d/server.key" --oss "$oss:1"
  mds=$ready
  local i
  for i in $(seq 0 $((NODES - 1))); do
    mkdir -p "$d/mnt$i"
    start_ready "mount$i" "mount ready on " "$PFSQOS" mount "$d/mnt$i" --mds "$mds" \
      --key-file "$d/key" --jobid-var SLURM_JOB_ID --brw-size-bytes 1048576
    mnts+=("$d/mnt$i")
  done
  local q0 t0 t1 q1
  q0=$(metric "$metrics" 'pfsqos_ost_device_time_in_queue_seconds_total{')
  t0=$(date +%s.%N)
  local fios=()
  for i in $(seq 0 $((NODES - 1))); do
    (cd "$d/mnt$i" && SLURM_JOB_ID="$((700 + i))" exec fio --name="n$i" --numjobs="$JOBS" \
      --filename_format="data.$i.\$jobnum" --rw=write --bs=1M --size="$SIZE" \
      --ioengine=psync --output-format=json --output="$d/fio.$i.json") &
    fios+=($!)
  done
  for p in "${fios[@]}"; do wait "$p"; done
  t1=$(date +%s.%N)
  q1=$(metric "$metrics" 'pfsqos_ost_device_time_in_queue_seconds_total{')
  # The control loop's cost: periods run and the median CPU of one period (observe, decide,
  # apply; the ossd's own metric), empty without a controller.
  local periods="" cpu=""
  if [[ -n $spec ]]; then
    periods=$(metric "$metrics" 'pfsqos_oss_control_periods_total ')
    # The metric is in seconds (Prometheus' base unit); the CSV column stays in ns.
    cpu=$(metric "$metrics" 'pfsqos_oss_control_period_cpu_seconds ')
    [[ -n $cpu ]] && cpu=$(awk -v s="$cpu" 'BEGIN { printf "%.0f", s * 1e9 }')
  fi
  # fio's job_runtime is in ms, per job (numjobs jobs per file).
  jq -s '[.[].jobs[] | {t: (.job_runtime / 1000), mib: (.write.io_bytes / 1048576)}]' \
    "$d"/fio.*.json >"$d/jobs.json"
  local row
  row=$(jq -r --arg q "$(awk -v a="$q0" -v b="$q1" -v s="$t0" -v e="$t1" 'BEGIN { print (b - a) / (e - s) }')" '
    (map(.t) | sort) as $t | ($t | length) as $n
    | def pct(p): $t[((p * ($n - 1)) | floor)];
    [ ($t | add / $n), pct(0.1), pct(0.9), $t[-1], ($q | tonumber), (map(.mib) | add) ]
    | map(. * 1000 | round / 1000) | @csv' "$d/jobs.json")
  echo "$(date -u +%FT%TZ),$label,$target,$repeat,$NODES,$JOBS,$SIZE,$row,$periods,$cpu" | tee -a "$OUT"
  cleanup
}

b=$(awk -v n="$NODES" 'BEGIN { print n * 0.3 }')
for r in $(seq 1 "$REPEATS"); do
  run_one none - "$r"
  for t in $TARGETS; do
    run_one pi "$t" "$r" "pi:a=1:b=$b:ks_ms=$KS_MS:mp=0.02:target=$t:bw_min=1M:bw_max=256M"
  done
done
