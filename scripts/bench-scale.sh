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
#
# A run that has not finished after RUN_TIMEOUT_S (default 600) wall seconds is stopped and
# listed as such.
set -euo pipefail
cd "$(dirname "$0")/.."
osts="${1:-64,500,2000}"
jobs="${2:-1000,4000,10000}"
kinds="${3:-stream,checkpoint,mixed}"
policies="${4:-nobw,adaptbf,vpfs,gift,pi}"
duration_s="${5:-10}"
run_timeout_s="${RUN_TIMEOUT_S:-600}"
[[ $run_timeout_s =~ ^[0-9]+$ ]] && (( run_timeout_s >= 1 )) || { echo "RUN_TIMEOUT_S must be a whole number of seconds" >&2; exit 2; }
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
    if /usr/bin/time -f "%e %M" -o "$work/time" timeout -s KILL "$run_timeout_s" \
      "$cli" sim "$scenario" --policy "$policy" --out "$out" \
      >/dev/null 2>"$work/err"; then
      read -r wall_s rss_kib <"$work/time"
      python3 - "$scenario" "$policy" "$wall_s" "$rss_kib" "$out" >>"$rows" <<'PY'
import json, os, pathlib, re, sys
scenario, policy, wall_s, rss_kib, out = sys.argv[1:]
name = pathlib.Path(scenario).stem
kind, osts, jobs = re.match(r"(\w+)-(\d+)ost-(\d+)job", name).groups()
summary = json.load(open(os.path.join(out, "summary.json")))
size = sum(f.stat().st_size for f in pathlib.Path(out).iterdir())
# The (job, OST) pairs that moved bytes: each holds one series of the run's bins.
pairs = set()
with open(os.path.join(out, "timeseries.csv")) as f:
    next(f)
    for line in f:
        fields = line.rstrip("\n").split(",")
        if fields[-3] != "all":
            pairs.add((",".join(fields[1:-3]), fields[-3]))
print("\t".join(map(str, [kind, osts, jobs, policy, summary["engine"]["events"], summary["sim_time_s"],
                          wall_s, rss_kib, size, len(pairs)])))
PY
    else
      read -r wall_s rss_kib < <(tail -1 "$work/time") || true
      reason="$( { grep -a 'error' "$work/err" || true; } | tail -1 | tr -d '\t|' | head -c 600)"
      [[ -n $reason ]] || reason="not finished within $run_timeout_s s (stopped)"
      echo "bench-scale: $(basename "$scenario") under $policy failed: $reason" >&2
      printf '%s\tfailed\t%s\t%s\t%s\n' "$(basename "$scenario" .toml) $policy" "${wall_s:-?}" \
        "${rss_kib:-0}" "$reason" >>"$rows"
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
# The simulator's bound on the time series (pfsqos_sim::scenario::SERIES_CELLS_MAX).
SERIES_CELLS_MAX = 1 << 28
HOUR_BINS = 3600 * 10 + 1
print("| workload | OSTs | jobs | policy | events | wall s | events per wall s | simulated s per wall s | peak RSS | result | one simulated hour, projected | its series at 100 ms bins |")
print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
points = {}
failed = []
for line in open(rows_path):
    f = line.rstrip("\n").split("\t")
    if f[1] == "failed":
        failed.append(f)
        continue
    kind, osts, jobs, policy, events, sim_s, wall_s, rss_kib, size, pairs = f
    osts, jobs, events, sim_s, wall_s, rss_kib, size, pairs = int(osts), int(jobs), int(events), float(sim_s), max(float(wall_s), 0.01), int(rss_kib), int(size), int(pairs)
    # At this run's simulated seconds per wall second; the series of the (job, OST) pairs
    # that moved bytes, at 100 ms bins, against the bound.
    hour_min = wall_s * 3600.0 / sim_s / 60.0
    cells = pairs * HOUR_BINS
    fits = "%.2f G cells, %s" % (cells / 1e9, "fits" if cells <= SERIES_CELLS_MAX else "%.1fx the bound" % (cells / SERIES_CELLS_MAX))
    print("| %s | %d | %d | %s | %s | %.2f | %.2f M | %.2f | %.0f MiB | %.1f MiB | %.0f min | %s |" % (kind, osts, jobs, policy, f"{events:,}", wall_s, events / wall_s / 1e6, sim_s / wall_s, rss_kib / 1024, size / 2**20, hour_min, fits))
    points.setdefault((kind, policy), []).append((osts, jobs, wall_s))
for name, _, wall_s, rss_kib, reason in failed:
    if reason.startswith("not finished"):
        # Killed: its peak RSS is not reported to the timer.
        what = reason
    else:
        what = "failed after %s s, peak RSS %.0f MiB: %s" % (wall_s, int(rss_kib or 0) / 1024, reason.replace("pfsqos: error: ", ""))
    print("| %s | | | | %s | | | | | | | |" % (name, what))
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
