# A live cluster on loopback for the measuring scripts: one ossd with two OSTs, an MDS
# striping new files over both (1 MiB stripes), one FUSE mount. Source it with `bin` (the
# pfsqos binary) and `work` (an empty directory of the caller's) set, then call
# `loopback_cluster [MOUNT_OPTION]...`: it sets `oss` and `mds` to the daemons' addresses and
# returns once the mount is ready; the EXIT trap it installs unmounts, stops the daemons and
# removes `work`.
pids=()
loopback_cluster_cleanup() {
  if mountpoint -q "$work/mnt" 2>/dev/null; then umount -l "$work/mnt" || true; fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap loopback_cluster_cleanup EXIT

# Waits (up to 60 s) for the first line of a daemon's stdout and prints it.
first_line() {
  for _ in $(seq 600); do
    if [ -s "$1" ]; then head -1 "$1"; return; fi
    sleep 0.1
  done
  echo "no output in $1" >&2
  exit 1
}

loopback_cluster() {
  # The cluster key (every daemon and the mount) and the servers' own (the ossd, the MDS and
  # an administrator's lctl).
  head -c 32 /dev/urandom | base64 >"$work/key"
  head -c 32 /dev/urandom | base64 >"$work/server.key"
  mkdir -p "$work/ost0" "$work/ost1" "$work/mnt"
  "$bin" ossd --listen 127.0.0.1:0 --ost "$work/ost0" --ost "$work/ost1" --key-file "$work/key" \
    --server-key-file "$work/server.key" >"$work/ossd.out" 2>"$work/ossd.err" &
  pids+=($!)
  oss=$(first_line "$work/ossd.out" | sed 's/^ossd listening on //')
  "$bin" mds --listen 127.0.0.1:0 --db "$work/mds.db" --key-file "$work/key" \
    --server-key-file "$work/server.key" --oss "$oss:2" --stripe-count 2 --stripe-size 1048576 \
    >"$work/mds.out" 2>"$work/mds.err" &
  pids+=($!)
  mds=$(first_line "$work/mds.out" | sed 's/^mds listening on //')
  "$bin" mount "$work/mnt" --mds "$mds" --key-file "$work/key" "$@" \
    >"$work/mount.out" 2>"$work/mount.err" &
  pids+=($!)
  first_line "$work/mount.out" >/dev/null
}
