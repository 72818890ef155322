#!/usr/bin/env bash
# Regenerates the replay-match table of docs/traces.md from a run: each committed Darshan
# test log with a timeline, imported and simulated, against the log's bytes per interval
# (the ignored test `replay_match_table` in crates/pfsqos-darshan/tests/darshan/convert.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
table=$(cargo test -q -p pfsqos-darshan --test darshan -- --ignored --nocapture replay_match_table 2>/dev/null | grep '^|')
python3 - "$table" <<'PY'
import re, sys
doc = open("docs/traces.md").read()
begin, end = "<!-- replay-match:begin -->", "<!-- replay-match:end -->"
new = f"{begin}\n{sys.argv[1]}\n{end}"
doc, n = re.subn(re.escape(begin) + ".*?" + re.escape(end), lambda _: new, doc, flags=re.S)
assert n == 1, "docs/traces.md has no replay-match markers"
open("docs/traces.md", "w").write(doc)
PY
echo "docs/traces.md: replay-match table updated"
