#!/usr/bin/env python3
"""Writes the measured tables of the AdapTBF reproduction (docs/reproductions/adaptbf-measured.md)
from the `pfsqos compare` runs scripts/reproduce-adaptbf.sh made.

Usage: scripts/claims-adaptbf-measure.py RUN_DIR  (markdown on stdout)

RUN_DIR holds one compare output per case (flagship, adaptbf-iv-e, adaptbf-iv-f, adaptbf-iv-h),
each with summary.json, and <policy>/timeseries.csv and control_trace.csv.

Columns:
* MiB/s: the job's bytes over its I/O time (first to last I/O);
* MiB/s active: its bytes over the bins in which it moved data (a bursty job while it bursts);
* MiB per s, contended window: its bytes in the bins before the highest-priority job (job4)
  finished, over that window: what each job moved while all four competed (§IV-D);
* records: AdapTBF's lent (+) and borrowed (-) tokens per OST and job, read from the control
  trace at the times the paper's Fig. 7 narrates.
"""
import csv
import json
import os
import sys

CASES = [
    ("flagship", "§IV-D: token allocation (scenarios/demo/flagship.toml)"),
    ("adaptbf-iv-e", "§IV-E: token redistribution (scenarios/adaptbf/iv-e-redistribution.toml)"),
    ("adaptbf-iv-f", "§IV-F: re-compensation (scenarios/adaptbf/iv-f-recompensation.toml)"),
    ("adaptbf-iv-h", "§IV-H: allocation period on the §IV-F workload"),
]


def bins_per_job(path):
    """job -> {time_s: bytes} summed over OSTs, from timeseries.csv (rows per job and OST)."""
    out = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["job_id"] == "all" or r.get("ost") == "all":
                continue
            d = out.setdefault(r["job_id"], {})
            t = round(float(r["time_s"]), 6)
            d[t] = d.get(t, 0) + int(r["bytes"])
    return out


def main():
    root = sys.argv[1]
    print("Columns are explained at the top of `scripts/claims-adaptbf-measure.py`.\n")
    for case, title in CASES:
        s = json.load(open(os.path.join(root, case, "summary.json")))
        print(f"## {title}\n")
        print("### Aggregate\n")
        print("| policy | seed | aggregate (MiB/s) | weighted Jain | share deviation |")
        print("|---|---:|---:|---:|---:|")
        for r in s["runs"]:
            print(
                f"| {r['policy']} | {r['seed']} | {r['aggregate_throughput_mib_s']:.1f} | "
                f"{r['weighted_jain_index']:.4f} | {r['share_deviation']:.4f} |"
            )
        print()
        print("### Per job\n")
        print(
            "| policy | job | MiB/s | MiB/s active | MiB per s, contended window | "
            "I/O time (s) |"
        )
        print("|---|---|---:|---:|---:|---:|")
        for r in s["runs"]:
            jobs = {j["job_id"]: j for j in r["jobs"]}
            window = None
            bins = None
            # compare names each run's directory after its policy (`:` as `+`, `=` as `-`).
            own = os.path.join(root, case, r["policy"].replace(":", "+").replace("=", "-"))
            if os.path.isdir(own):
                bins = bins_per_job(os.path.join(own, "timeseries.csv"))
                if "job4" in jobs:
                    # Bins wholly before job4's last I/O (the reproduction test's window).
                    window = int(jobs["job4"]["io_time_s"] / r["bin_s"]) - 1
            for jid in sorted(jobs):
                j = jobs[jid]
                w = ""
                if bins is not None and window and window > 0:
                    first = min(t for b in bins.values() for t in b)
                    moved = sum(v for t, v in bins.get(jid, {}).items()
                                if t < first + window * r["bin_s"] - 1e-9)
                    w = f"{moved / 2**20 / (window * r['bin_s']):.1f}"
                print(
                    f"| {r['policy']} | {jid} | {j['throughput_mib_s']:.1f} | "
                    f"{j['active_throughput_mib_s']:.1f} | {w} | {j['io_time_s']:.1f} |"
                )
        print()
        if case == "adaptbf-iv-f" and os.path.isdir(os.path.join(root, case, "adaptbf")):
            rec = {}
            with open(os.path.join(root, case, "adaptbf", "control_trace.csv"), newline="") as f:
                for r in csv.DictReader(f):
                    if r["metric"] == "record_tokens":
                        rec.setdefault((r["ost"], r["job_id"]), []).append(
                            (float(r["time_s"]), float(r["value"])))

            def at(series, t):
                vals = [v for x, v in series if x <= t + 1e-9]
                return vals[-1] if vals else 0.0

            print("### AdapTBF's records (tokens lent +, borrowed -)\n")
            print("| OST | job | at 50 s | at 79.9 s | at 100 s | lowest | highest |")
            print("|---|---|---:|---:|---:|---:|---:|")
            for (ost, jid), series in sorted(rec.items()):
                vals = [v for _, v in series]
                print(
                    f"| {ost} | {jid} | {at(series, 50):.0f} | {at(series, 79.9):.0f} | "
                    f"{at(series, 100):.0f} | {min(vals):.0f} | {max(vals):.0f} |"
                )
            print()


if __name__ == "__main__":
    main()
