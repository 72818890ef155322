#!/usr/bin/env bash
# Prints the facts of this host that a measurement of DIR depends on, one `key: value` a
# line: CPU, cores, memory, kernel, virtualization, and the file system, block device, its
# model, rotational flag and I/O scheduler under DIR.
#
#   scripts/physics-host-facts.sh DIR
set -euo pipefail
dir="$1"
fact() { printf '%s: %s\n' "$1" "${2:-unknown}"; }
fact cpu "$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)"
fact cores "$(nproc)"
fact memory "$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
fact kernel "$(uname -sr)"
fact virtualization "$(systemd-detect-virt 2>/dev/null || echo none)"
src="$(findmnt -T "$dir" -no SOURCE 2>/dev/null | head -1)"
fact filesystem "$(findmnt -T "$dir" -no FSTYPE 2>/dev/null | head -1) on ${src:-unknown}"
dev="$(basename "$(readlink -f "$src" 2>/dev/null || echo "$src")")"
# The whole disk a partition belongs to (vda1 -> vda).
disk="$(lsblk -no PKNAME "/dev/$dev" 2>/dev/null | head -1)"
disk="${disk:-$dev}"
if [ -e "/sys/block/$disk" ]; then
  model="$(lsblk -dno MODEL "/dev/$disk" 2>/dev/null | sed 's/ *$//')"
  vendor="$(cat "/sys/block/$disk/device/vendor" 2>/dev/null || true)"
  fact device "/dev/$disk, $(lsblk -dno SIZE "/dev/$disk" | tr -d ' '), model ${model:-none given}${vendor:+, vendor id $vendor}"
  fact rotational "$(cat "/sys/block/$disk/queue/rotational")"
  fact scheduler "$(sed 's/.*\[\(.*\)\].*/\1/' "/sys/block/$disk/queue/scheduler")"
else
  fact device "$src"
fi
