#!/usr/bin/env python3
"""Measures the servers' and the network's per-message costs on this machine, the defaults of
the simulator's `[[oss]]` `rpc_cpu_us`, `rpc_cpu_us_per_mib`, `sync_cpu_us` and `[network]`
`message_us` (docs/physics.md, "Server and network costs"):

* a live `pfsqos ossd` serves fio's 4 KiB random writes, then its 1 MiB sequential writes,
  through a `pfsqos mount`; its CPU time (/proc/PID/stat, user + system) over the RPCs it
  served is the CPU per RPC at each size, which gives a fixed part and a part per MiB;
* a synchronization message costs the fixed part (a request without bulk or device work);
* half the median round trip of 64-byte messages over the loopback is the cost of one
  message (there is no wire: all of it is the stack's).

    physics-server-costs.py --pfsqos BIN --work DIR [--runtime-s S] [--write]

With --write it regenerates crates/pfsqos-sim/src/server_costs_measured.rs,
profiles/measured/server-costs.json and the generated:server-costs section of
docs/physics.md. Needs root (FUSE), fio and fuse3.
"""

import argparse
import datetime
import importlib.util
import json
import os
import platform
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import generated  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
spec = importlib.util.spec_from_file_location(
    "physics_validate", os.path.join(ROOT, "scripts", "physics-validate.py"))
pv = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pv)

RUST = os.path.join(ROOT, "crates", "pfsqos-sim", "src", "server_costs_measured.rs")
JSON = os.path.join(ROOT, "profiles", "measured", "server-costs.json")
KIB = 1024


def cpu_s(pid):
    """User + system CPU seconds of process `pid` so far."""
    with open("/proc/%d/stat" % pid) as f:
        text = f.read()
    # The command name is in parentheses and may hold spaces: split after it.
    fields = text[text.rindex(")") + 2:].split()
    ticks = int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def measure_rpc_cpu(pfsqos, work, rw, bs, runtime_s):
    """CPU microseconds of the ossd per RPC of `bs` bytes under fio `rw`, the RPCs, the
    ossd's CPU seconds, and the client side's CPU microseconds per call (the mount's and
    fio's), which the simulator does not model."""
    cluster = pv.Cluster(pfsqos, work, 1, 1)
    try:
        ossd = cluster.children[0]
        # Spawned in order: the ossd, the mds, then the mount.
        mount = cluster.children[2]
        mount_before = cpu_s(mount.pid)
        d = os.path.join(cluster.mnts[0], "costs")
        os.makedirs(d)
        out = os.path.join(work, "fio.json")
        args = ["fio", "--directory=" + d, "--output=" + out, "--name=costs", "--rw=" + rw,
                "--bs=%d" % bs, "--size=256M", "--ioengine=psync", "--fallocate=none",
                "--output-format=json", "--time_based=1", "--runtime=%gs" % runtime_s,
                "--end_fsync=1"]
        before = cpu_s(ossd.pid)
        mount_before = cpu_s(mount.pid)
        subprocess.run(args, check=True, capture_output=True,
                       timeout=pv.STEP_TIMEOUT_S + runtime_s)
        after = cpu_s(ossd.pid)
        mount_after = cpu_s(mount.pid)
        with open(out) as f:
            text = f.read()
        data = json.loads(text[text.index("{"):])
        job = data["jobs"][0]
        written = job["write"]["io_bytes"]
        # fio's own CPU: its percentages of the job's run time.
        fio_cpu_s = (job["usr_cpu"] + job["sys_cpu"]) / 100.0 * job["job_runtime"] / 1e3
    finally:
        cluster.stop()
    # One RPC per call: 1 MiB calls are 1 MiB RPCs (brw_size), random 4 KiB calls are never
    # contiguous, so none are gathered together.
    rpcs = written // bs
    if rpcs < 100:
        raise SystemExit("%s %d: only %d RPCs served, too few to measure" % (rw, bs, rpcs))
    client_us = ((mount_after - mount_before) + fio_cpu_s) * 1e6 / rpcs
    return (after - before) * 1e6 / rpcs, rpcs, after - before, client_us


def replace(doc, tag, body):
    return generated.replace(doc, tag, body, where="docs/physics.md")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pfsqos", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--runtime-s", type=float, default=5.0)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    small_us, small_rpcs, small_cpu, small_client_us = measure_rpc_cpu(
        a.pfsqos, os.path.join(a.work, "small"), "randwrite", 4 * KIB, a.runtime_s)
    large_us, large_rpcs, large_cpu, large_client_us = measure_rpc_cpu(
        a.pfsqos, os.path.join(a.work, "large"), "write", 1024 * KIB, a.runtime_s)
    cores = os.cpu_count() or 1
    load = os.getloadavg()[0]
    # cpu(size) = fixed + per_mib * size_mib, through the two points.
    small_mib, large_mib = 4 / 1024, 1.0
    per_mib = max(0.0, (large_us - small_us) / (large_mib - small_mib))
    fixed = max(0.0, small_us - per_mib * small_mib)
    _, one_way_us = pv.measure_loopback()
    host = platform.node()
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    result = {
        "host": host, "kernel": platform.release(), "date": when,
        "runtime_s": a.runtime_s,
        "cores": cores, "load_average_1min": load,
        "rpc_4k": {"rpcs": small_rpcs, "cpu_s": small_cpu, "cpu_us_per_rpc": small_us,
                   "client_cpu_us_per_call": small_client_us},
        "rpc_1m": {"rpcs": large_rpcs, "cpu_s": large_cpu, "cpu_us_per_rpc": large_us,
                   "client_cpu_us_per_call": large_client_us},
        "rpc_cpu_us": fixed, "rpc_cpu_us_per_mib": per_mib, "sync_cpu_us": fixed,
        "message_us": one_way_us,
    }
    print(json.dumps(result, indent=1))
    if not a.write:
        return
    with open(JSON, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    with open(RUST, "w") as f:
        f.write("// Generated by scripts/physics-server-costs.py on `%s`, %s; do not edit.\n"
                % (host, when))
        f.write("/// Fixed CPU per RPC (us): a live ossd's per 4 KiB RPC less its data's part.\n")
        f.write("pub const RPC_CPU_US_DEFAULT: f64 = %.3f;\n" % fixed)
        f.write("/// CPU per MiB of an RPC's data (us): from 4 KiB to 1 MiB RPCs.\n")
        f.write("pub const RPC_CPU_US_PER_MIB_DEFAULT: f64 = %.3f;\n" % per_mib)
        f.write("/// CPU per synchronization message (us): the fixed part of an RPC's.\n")
        f.write("pub const SYNC_CPU_US_DEFAULT: f64 = %.3f;\n" % fixed)
        f.write("/// The sender's cost of one message (us): half a 64-byte loopback round trip.\n")
        f.write("pub const MESSAGE_US_DEFAULT: f64 = %.3f;\n" % one_way_us)
    doc_path = os.path.join(ROOT, "docs", "physics.md")
    with open(doc_path) as f:
        doc = f.read()
    body = "\n".join([
        "Measured by `scripts/physics-server-costs.py` on `%s` (Linux %s), %s, fio %gs per "
        "size, psync, through a `pfsqos mount` onto one `pfsqos ossd` (8 threads) on this "
        "machine's disk." % (host, platform.release(), when, a.runtime_s),
        "",
        "| measurement | RPCs | ossd CPU (s) | ossd CPU per RPC (us) | client CPU per call, "
        "mount + fio (us) | the %d cores' bound on calls, all CPU counted (MiB/s) |" % cores,
        "|---|---|---|---|---|---|",
        "| 4 KiB random writes | %d | %.3f | %.1f | %.1f | %.1f |" % (
            small_rpcs, small_cpu, small_us, small_client_us,
            cores * 1e6 / (small_us + small_client_us) * 4 / 1024),
        "| 1 MiB sequential writes | %d | %.3f | %.1f | %.1f | %.1f |" % (
            large_rpcs, large_cpu, large_us, large_client_us,
            cores * 1e6 / (large_us + large_client_us)),
        "",
        "The machine's one-minute load average was %.1f at the end." % load,
        "",
        "Defaults: `rpc_cpu_us` = %.1f, `rpc_cpu_us_per_mib` = %.1f, `sync_cpu_us` = %.1f, "
        "`message_us` = %.2f (half the median round trip of 64-byte messages on the "
        "loopback)." % (fixed, per_mib, fixed, one_way_us),
    ])
    with open(doc_path, "w") as f:
        f.write(replace(doc, "server-costs", body))


if __name__ == "__main__":
    sys.exit(main())
