#!/usr/bin/env bash
# Checks (and where possible installs) what building and testing pfsqos needs on a fresh machine.
set -euo pipefail
need() {
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "pfsqos setup: '$1' is missing: $2" >&2
    exit 1
  fi
}
need cargo "install Rust with rustup (https://rustup.rs)"
# Linking, and the SQLite the MDS bundles (rusqlite's `bundled` feature), need a C compiler.
need cc "install a C compiler (Debian: apt-get install build-essential)"
if ! cargo fmt --version >/dev/null 2>&1; then
  rustup component add rustfmt
fi
if ! cargo clippy --version >/dev/null 2>&1; then
  rustup component add clippy
fi
# The FUSE client's tests mount a file system (fuse3's fusermount3 and /dev/fuse); the mount
# benchmark runs fio. Installed from Debian's packages when missing (as root, quietly).
if ! command -v fio >/dev/null 2>&1 || ! command -v fusermount3 >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends fio fuse3 >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends fio fuse3 >/dev/null; }
  else
    echo "pfsqos setup: fio and fuse3 are missing (apt-get install fio fuse3 as root)" >&2
  fi
fi
# The report's browser test renders report.html in headless Chromium (Debian's
# chromium-headless-shell, or chromium); it skips (and passes, saying why) without one.
if ! command -v chromium-headless-shell >/dev/null 2>&1 && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends chromium-headless-shell >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends chromium-headless-shell >/dev/null 2>&1; } ||
      apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 ||
      echo "pfsqos setup: chromium-headless-shell could not be installed: the browser test will skip" >&2
  else
    echo "pfsqos setup: chromium-headless-shell is missing: the browser test will skip (apt-get install chromium-headless-shell as root)" >&2
  fi
fi
# The metrics tests lint every endpoint's answer with promtool (Debian's prometheus package
# ships it); they skip that part (and pass, saying why) without it.
if ! command -v promtool >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends prometheus >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends prometheus >/dev/null 2>&1; } ||
      echo "pfsqos setup: prometheus (promtool) could not be installed: the metrics lint will skip" >&2
  else
    echo "pfsqos setup: promtool is missing: the metrics lint will skip (apt-get install prometheus as root)" >&2
  fi
fi
if [ ! -e /dev/fuse ]; then
  echo "pfsqos setup: /dev/fuse is missing: the mount tests will fail (modprobe fuse)" >&2
fi
# The tc actuator's test (pfsqos-linux) makes a network namespace and a veth pair with `ip`
# and shapes it with `tc`, both from iproute2; it skips (and passes) without them or root.
if ! command -v ip >/dev/null 2>&1 || ! command -v tc >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends iproute2 >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends iproute2 >/dev/null; }
  else
    echo "pfsqos setup: ip and tc are missing (apt-get install iproute2 as root)" >&2
  fi
fi
# Slurm is optional: the Slurm test skips, saying why, where it cannot be set up.
bash "$(dirname "$0")/setup-slurm.sh" || echo "pfsqos setup: Slurm could not be set up: the Slurm test will skip" >&2
