#!/usr/bin/env bash
# Probes a live loopback cluster as an attacker would (scripts/under-attack.py: handshake
# floods against the ossd and the MDS, refused-connection logging, trickling metrics clients, a
# job id that cannot be a TBF rule) and writes the figures into docs/live.md between its
# under-attack markers. PFSQOS names the binary (default: a release build of this tree). Needs
# root, /dev/fuse and fusermount3 for the probes that mount; the others run anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PFSQOS:-}" ]; then
  cargo build --release -q --locked -p pfsqos-cli
  PFSQOS=${CARGO_TARGET_DIR:-$PWD/target}/release/pfsqos
fi
export PFSQOS
table="$(python3 scripts/under-attack.py)"
python3 - "$table" <<'PY'
import re, sys
path = "docs/live.md"
text = open(path).read()
block = ("<!-- under-attack:begin (written by scripts/under-attack.sh) -->\n" + sys.argv[1].strip()
         + "\n<!-- under-attack:end -->")
pattern = re.compile(r"<!-- under-attack:begin.*?<!-- under-attack:end -->", re.S)
if not pattern.search(text):
    sys.exit("docs/live.md has no under-attack markers")
open(path, "w").write(pattern.sub(lambda _: block, text))
PY
echo "under-attack: docs/live.md updated"
