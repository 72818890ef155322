#!/usr/bin/env bash
# Regenerates docs/images/bakeoff-summary.png, the README's picture of the demo report's first
# screen: runs `pfsqos demo` into a scratch directory and screenshots its report.html in
# headless Chromium (chromium-headless-shell or chromium; scripts/setup.sh installs it).
# Usage: bash scripts/readme-screenshot.sh    (PFSQOS=path/to/pfsqos to skip the build)
set -euo pipefail
cd "$(dirname "$0")/.."
browser=""
for b in chromium-headless-shell chromium; do
  if command -v "$b" >/dev/null 2>&1; then browser="$b"; break; fi
done
if [ -z "$browser" ]; then
  echo "readme-screenshot: no chromium-headless-shell or chromium on PATH (scripts/setup.sh installs it as root)" >&2
  exit 1
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# PFSQOS names a pfsqos binary to use instead of building one.
if [ -z "${PFSQOS:-}" ]; then
  cargo build --release -q -p pfsqos-cli
  PFSQOS="${CARGO_TARGET_DIR:-target}/release/pfsqos"
fi
"$PFSQOS" demo --out "$scratch/demo" >/dev/null
"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$scratch/profile" --hide-scrollbars --window-size=1040,1000 \
  --screenshot="$PWD/docs/images/bakeoff-summary.png" "file://$scratch/demo/report.html" 2>/dev/null
echo "wrote docs/images/bakeoff-summary.png"
