#!/usr/bin/env bash
# Regenerates every simulated reproduction and the bake-off's documents, one script after the
# other, and prints each one's wall time and the total:
#   reproduce-adaptbf.sh  docs/reproductions/adaptbf{.md,-measured.md,/*.svg}
#   reproduce-gift.sh     docs/reproductions/gift{.md,-measured.md}
#   reproduce-iez.sh      docs/reproductions/iez{.md,-measured.md,/*.svg}
#   reproduce-pi.sh       docs/reproductions/pi-control{.md,-measured.md}
#   reproduce-vpfs.sh     docs/reproductions/vpfs{.md,-measured.md}
#   reproduce-themisio.sh docs/reproductions/themisio{.md,-measured.md}
#   reproduce-bakeoff.sh  docs/bakeoff-results.md and the generated parts of docs/bakeoff.md
# The live runs (reproduce-iez-live.sh, pi-fig67-live.sh, vpfs-overhead.sh) need a FUSE mount
# and real disks; they are not part of this script and their numbers stay as they were run.
# Builds everything first (release), so the scripts' own builds are no-ops and the times are
# the runs'. Stops at the first script that fails.
# Usage: scripts/reproduce-all.sh [--quick]
#   --quick: GIFT's quick subset (reproduce-gift.sh --quick keeps the other sections' tables
#            out of gift-measured.md, so the claims that read them become "not measured")
set -euo pipefail
cd "$(dirname "$0")/.."
gift_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) gift_args=(--quick) ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
start=$(date +%s)
cargo build --release --locked -q -p pfsqos-cli
cargo build --release --locked -q -p pfsqos-sim \
  --example gift_repro --example iez_repro --example pi_repro --example vpfs_repro
echo "build: $(( $(date +%s) - start )) s"
summary=()
run() {
  local name=$1
  shift
  local t0
  t0=$(date +%s)
  echo "== $name"
  "$@"
  local dt=$(( $(date +%s) - t0 ))
  summary+=("$name: ${dt} s")
  echo "== $name: ${dt} s"
}
run adaptbf scripts/reproduce-adaptbf.sh
run gift scripts/reproduce-gift.sh "${gift_args[@]}"
run iez scripts/reproduce-iez.sh
run pi scripts/reproduce-pi.sh
run vpfs scripts/reproduce-vpfs.sh
run themisio scripts/reproduce-themisio.sh
run bakeoff scripts/reproduce-bakeoff.sh
echo
printf '%s\n' "${summary[@]}"
echo "total wall time: $(( $(date +%s) - start )) s"
