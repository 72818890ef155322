#!/usr/bin/env python3
"""Runs the criterion benchmarks and regenerates their tables in docs/benchmarks.md.

Every table of criterion figures in docs/benchmarks.md sits between two markers,

    <!-- generated:bench:PACKAGE/BENCH[:FILTER] -->
    ...
    <!-- /generated:bench:PACKAGE/BENCH[:FILTER] -->

and this script rewrites what is between them from one run of that benchmark: each benchmark
id's median, the fastest and slowest sample (per iteration, from criterion's sample.json) and,
where the benchmark declares a throughput, the median per element, with the machine, its load
before and after, and the time. A block `<!-- generated:run:NAME -->` holds what one of the
measuring scripts in RUNS below printed (each prints Markdown). Nothing here passes or fails on
a time: benchmarks are not tests.

    scripts/bench-doc.py [--seconds S] [--only KEY ...] [--doc docs/benchmarks.md]

KEY is a block's name as its marker gives it (`pfsqos-core/tbf`, `run:mount`).

Each benchmark runs into a criterion directory of its own (CRITERION_HOME), so a table holds
exactly the ids that benchmark measured in this run, never a stale one from an earlier run.
"""

import argparse
import datetime
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import generated  # noqa: E402

MARKER = re.compile(r"<!-- generated:bench:([A-Za-z0-9_-]+)/([A-Za-z0-9_-]+)(?::([^ ]+))? -->")
RUN_MARKER = re.compile(r"<!-- generated:run:([a-z0-9-]+) -->")

# The measurements a criterion bench cannot hold (a whole cluster, a FUSE mount, a release
# binary's wall time), each a command that prints its figures as Markdown on stdout.
RUNS = {
    "oss-sched": ["env", "SKIP_WALL=1", "bash", "scripts/bench-oss-sched.sh"],
    "mount": ["env", "BENCH_SIZE=1G", "BENCH_ROUNDS=3", "bash", "scripts/bench-mount.sh"],
    "iez-mds": ["cargo", "run", "-q", "--locked", "--release", "-p", "pfsqos-mds", "--example",
                "iez_create_latency"],
    "bakeoff": ["bash", "scripts/bench-bakeoff.sh"],
    "fluid": ["bash", "scripts/bench-fluid.sh"],
    "vpfs-table2": ["bash", "scripts/bench-vpfs-table2.sh"],
    "sched-counts": ["bash", "scripts/bench-sched-counts.sh", "tbf:100000", "sfqd:100000",
                     "threshold:100000", "layout:100000", "sfqd_mixed_sizes:100000"],
    "orphan-sweep": ["bash", "scripts/bench-orphan-sweep.sh"],
    "scale": ["env", "RUN_TIMEOUT_S=240", "bash", "scripts/bench-scale.sh", "64,500,2000",
              "1000,10000", "stream,checkpoint,mixed", "nobw,adaptbf,vpfs,gift,pi", "10"],
    # docs/live.md's (run with --doc docs/live.md)
    "concurrent-readers": ["bash", "scripts/mount-concurrent-readers.sh"],
    # docs/reproductions/vpfs.md's (run with --doc docs/reproductions/vpfs.md)
    "vpfs-overhead": ["bash", "scripts/vpfs-overhead.sh"],
}


def machine():
    model = ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
                break
    except (OSError, subprocess.CalledProcessError):
        pass
    return "%s, %d cores" % (model or "unknown CPU", os.cpu_count() or 0)


def load():
    return " ".join(pathlib.Path("/proc/loadavg").read_text().split()[:3])


def fmt_ns(ns):
    if ns >= 1e9:
        return "%.2f s" % (ns / 1e9)
    if ns >= 1e6:
        return "%.2f ms" % (ns / 1e6)
    if ns >= 1e3:
        return "%.2f µs" % (ns / 1e3)
    return "%.1f ns" % ns


def read_results(home):
    """(full_id, median_ns, min_ns, max_ns, elements) for every id under a criterion home."""
    rows = []
    for est in sorted(pathlib.Path(home).glob("**/new/estimates.json")):
        bench = json.loads((est.parent / "benchmark.json").read_text())
        median = json.loads(est.read_text())["median"]["point_estimate"]
        sample = json.loads((est.parent / "sample.json").read_text())
        per_iter = [t / n for t, n in zip(sample["times"], sample["iters"]) if n > 0]
        if not per_iter:
            sys.exit("bench-doc: %s has no samples" % est.parent)
        tp = bench.get("throughput") or {}
        rows.append((bench["full_id"], median, min(per_iter), max(per_iter), tp.get("Elements")))
    return rows


def table(rows):
    per_element = any(r[4] for r in rows)
    head = "| benchmark | median | fastest sample | slowest sample |"
    rule = "|---|---|---|---|"
    if per_element:
        head += " median per element |"
        rule += "---|"
    lines = [head, rule]
    for full_id, median, lo, hi, elements in rows:
        line = "| `%s` | %s | %s | %s |" % (full_id, fmt_ns(median), fmt_ns(lo), fmt_ns(hi))
        if per_element:
            line += " %s |" % (
                "%s (%s elements)" % (fmt_ns(median / elements), f"{elements:,}") if elements else ""
            )
        lines.append(line)
    return lines


def run_bench(package, bench, filt, seconds, home):
    shutil.rmtree(home, ignore_errors=True)
    cmd = ["cargo", "bench", "-q", "--locked", "-p", package, "--bench", bench, "--"]
    if filt:
        cmd.append(filt)
    cmd += ["--warm-up-time", "1", "--measurement-time", str(seconds)]
    env = dict(os.environ, CRITERION_HOME=str(home))
    print("bench-doc: " + " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="criterion measurement time per id")
    ap.add_argument("--only", nargs="*", default=None, help="PACKAGE/BENCH[:FILTER] blocks to run")
    ap.add_argument("--doc", default="docs/benchmarks.md")
    args = ap.parse_args()
    if not (0 < args.seconds <= 600):
        sys.exit("bench-doc: --seconds must be in (0, 600]")

    doc = pathlib.Path(args.doc)
    text = doc.read_text()
    blocks = []
    for m in MARKER.finditer(text):
        key = "%s/%s%s" % (m.group(1), m.group(2), ":" + m.group(3) if m.group(3) else "")
        if args.only is None or key in args.only:
            blocks.append((key, m.group(1), m.group(2), m.group(3)))
    for m in RUN_MARKER.finditer(text):
        key = "run:" + m.group(1)
        if m.group(1) not in RUNS:
            sys.exit("bench-doc: %s names %s, which RUNS does not hold" % (doc, key))
        if args.only is None or key in args.only:
            blocks.append((key, None, None, None))
    if not blocks:
        sys.exit("bench-doc: no generated block to run in %s" % doc)

    # Absolute: criterion runs each bench in its package directory.
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", "target")).resolve()
    for key, package, bench, filt in blocks:
        load_before = load()
        started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        if package is None:
            argv = RUNS[key[len("run:"):]]
            print("bench-doc: " + " ".join(argv), file=sys.stderr, flush=True)
            out = subprocess.run(argv, check=True, stdout=subprocess.PIPE, text=True).stdout
            if not out.strip():
                sys.exit("bench-doc: %s printed nothing" % key)
            cmd, figures = " ".join(argv), out.rstrip().splitlines()
        else:
            home = target / "bench-doc" / key.replace("/", "_").replace(":", "_")
            run_bench(package, bench, filt, args.seconds, home)
            rows = read_results(home)
            if not rows:
                sys.exit("bench-doc: %s measured nothing" % key)
            cmd = "cargo bench -p %s --bench %s -- %s--warm-up-time 1 --measurement-time %g" % (
                package, bench, filt + " " if filt else "", args.seconds)
            figures = table(rows)
        body = [
            "Generated by `scripts/bench-doc.py` from `%s`, started %s: %s, load average %s "
            "before and %s after." % (cmd, started, machine(), load_before, load()),
            "",
        ] + figures
        marker = key if package is None else "bench:" + key
        text = generated.replace(text, marker, "\n".join(body), where=str(doc))
        doc.write_text(text)
        print("\n".join(body), flush=True)


if __name__ == "__main__":
    main()
