#!/usr/bin/env python3
"""Reference records for the Darshan reader's tests (crates/pfsqos-darshan).

Reads Darshan logs with PyDarshan's bundled libdarshan-util (`pip install darshan`; the
numbers committed were made with darshan 3.5.0) and writes, per log, `<log>.reference.json`:
the format version, the job record, every module's version and region length, the name
records, and every record of the POSIX, MPI-IO, STDIO, LUSTRE, DXT_POSIX and HEATMAP
modules, field by field (integer counters as integers, floating-point counters as their
IEEE-754 bit patterns, so the comparison is exact). The Rust tests compare every field and
need no Python. A log libdarshan-util cannot open gets `{"error": ...}`.

Usage:
  scripts/darshan-reference.py                 # the committed fixtures, JSON beside each log
  scripts/darshan-reference.py DIR [OUT_DIR]   # every *.darshan under DIR (recursively);
                                               # JSON into OUT_DIR (default: beside each log)
"""

import json
import struct
import sys
from pathlib import Path

import darshan
from darshan.backend import cffi_backend as backend

GENERIC = ["POSIX", "MPI-IO", "STDIO"]


def f64_bits(x):
    """The IEEE-754 bit pattern of x as a signed 64-bit integer (exact in JSON)."""
    return struct.unpack("<q", struct.pack("<d", float(x)))[0]


def records(log, mod):
    out = []
    while True:
        rec = backend.log_get_record(log, mod, dtype="numpy")
        if rec is None:
            return out
        out.append(rec)


def generic(log, mod):
    out = []
    for rec in records(log, mod):
        out.append(
            {
                "id": int(rec["id"]),
                "rank": int(rec["rank"]),
                "counters": [int(v) for v in rec["counters"]],
                "fcounter_bits": [f64_bits(v) for v in rec["fcounters"]],
            }
        )
    return out


def lustre(log):
    out = []
    for rec in records(log, "LUSTRE"):
        out.append(
            {
                "id": int(rec["id"]),
                "rank": int(rec["rank"]),
                "components": [
                    {
                        "counters": [int(v) for v in c["counters"]],
                        "pool_name": c["pool_name"],
                        "ost_ids": [int(v) for v in c["ost_ids"]],
                    }
                    for c in rec["components"]
                ],
            }
        )
    return out


def dxt(log, mod):
    out = []
    for rec in records(log, mod):
        seg = lambda s: [
            int(s["offset"]),
            int(s["length"]),
            f64_bits(s["start_time"]),
            f64_bits(s["end_time"]),
        ]
        out.append(
            {
                "id": int(rec["id"]),
                "rank": int(rec["rank"]),
                "hostname": rec["hostname"],
                "write_segments": [seg(s) for s in rec["write_segments"]],
                "read_segments": [seg(s) for s in rec["read_segments"]],
            }
        )
    return out


def heatmap(log):
    out = []
    for rec in records(log, "HEATMAP"):
        out.append(
            {
                "id": int(rec["id"]),
                "rank": int(rec["rank"]),
                "bin_width_bits": f64_bits(rec["bin_width_seconds"]),
                "nbins": int(rec["nbins"]),
                "write_bins": [int(v) for v in rec["write_bins"]],
                "read_bins": [int(v) for v in rec["read_bins"]],
            }
        )
    return out


def reference(path):
    log = backend.log_open(str(path))
    try:
        job = backend.log_get_job(log)
        modules = backend.log_get_modules(log)
        out = {
            "log": path.name,
            "darshan_python_version": darshan.__version__,
            "version": job["log_ver"],
            "job": {
                "uid": int(job["uid"]),
                "start_time_sec": int(job["start_time_sec"]),
                "start_time_nsec": int(job["start_time_nsec"]),
                "end_time_sec": int(job["end_time_sec"]),
                "end_time_nsec": int(job["end_time_nsec"]),
                "nprocs": int(job["nprocs"]),
                "jobid": int(job["jobid"]),
                "metadata": job["metadata"],
            },
            "exe": backend.log_get_exe(log),
            "modules": {
                name: {"ver": int(m["ver"]), "len": int(m["len"]), "partial": bool(m["partial_flag"])}
                for name, m in modules.items()
            },
            "names": {str(k): v for k, v in backend.log_get_name_records(log).items()},
        }
        out["counter_names"] = {
            mod: [n for n in backend.counter_names(mod) if not n.endswith("NUM_INDICES")]
            for mod in GENERIC
        }
        out["fcounter_names"] = {
            mod: [n for n in backend.fcounter_names(mod) if not n.endswith("NUM_INDICES")]
            for mod in GENERIC
        }
        for mod in GENERIC:
            if mod in modules:
                out[mod] = generic(log, mod)
        if "LUSTRE" in modules:
            out["LUSTRE"] = lustre(log)
        if "DXT_POSIX" in modules:
            out["DXT_POSIX"] = dxt(log, "DXT_POSIX")
        if "HEATMAP" in modules:
            out["HEATMAP"] = heatmap(log)
        return out
    finally:
        backend.log_close(log)


def main():
    here = Path(__file__).resolve().parent.parent / "crates/pfsqos-darshan/tests/data"
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else here
    out_dir = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    logs = sorted(data.rglob("*.darshan")) if data.is_dir() else [data]
    if not logs:
        sys.exit(f"no *.darshan in {data}")
    for log in logs:
        try:
            ref = reference(log)
        except Exception as e:  # libdarshan-util refuses the log
            ref = {"log": log.name, "error": str(e)}
        name = log.stem + ".reference.json"
        target = (out_dir / name) if out_dir else log.with_name(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(ref, indent=1, sort_keys=True) + "\n")
        mods = ", ".join(f"{m} {len(ref[m])}" for m in GENERIC + ["LUSTRE", "DXT_POSIX", "HEATMAP"] if m in ref)
        print(f"{target}: {ref.get('version', ref.get('error'))}: {mods}")


if __name__ == "__main__":
    main()
