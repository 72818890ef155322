#!/usr/bin/env bash
# The scale suite: generated scenarios (scenarios/scale/generate.py) at several OST and job
# counts, each run by the release CLI under nobw, adaptbf, vpfs, gift and pi. For each run it
# prints events per wall-clock second, simulated seconds per wall second, peak RSS and the size
# of the result files, then the exponents of wall time in OSTs and in jobs (least squares on
# the log-log points of each workload and policy). Prints Markdown, with the machine and its
# load before and after. A benchmark: nothing fails on a time.
#
#   scripts/bench-scale.sh [OSTS] [JOBS] [KINDS] [POLICIES] [DURATION_S]
#   scripts/bench-scale.sh 64,500,2000 1000,4000,10000 stream,checkpoint,mixed nobw,adaptbf,vpfs,gift,pi 10
set -euo pipefail
cd "$(dirname "$0")/.."
osts="${1:-64,500,2000}"
jobs="${2:-1000,4000,10000}"
kinds="${3:-stream,checkpoint,mixed}"
policies="${4:-nobw,adaptbf,vpfs,gift,pi}"
duration_s="${5:-10}"
target="${CARGO_TARGET_DIR:-target}"
cargo build -q --locked --release -p pfsqos-cli
cli="$target/release/pfsqos"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 scenarios/scale/generate.py --osts "$osts" --jobs "$jobs" --kinds "$kinds" \
  --duration-s "$duration_s" --out "$work/scenarios" >/dev/null
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
rows="$work/rows.tsv"
: >"$rows"
for scenario in "$work"/scenarios/*.toml; do
  for policy in ${policies//,/ }; do
    out="$work/out"
    rm -rf "$out"
    if /usr/bin/time -f "%e %M" -o "$work/time" "$cli" sim "$scenario" --policy "$policy" --out "$out" \
      >/dev/null 2>"$work/err"; then
      read -r wall_s rss_kib <"$work/time"
      python3 - "$scenario" "$policy" "$wall_s" "$rss_kib" "$out" >>"$rows" <<'PY'
import json, os, pathlib, re, sys
scenario, policy, wall_s, rss_kib, out = sys.argv[1:]
name = pathlib.Path(scenario).stem
kind, osts, jobs = re.match(r"(\w+)-(\d+)ost-(\d+)job", name).groups()
summary = json.load(open(os.path.join(out, "summary.json")))
size = sum(f.stat().st_size for f in pathlib.Path(out).iterdir())
print("\t".join(map(str, [kind, osts, jobs, policy, summary["engine"]["events"], summary["sim_time_s"],
                          wall_s, rss_kib, size])))
PY
    else
      echo "bench-scale: $(basename "$scenario") under $policy failed: $(head -c 300 "$work/err")" >&2
      printf '%s\tfailed\n' "$(basename "$scenario" .toml) $policy" >>"$rows"
    fi
  done
done
python3 - "$rows" "$load_before" "$duration_s" <<'PY'
import math, os, subprocess, sys
rows_path, load_before, duration_s = sys.argv[1:]
model = next((l.split(":", 1)[1].strip() for l in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines() if l.startswith("Model name:")), "unknown CPU")
load_after = " ".join(open("/proc/loadavg").read().split()[:3])
print("%s, %d cores; load average %s before, %s after; %s simulated s per run, release build." % (model, os.cpu_count(), load_before, load_after, duration_s))
print()
print("| workload | OSTs | jobs | policy | events | wall s | events per wall s | simulated s per wall s | peak RSS | result |")
print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
points = {}
failed = []
for line in open(rows_path):
    f = line.rstrip("\n").split("\t")
    if len(f) == 2:
        failed.append(f[0])
        continue
    kind, osts, jobs, policy, events, sim_s, wall_s, rss_kib, size = f
    osts, jobs, events, sim_s, wall_s, rss_kib, size = int(osts), int(jobs), int(events), float(sim_s), max(float(wall_s), 0.01), int(rss_kib), int(size)
    print("| %s | %d | %d | %s | %s | %.2f | %.2f M | %.2f | %.0f MiB | %.1f MiB |" % (kind, osts, jobs, policy, f"{events:,}", wall_s, events / wall_s / 1e6, sim_s / wall_s, rss_kib / 1024, size / 2**20))
    points.setdefault((kind, policy), []).append((osts, jobs, wall_s))
for f in failed:
    print("| %s | | | | failed | | | | | |" % f)
print()
def slope(xy):
    if len(xy) < 2 or len({x for x, _ in xy}) < 2:
        return None
    lx = [math.log(x) for x, _ in xy]; ly = [math.log(y) for _, y in xy]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)
print("Exponents of wall time (wall ~ OSTs^a at fixed jobs, ~ jobs^b at fixed OSTs; least squares over the sizes run):")
print()
print("| workload | policy | a (OSTs) | b (jobs) |")
print("|---|---|---:|---:|")
for (kind, policy), pts in sorted(points.items()):
    a = [s for s in (slope([(o, w) for o, j2, w in pts if j2 == j]) for j in {j for _, j, _ in pts}) if s is not None]
    b = [s for s in (slope([(j, w) for o2, j, w in pts if o2 == o]) for o in {o for o, _, _ in pts}) if s is not None]
    fmt = lambda v: "%.2f" % (sum(v) / len(v)) if v else "–"
    print("| %s | %s | %s | %s |" % (kind, policy, fmt(a), fmt(b)))
PY
