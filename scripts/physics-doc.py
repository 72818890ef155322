#!/usr/bin/env python3
"""Regenerates the generated sections of docs/physics.md from profile files.

    python3 scripts/physics-doc.py                  # the shipped profiles' table
    python3 scripts/physics-doc.py --measured FILE  # also this machine's calibrated profile

Every number these sections show is read from a profile file (the shipped ones are written
by scripts/profiles-from-datasheets.py, a measured one by `pfsqos calibrate`, see
scripts/physics-calibrate.sh); none is typed into the document.
"""

import argparse
import os
import re
import sys
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import generated  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DOC = os.path.join(ROOT, "docs", "physics.md")
SHIPPED = ["hdd-7200rpm", "raid6-hdd-ost", "ssd-sata", "ssd-nvme"]


def load(path):
    with open(path, "rb") as f:
        return tomllib.load(f)


def row_at(rows, size_kib):
    """Bandwidth and overhead interpolated at size_kib, flat outside (the model's rule)."""
    pts = [(r["size_kib"], r["bandwidth_mib_s"], r["overhead_us"]) for r in rows]
    if size_kib <= pts[0][0]:
        return pts[0][1:]
    for (x0, b0, o0), (x1, b1, o1) in zip(pts, pts[1:]):
        if size_kib <= x1:
            f = (size_kib - x0) / (x1 - x0)
            return b0 + f * (b1 - b0), o0 + f * (o1 - o0)
    return pts[-1][1:]


def one_request_us(p, table, size_kib):
    bw, over = row_at(p[table], size_kib)
    return over + size_kib / 1024 / bw * 1e6


def streams_at(p, n):
    rows = p.get("streams", [])
    if not rows:
        return 0.0
    best = rows[0]["switch_penalty_us"]
    for r in rows:
        if r["streams"] <= n:
            best = r["switch_penalty_us"]
    return best


def shipped_table():
    out = ["| profile | source | date | concurrency | 1 MiB read / write, one request (MiB/s) | "
           "4 KiB random read, one request (us) | switch cost at 16 streams (ms) |",
           "|---|---|---|---|---|---|---|"]
    for name in SHIPPED:
        p = load(os.path.join(ROOT, "profiles", name + ".toml"))
        s = p["source"]
        r1 = 1.0 / (one_request_us(p, "read", 1024) * 1e-6)
        w1 = 1.0 / (one_request_us(p, "write", 1024) * 1e-6)
        rand = one_request_us(p, "read", 4) + p.get("random_penalty_us", 0.0)
        out.append(
            f"| `{name}` | {s['citation']} ({s['kind']}) | {s['date']} | {p['concurrency']} | "
            f"{r1:.1f} / {w1:.1f} | {rand:.1f} | {streams_at(p, 16) / 1e3:.2f} |")
    return "\n".join(out)


def host_facts(path):
    """`key: value` lines written by scripts/physics-host-facts.sh, as a list."""
    if not path:
        return []
    with open(path) as f:
        facts = [l.strip().split(": ", 1) for l in f if ": " in l]
    return ["The host:", ""] + [f"* {k}: {v}" for k, v in facts] + [""]


def measured_section(path, facts=None):
    p = load(path)
    s = p["source"]
    rel = os.path.relpath(os.path.abspath(path), ROOT)
    lines = [f"Measured on `{s.get('host', '?')}` ({s.get('target', '?')}), {s['date']}, with "
             f"{s['citation']}. {s['method']} The profile is `{rel}`.", ""]
    lines += host_facts(facts)
    lines += [
             "| op | pattern | size (KiB) | queue depth | streams | MiB/s | mean latency (us) |",
             "|---|---|---|---|---|---|---|"]
    for m in p.get("measured", []):
        op = m["op"] + (f" ({m['read_percent']} % read)" if "read_percent" in m else "")
        lines.append(f"| {op} | {m['pattern']} | {m['size_kib']} | {m['queue_depth']} | "
                     f"{m['streams']} | {m['bandwidth_mib_s']:.1f} | {m['latency_mean_us']:.1f} |")
    lines += ["", "Derived parameters: concurrency "
              f"{p['concurrency']}, random penalty {p.get('random_penalty_us', 0.0):.1f} us, "
              f"direction switch {p.get('direction_switch_penalty_us', 0.0):.1f} us, "
              f"{len(p.get('streams', []))} stream rows, {len(p.get('congestion', []))} "
              f"congestion rows, {len(p.get('variability', []))} variability rows."]
    return "\n".join(lines)


def replace(doc, tag, body):
    return generated.replace(doc, tag, body, where="docs/physics.md")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--measured", help="a profile written by pfsqos calibrate")
    ap.add_argument("--host-facts", help="the host's facts (scripts/physics-host-facts.sh)")
    a = ap.parse_args()
    with open(DOC) as f:
        doc = f.read()
    doc = replace(doc, "shipped", shipped_table())
    if a.measured:
        doc = replace(doc, "measured", measured_section(a.measured, a.host_facts))
    with open(DOC, "w") as f:
        f.write(doc)
    print("updated docs/physics.md")


main()
