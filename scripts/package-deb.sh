#!/usr/bin/env bash
# Builds the pfsqos Debian package with dpkg-deb alone: no cargo-deb, no debhelper.
#
#   scripts/package-deb.sh [--binary PATH] [--out DIR] [--compress xz|gzip|none]
#
# Without --binary it builds the release binary first (`cargo build --release --locked -p
# pfsqos-cli`, several minutes on two cores). With --binary it packages that binary (the tests
# package the debug binary they already built, with --compress gzip: xz takes minutes on a
# debug build).
# The binary is stripped of symbols, as Debian ships binaries, when `strip` is there. The
# package holds:
#   /usr/bin/pfsqos                          every role and tool is a subcommand of it
#   /usr/lib/systemd/system/pfsqos-*.service the units of packaging/systemd, run from /usr/bin
#   /usr/share/pfsqos/grafana/*.json         the dashboard of packaging/grafana
#   /usr/share/pfsqos/scenarios/             every scenario and the bake-off suite
#                                            (`pfsqos bakeoff /usr/share/pfsqos/scenarios/bakeoff`)
#   /usr/share/doc/pfsqos/                   copyright (Apache-2.0), README.md, docs/live.md,
#                                            docs/lustre.md
# Units are installed, never enabled or started: which roles a host runs is the administrator's
# choice (docs/live.md, "Deployment with systemd"). Removing the package stops running pfsqos
# units first (their binary goes away). Prints the path of the .deb it wrote.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
binary=""
out="$root/target/deb"
compress=xz
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary="${2:?--binary needs a path}"; shift 2 ;;
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    --compress) compress="${2:?--compress needs xz, gzip or none}"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "package-deb: unknown argument '$1' (expected --binary PATH, --out DIR, --compress X)" >&2; exit 2 ;;
  esac
done
case "$compress" in
  xz|gzip|none) ;;
  *) echo "package-deb: --compress '$compress': expected xz, gzip or none" >&2; exit 2 ;;
esac
for tool in dpkg-deb dpkg; do
  command -v "$tool" >/dev/null 2>&1 ||
    { echo "package-deb: '$tool' is missing (Debian: apt-get install dpkg)" >&2; exit 1; }
done
if [ -z "$binary" ]; then
  (cd "$root" && cargo build --release --locked -q -p pfsqos-cli)
  # Where cargo put it: CARGO_TARGET_DIR (relative to the repository, as cargo reads it) or
  # target/.
  target=${CARGO_TARGET_DIR:-target}
  case $target in /*) ;; *) target="$root/$target" ;; esac
  binary="$target/release/pfsqos"
fi
[ -x "$binary" ] || { echo "package-deb: '$binary' is not an executable" >&2; exit 1; }

# The version is the binary's own (`pfsqos --version` prints "pfsqos X.Y.Z"); checked against
# Debian's version syntax before it is written into the control file.
version="$("$binary" --version | sed -n 's/^pfsqos \([^ ]*\)$/\1/p')"
if ! printf '%s' "$version" | grep -Eq '^[0-9][A-Za-z0-9.+~-]{0,63}$'; then
  echo "package-deb: '$binary --version' gave no usable version ('$version')" >&2
  exit 1
fi
arch="$(dpkg --print-architecture)"
# The maintainer may come from the environment (unset or empty: the default): one line, no
# control characters, Debian's "Name <address>" form, so it cannot add fields to the control
# file.
maintainer="${PFSQOS_DEB_MAINTAINER:-pfsqos developers <pfsqos@localhost>}"
if ! printf '%s' "$maintainer" | grep -Eq '^[^[:cntrl:]<>]{1,100} <[^[:cntrl:][:space:]<>]{1,100}>$' ||
   [ "$(printf '%s' "$maintainer" | wc -l)" -ne 0 ]; then
  echo "package-deb: PFSQOS_DEB_MAINTAINER must be one line 'Name <address>'" >&2
  exit 1
fi
# The oldest glibc the binary runs on: the highest GLIBC_x.y symbol version it imports.
libc_min=""
if command -v objdump >/dev/null 2>&1; then
  libc_min="$(objdump -T "$binary" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' |
    sort -t. -k1,1n -k2,2n -k3,3n | tail -n 1)"
fi
depends="libc6${libc_min:+ (>= $libc_min)}, fuse3"

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
pkg="$stage/pfsqos"
install -d -m 0755 "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/usr/lib/systemd/system" \
  "$pkg/usr/share/pfsqos/grafana" "$pkg/usr/share/doc/pfsqos"
install -m 0755 "$binary" "$pkg/usr/bin/pfsqos"
if command -v strip >/dev/null 2>&1; then
  strip --strip-unneeded "$pkg/usr/bin/pfsqos"
fi
# The units of a `cargo install --root /usr/local` run /usr/local/bin/pfsqos; the package's
# binary is /usr/bin/pfsqos.
for unit in "$root"/packaging/systemd/pfsqos-*.service; do
  sed 's#/usr/local/bin/pfsqos#/usr/bin/pfsqos#g' "$unit" >"$pkg/usr/lib/systemd/system/$(basename "$unit")"
  chmod 0644 "$pkg/usr/lib/systemd/system/$(basename "$unit")"
done
install -m 0644 "$root"/packaging/grafana/*.json "$pkg/usr/share/pfsqos/grafana/"
cp -R "$root/scenarios" "$pkg/usr/share/pfsqos/scenarios"
find "$pkg/usr/share/pfsqos/scenarios" -type d -exec chmod 0755 {} + -o -type f -exec chmod 0644 {} +
install -m 0644 "$root/README.md" "$root/docs/live.md" "$root/docs/lustre.md" "$pkg/usr/share/doc/pfsqos/"
{
  echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
  echo "Upstream-Name: pfsqos"
  echo
  echo "Files: *"
  echo "Copyright: pfsqos developers"
  echo "License: Apache-2.0"
  echo
  echo "License: Apache-2.0"
  sed 's/^$/./; s/^/ /' "$root/LICENSE"
} >"$pkg/usr/share/doc/pfsqos/copyright"
chmod 0644 "$pkg/usr/share/doc/pfsqos/copyright"

installed_kib="$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)"
cat >"$pkg/DEBIAN/control" <<EOF
Package: pfsqos
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_kib
Depends: $depends
Section: admin
Priority: optional
Description: I/O bandwidth control for shared HPC parallel storage
 pfsqos shares a parallel file system's bandwidth among jobs: a deterministic
 simulator that reproduces and compares AdapTBF, GIFT, vPFS, PI control and
 iez; a live runtime (object and metadata servers, a FUSE client) with
 Lustre's TBF scheduler in front of its I/O threads; and an agent that drives
 real Lustre OSSs through lctl. One binary, pfsqos; systemd units for each
 role are installed but not enabled.
EOF
# Units changed on disk: systemd reads them again. Nothing is enabled or started here.
cat >"$pkg/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null 2>&1 || true
fi
EOF
# Before the binary goes away, stop the units that run it (each stops cleanly on SIGTERM: the
# ossd and the agent remove the rules they made, the mount unmounts).
cat >"$pkg/DEBIAN/prerm" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
  for unit in pfsqos-mount pfsqos-agent pfsqos-coordinator pfsqos-mds pfsqos-ossd; do
    systemctl stop "$unit.service" >/dev/null 2>&1 || true
  done
fi
EOF
cat >"$pkg/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null 2>&1 || true
fi
EOF
chmod 0755 "$pkg/DEBIAN/postinst" "$pkg/DEBIAN/prerm" "$pkg/DEBIAN/postrm"

mkdir -p "$out"
deb="$out/pfsqos_${version}_${arch}.deb"
dpkg-deb --root-owner-group "-Z$compress" --build "$pkg" "$deb" >/dev/null
echo "$deb"
