#!/usr/bin/env bash
# The MDS's orphan sweep at scale: an OST holding N empty object files (ids 1..N, named as
# the ossd names them), one ossd serving it and an MDS with an empty namespace, which starts
# a sweep pass when it first reaches the ossd. Prints, per N, the pass's wall time (the MDS's
# "sweep pass done" log line), the objects it listed, the ossd's and the MDS's CPU time and
# peak resident memory at the pass's end. The namespace is empty, so no id is below the bound
# and nothing is queued: the figures are the listing's cost (the ossd's directory reading and
# the pages), not the database lookups. Sizes: SIZES="100000 1000000" by default, in a
# scratch directory under ${TMPDIR:-/tmp} (about 300 bytes of inode per object file).
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${SIZES:-"100000 1000000"}
cargo build --locked -q -p pfsqos-cli
bin=$(realpath "${CARGO_TARGET_DIR:-target}/debug/pfsqos")
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
echo "* machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); uptime before: $(uptime)"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/key"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/server.key"
cpu_s() { awk '{printf "%.2f", ($14 + $15) / '"$(getconf CLK_TCK)"'}' "/proc/$1/stat"; }
hwm_mib() { awk '/VmHWM/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
wait_line() { # FILE PATTERN TIMEOUT_S
  local deadline=$((SECONDS + $3))
  until grep -q "$2" "$1" 2>/dev/null; do
    ((SECONDS < deadline)) || { echo "no '$2' in $1" >&2; cat "$1" >&2; exit 1; }
    sleep 0.1
  done
}
for n in $sizes; do
  d="$work/n$n"
  mkdir -p "$d/ost0/objects"
  python3 - "$d/ost0/objects" "$n" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(1, n + 1):
    os.close(os.open(os.path.join(d, "%016x" % i), os.O_CREAT | os.O_WRONLY, 0o644))
PY
  "$bin" ossd --listen 127.0.0.1:0 --ost "$d/ost0" --key-file "$work/key" --server-key-file "$work/server.key" >"$d/ossd.out" 2>"$d/ossd.err" &
  ossd=$!
  pids+=("$ossd")
  wait_line "$d/ossd.out" "listening on" 60
  oss=$(awk '/listening on/ {print $NF; exit}' "$d/ossd.out")
  "$bin" mds --listen 127.0.0.1:0 --db "$d/mds.db" --key-file "$work/key" --server-key-file "$work/server.key" --oss "$oss:1" \
    >"$d/mds.out" 2>"$d/mds.err" &
  mds=$!
  pids+=("$mds")
  wait_line "$d/mds.err" "sweep pass done" 3600
  line=$(grep -m1 "sweep pass done" "$d/mds.err" | sed 's/\x1b\[[0-9;]*m//g')
  objects=$(sed -n 's/.*objects=\([0-9]*\).*/\1/p' <<<"$line")
  secs=$(sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' <<<"$line")
  printf '* %s objects: pass %.2f s (listed %s); ossd CPU %s s, peak RSS %s MiB; mds CPU %s s, peak RSS %s MiB\n' \
    "$n" "$secs" "$objects" "$(cpu_s "$ossd")" "$(hwm_mib "$ossd")" "$(cpu_s "$mds")" "$(hwm_mib "$mds")"
  kill "$mds" "$ossd"
  wait "$mds" "$ossd" 2>/dev/null || true
  pids=()
  rm -rf "$d"
done
echo "* uptime after: $(uptime)"
