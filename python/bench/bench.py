"""Measures the Python package against the command line and writes the Python section of
docs/benchmarks.md (run by python/bench/bench.sh, which builds both in release mode).

* simulate() against `pfsqos sim` on the same scenario, policy and seed: wall time of the
  whole call (load, validate, run, summary) against the whole process (which also writes
  timeseries.csv, summary.json and report.html), alternating, the median of --reps each;
* converting the run to DataFrames (summary, jobs, timeseries, control trace) against the run.

Nothing here asserts a time: it measures and writes what it measured.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

import pfsqos

REPO = Path(__file__).resolve().parents[2]
BEGIN = "<!-- python-bench:begin (written by python/bench/bench.sh) -->"
END = "<!-- python-bench:end -->"


def machine() -> str:
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model or platform.processor() or 'unknown CPU'}, {os.cpu_count()} cores (`nproc`)"


def load() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def rustc() -> str:
    try:
        return subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "rustc (unknown version)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cli", required=True, help="the pfsqos binary (a release build)")
    ap.add_argument("--scenario", default=str(REPO / "scenarios" / "gift" / "sim-500.toml"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--write", help="the benchmarks page whose Python section to (re)write")
    args = ap.parse_args()

    scenario = Path(args.scenario)
    shown = os.path.relpath(scenario, REPO)
    sc = pfsqos.Scenario.load(scenario)
    policy = sc.policy.default
    seed = sc.simulation.seed
    load_before = load()
    cli_s, py_s, convert_s = [], [], []
    rows = mem = jobs_mem = 0
    id_dtype = ""
    for rep in range(args.reps):
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            subprocess.run([args.cli, "sim", str(scenario), "--policy", policy, "--seed",
                            str(seed), "--out", out], check=True, capture_output=True)
            cli_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        run = pfsqos.simulate(str(scenario), policy=policy, seed=seed, progress=False)
        py_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        summary = run.summary
        jobs = run.jobs
        ts = run.timeseries
        trace = run.control_trace
        convert_s.append(time.perf_counter() - t0)
        rows = len(ts)
        mem = int(ts.memory_usage(deep=True).sum())
        jobs_mem = int(jobs.memory_usage(deep=True).sum())
        id_dtype = str(jobs["job_id"].dtype)
        if getattr(jobs["job_id"].dtype, "storage", None) == "pyarrow":
            id_dtype += ", Arrow-backed"
        apps = len(jobs)
        assert summary["jobs"] and len(jobs) == len(summary["jobs"])
        print(f"rep {rep + 1}: cli {cli_s[-1]:.3f} s, simulate {py_s[-1]:.3f} s, "
              f"DataFrames {convert_s[-1]:.3f} s", file=sys.stderr)
    load_after = load()
    cli = statistics.median(cli_s)
    py = statistics.median(py_s)
    conv = statistics.median(convert_s)
    fmt = lambda xs: ", ".join(f"{x:.2f}" for x in xs)
    text = f"""{BEGIN}
## Python package: `simulate()` against `pfsqos sim`, and the DataFrames (`python/bench/bench.sh`)

`bash python/bench/bench.sh` builds the command line and the wheel in release mode ({rustc()}),
installs the wheel into a virtual environment and runs `python/bench/bench.py`: `{shown}`
({apps} applications, fluid engine) under its default policy `{policy}`, seed {seed}, {args.reps}
times each, alternating. `pfsqos sim` is timed as a whole process (it also writes
timeseries.csv, summary.json and report.html); `pfsqos.simulate()` as the whole call (reading
and validating the file, the run, the summary). The DataFrames are `run.summary`, `run.jobs`,
`run.timeseries` and `run.control_trace` of a fresh run. {machine()}; load average
{load_before} before, {load_after} after; Python {platform.python_version()}, pandas
{pd.__version__}.

| | median | every run |
|---|---|---|
| `pfsqos sim` (process) | {cli:.2f} s | {fmt(cli_s)} s |
| `pfsqos.simulate()` | {py:.2f} s | {fmt(py_s)} s |
| `simulate()` against the CLI | {100 * (py / cli - 1):+.1f} % | {", ".join(f"{100 * (p / c - 1):+.0f}" for p, c in zip(py_s, cli_s))} % (each against the CLI run before it) |
| DataFrames from the run | {conv:.3f} s | {", ".join(f"{x:.3f}" for x in convert_s)} s |
| DataFrames against the run | {100 * conv / py:.1f} % of `simulate()` | |

The timeseries frame has {rows:,} rows (one per hour, application and OST that moved bytes)
in {mem / 2**20:.1f} MiB: numeric columns are numpy arrays copied once from the simulator's
bins, `job` and `ost` are categoricals. The jobs frame ({apps} rows) takes
{jobs_mem / 2**10:.0f} KiB, its `job_id` column of dtype `{id_dtype}`. Targets: `simulate()` at most 5 % above the command
line, and the conversion no slower than the run. The run's own wall time varies from one
call to the next in one process (`simulate()` from {min(py_s):.2f} to {max(py_s):.2f} s), so
trust the median over single pairs.
{END}
"""
    print(text)
    if args.write:
        page = Path(args.write)
        old = page.read_text(encoding="utf-8")
        if BEGIN in old and END in old:
            new = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END) + "\n", lambda _: text, old,
                         flags=re.S)
        else:
            new = old.rstrip("\n") + "\n\n" + text
        page.write_text(new, encoding="utf-8")
        print(f"wrote the Python section of {page}", file=sys.stderr)


if __name__ == "__main__":
    main()
