#!/usr/bin/env python3
"""Reference numbers for the Darshan reader's tests (crates/pfsqos-darshan).

For every *.darshan log in crates/pfsqos-darshan/tests/data/, reads the log with PyDarshan
(`pip install darshan`; the numbers committed were made with darshan 3.5.0) and writes
<log>.reference.json beside it: the format version, the job record, the module versions, and
for every POSIX record (one file on one rank, or rank -1 for a shared file) its record id,
rank, file name, all integer counters and the bit patterns of all floating-point counters
(so the comparison is exact), per-file byte totals over ranks, and every LUSTRE record's
stripe size, count and OSTs. The Rust tests compare these exactly and need no Python.

Usage: scripts/darshan-reference.py [DATA_DIR]
"""

import json
import struct
import sys
from pathlib import Path

import darshan

POSIX_F_USED = [
    "POSIX_F_READ_START_TIMESTAMP",
    "POSIX_F_WRITE_START_TIMESTAMP",
    "POSIX_F_READ_END_TIMESTAMP",
    "POSIX_F_WRITE_END_TIMESTAMP",
]


def f64_bits(x):
    """The IEEE-754 bit pattern of x as a signed 64-bit integer (exact in JSON)."""
    return struct.unpack("<q", struct.pack("<d", float(x)))[0]


def reference(path):
    report = darshan.DarshanReport(str(path), read_all=True)
    job = report.metadata["job"]
    out = {
        "log": path.name,
        "darshan_python_version": darshan.__version__,
        "version": job["log_ver"],
        "job": {
            "uid": int(job["uid"]),
            "start_time_sec": int(job["start_time_sec"]),
            "end_time_sec": int(job["end_time_sec"]),
            "nprocs": int(job["nprocs"]),
            "jobid": int(job["jobid"]),
        },
        "exe": report.metadata.get("exe", ""),
        "modules": {
            name: {"ver": int(m["ver"]), "len": int(m["len"])}
            for name, m in report.modules.items()
        },
        "name_records": len(report.name_records),
    }
    posix = []
    files = {}
    if "POSIX" in report.records:
        recs = report.records["POSIX"]
        counter_names = None
        fcounter_names = None
        df = recs.to_df()
        counter_names = [c for c in df["counters"].columns if c not in ("id", "rank")]
        fcounter_names = [c for c in df["fcounters"].columns if c not in ("id", "rank")]
        out["posix_counters"] = counter_names
        out["posix_fcounters"] = fcounter_names
        for i in range(len(recs)):
            rec = recs[i]
            rid = int(rec["id"])
            name = report.name_records.get(rid, "")
            counters = [int(v) for v in rec["counters"]]
            fcounters = [f64_bits(v) for v in rec["fcounters"]]
            posix.append(
                {
                    "id": rid,
                    "rank": int(rec["rank"]),
                    "name": name,
                    "counters": counters,
                    "fcounter_bits": fcounters,
                }
            )
            read = counters[counter_names.index("POSIX_BYTES_READ")]
            written = counters[counter_names.index("POSIX_BYTES_WRITTEN")]
            f = files.setdefault(str(rid), {"name": name, "bytes_read": 0, "bytes_written": 0, "records": 0})
            f["bytes_read"] += read
            f["bytes_written"] += written
            f["records"] += 1
    out["posix"] = posix
    out["files"] = files
    lustre = []
    if "LUSTRE" in report.records:
        recs = report.records["LUSTRE"]
        for i in range(len(recs)):
            rec = recs[i]
            comps = rec["components"]
            assert len(comps) == 1, "version 1 Lustre records have one component"
            c = [int(v) for v in comps[0]["counters"]]
            lustre.append(
                {
                    "id": int(rec["id"]),
                    "rank": int(rec["rank"]),
                    "stripe_size": c[0],
                    "stripe_count": c[1],
                    "ost_ids": [int(v) for v in comps[0]["ost_ids"]],
                }
            )
    out["lustre"] = lustre
    return out


def main():
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "crates/pfsqos-darshan/tests/data"
    logs = sorted(data.glob("*.darshan"))
    if not logs:
        sys.exit(f"no *.darshan in {data}")
    for log in logs:
        ref = reference(log)
        target = log.with_name(log.stem + ".reference.json")
        target.write_text(json.dumps(ref, indent=1, sort_keys=True) + "\n")
        print(f"{target}: {len(ref['posix'])} POSIX records, {len(ref['lustre'])} LUSTRE records")


if __name__ == "__main__":
    main()
