#!/usr/bin/env python3
"""Runs the workload shapes of docs/physics.md's validation both ways and prints them side by
side: through the live runtime (real fio through a pfsqos FUSE mount onto this machine's
disk) and through the simulator with the disk's calibrated profile. Called by
scripts/validate-physics.sh, which builds the binaries and calibrates the disk first.

    physics-validate.py --pfsqos BIN --sim BIN --profile TOML --work DIR [--doc]

Every number printed comes from a run here: fio's JSON on the live side, the simulator's
`validate_sim` example on the other; the network's bandwidth and latency in the simulated
scenarios are measured on this machine's loopback first. With --doc the table replaces the
generated:validation section of docs/physics.md.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import generated  # noqa: E402
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DOC = os.path.join(ROOT, "docs", "physics.md")
MIB = 1 << 20
# Goals of the validation (docs/physics.md): measured against simulated.
THROUGHPUT_TOLERANCE = 0.10
SHARE_TOLERANCE_POINTS = 5.0
P99_TOLERANCE = 0.25
# The live cluster's settings, restated in each simulated scenario.
OSSD_THREADS = 8
BRW_SIZE = 1 << 20
MAX_RPCS_IN_FLIGHT = 8
# The mount's client cache: one dirty budget for the mount (Lustre's per-OSC and
# client-wide limits in one) and a read-ahead window per open file within a mount-wide
# budget of the same size.
MAX_DIRTY_MB = 64
MAX_READ_AHEAD_MB = 32
# Longest any child may take before the run is abandoned (a hung mount must not hang us).
STEP_TIMEOUT_S = 120


def job(jid, mount, procs, nodes=1, weight=None, bursty=False):
    return {"id": jid, "mount": mount, "procs": procs, "nodes": nodes,
            "weight": weight or nodes, "bursty": bursty}


def procs(rw, bs, numjobs=1, size="128M", subdir=None, startdelay_s=0.0, burst=None):
    """One fio job section (one process group): `burst` is a size each process writes once
    (fio without time_based), else the processes run for the whole window."""
    return {"rw": rw, "bs": bs, "numjobs": numjobs, "size": size, "subdir": subdir,
            "startdelay_s": startdelay_s, "burst": burst}


def shapes(runtime_s, ramp_s):
    ckpt_at = ramp_s + runtime_s / 4
    return [
        {"name": "1 sequential writer", "osses": 1, "mounts": 1,
         "jobs": [job("101", 0, procs("write", "1M"))]},
        {"name": "16 sequential writers", "osses": 1, "mounts": 1,
         "jobs": [job("101", 0, procs("write", "1M", numjobs=16, size="64M"))]},
        {"name": "4 KiB random writes", "osses": 1, "mounts": 1,
         "jobs": [job("101", 0, procs("randwrite", "4k", size="64M"))]},
        {"name": "mixed: a reader and a writer", "osses": 1, "mounts": 2,
         "jobs": [job("101", 0, procs("read", "1M")), job("202", 1, procs("write", "1M"))]},
        {"name": "two jobs sharing an OST", "osses": 1, "mounts": 2,
         "jobs": [job("101", 0, procs("write", "1M")), job("202", 1, procs("write", "1M"))]},
        {"name": "checkpoint burst against a streamer", "osses": 1, "mounts": 2,
         "jobs": [job("101", 0, procs("write", "1M")),
                  job("202", 1, procs("write", "1M", numjobs=4, size="64M",
                                      startdelay_s=ckpt_at, burst="64M"), bursty=True)]},
        {"name": "TBF: rules of 8 and 16 RPCs/s", "osses": 1, "mounts": 2,
         "lctl": ["ost.OSS.ost_io.nrs_policies=tbf jobid",
                  "ost.OSS.ost_io.nrs_tbf_rule=start job101 jobid={101} rate=8",
                  "ost.OSS.ost_io.nrs_tbf_rule=start job202 jobid={202} rate=16"],
         # Static BW gives each job capacity x its share of the nodes: 24 x 1/3 and 24 x 2/3.
         "sim_policy": "static", "capacity_rpcs_per_s": 24,
         "jobs": [job("101", 0, procs("write", "1M"), nodes=1),
                  job("202", 1, procs("write", "1M"), nodes=2)]},
        {"name": "DSFQ 4:1 over two ossds", "osses": 2, "mounts": 2,
         "lctl": ["ost.OSS.ost_io.nrs_policies=dsfq jobid",
                  "ost.OSS.ost_io.nrs_dsfq_threshold=0",
                  "ost.OSS.ost_io.nrs_dsfq_depth=2",
                  "ost.OSS.ost_io.nrs_dsfq_weight=start big jobid={101} weight=4",
                  "ost.OSS.ost_io.nrs_dsfq_weight=start small jobid={202} weight=1"],
         "sim_policy": "vpfs:threshold=0:depth=2",
         # The big job stripes over both OSTs; the small one writes on OST 1 only.
         "jobs": [job("101", 0, procs("write", "1M"), weight=4),
                  job("202", 1, procs("write", "1M", subdir="ost1"), weight=1)]},
    ]


# ----------------------------------------------------------------------------- loopback

def measure_loopback():
    """Bandwidth (MiB/s, one TCP stream of 1 MiB sends) and one-way latency (us, half the
    median round trip of 64-byte messages) of this machine's loopback."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    total = 512 * MIB

    def serve():
        c, _ = srv.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        got = 0
        buf = bytearray(MIB)
        while got < total:
            n = c.recv_into(buf)
            if n == 0:
                return
            got += n
        c.sendall(b"k")
        while True:
            m = c.recv(64)
            if not m:
                break
            c.sendall(m)
        c.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    block = memoryview(bytearray(MIB))
    t0 = time.perf_counter()
    for _ in range(total // MIB):
        s.sendall(block)
    s.recv(1)
    bw = total / MIB / (time.perf_counter() - t0)
    rtts = []
    msg = b"x" * 64
    for _ in range(2000):
        t0 = time.perf_counter()
        s.sendall(msg)
        got = 0
        while got < 64:
            got += len(s.recv(64 - got))
        rtts.append(time.perf_counter() - t0)
    s.close()
    t.join(timeout=5)
    srv.close()
    rtts.sort()
    return bw, rtts[len(rtts) // 2] / 2 * 1e6


# ----------------------------------------------------------------------------- live side

class Cluster:
    """ossds (one OST each), an mds and mounts, as the live tests start them."""

    def __init__(self, pfsqos, work, osses, mounts):
        self.pfsqos, self.work, self.children, self.mnts = pfsqos, work, [], []
        os.makedirs(work)
        self.key = os.path.join(work, "key")
        with open(self.key, "w") as f:
            f.write(os.urandom(24).hex() + "\n")
        # The servers' own key: a synchronization peer is a server role.
        self.server_key = os.path.join(work, "server.key")
        with open(self.server_key, "w") as f:
            f.write(os.urandom(24).hex() + "\n")
        if osses == 1:
            listen = ["127.0.0.1:0"]
        else:
            held = [socket.socket() for _ in range(osses)]
            for h in held:
                h.bind(("127.0.0.1", 0))
            listen = ["127.0.0.1:%d" % h.getsockname()[1] for h in held]
            for h in held:
                h.close()
        self.oss_addrs = []
        for i, addr in enumerate(listen):
            cmd = [pfsqos, "ossd", "--listen", addr, "--ost", os.path.join(work, "ost%d" % i),
                   "--key-file", self.key, "--server-key-file", self.server_key,
                   "--threads", str(OSSD_THREADS)]
            if osses > 1:
                for k, peer in enumerate(listen):
                    if k != i:
                        cmd += ["--peer", peer]
                cmd += ["--sync-instance-base", str(i)]
            self.oss_addrs.append(self.spawn(cmd, "ossd%d" % i, "ossd listening on "))
        cmd = [pfsqos, "mds", "--listen", "127.0.0.1:0", "--db", os.path.join(work, "mds.db"),
               "--key-file", self.key, "--server-key-file", self.server_key]
        for a in self.oss_addrs:
            cmd += ["--oss", a + ":1"]
        if osses > 1:
            cmd += ["--stripe-count", "-1"]
        self.mds = self.spawn(cmd, "mds", "mds listening on ")
        for m in range(mounts):
            mnt = os.path.join(work, "mnt%d" % m)
            os.makedirs(mnt)
            self.spawn([pfsqos, "mount", mnt, "--mds", self.mds, "--jobid-var", "SLURM_JOB_ID",
                        "--brw-size-bytes", str(BRW_SIZE), "--max-rpcs-in-flight",
                        str(MAX_RPCS_IN_FLIGHT), "--max-dirty-mb", str(MAX_DIRTY_MB),
                        "--max-read-ahead-mb", str(MAX_READ_AHEAD_MB),
                        "--key-file", self.key], "mount%d" % m, None)
            deadline = time.monotonic() + 60
            while subprocess.run(["mountpoint", "-q", mnt]).returncode != 0:
                if time.monotonic() > deadline:
                    raise SystemExit("mount %s did not come up (see %s)" % (mnt, work))
                time.sleep(0.05)
            self.mnts.append(mnt)

    def spawn(self, cmd, name, ready_prefix):
        out = open(os.path.join(self.work, name + ".out"), "w+")
        err = open(os.path.join(self.work, name + ".err"), "w")
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        self.children.append(p)
        if ready_prefix is None:
            return None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            out.seek(0)
            line = out.readline()
            if line.startswith(ready_prefix) and line.endswith("\n"):
                return line[len(ready_prefix):].strip()
            if p.poll() is not None:
                break
            time.sleep(0.05)
        raise SystemExit("%s did not start (see %s/%s.err)" % (name, self.work, name))

    def lctl(self, param):
        for a in self.oss_addrs:
            r = subprocess.run([self.pfsqos, "lctl", "--server", a, "--key-file", self.server_key,
                                "set_param", param], capture_output=True, text=True,
                               timeout=STEP_TIMEOUT_S)
            if r.returncode != 0:
                raise SystemExit("lctl set_param %s: %s" % (param, r.stderr.strip()))

    def stop(self):
        for mnt in self.mnts:
            subprocess.run(["umount", "-l", mnt], capture_output=True)
        for p in reversed(self.children):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.children:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def fio_args(j, pr, runtime_s, ramp_s, create_only=False):
    args = ["--name=job%s" % j["id"], "--rw=%s" % pr["rw"], "--bs=%s" % pr["bs"],
            "--numjobs=%d" % pr["numjobs"], "--size=%s" % pr["size"], "--ioengine=psync",
            "--fallocate=none", "--group_reporting=1", "--output-format=json",
            "--percentile_list=99"]
    if create_only:
        return args + ["--create_only=1"]
    if pr["burst"] is not None:
        args += ["--startdelay=%gs" % pr["startdelay_s"], "--io_size=%s" % pr["burst"]]
    else:
        args += ["--time_based=1", "--ramp_time=%gs" % ramp_s, "--runtime=%gs" % runtime_s]
    return args


def run_live(pfsqos, work, shape, runtime_s, ramp_s):
    cluster = Cluster(pfsqos, work, shape["osses"], shape["mounts"])
    try:
        for param in shape.get("lctl", []):
            cluster.lctl(param)
        dirs = {}
        for j in shape["jobs"]:
            pr = j["procs"]
            d = os.path.join(cluster.mnts[j["mount"]], "job%s" % j["id"])
            os.makedirs(d)
            if pr["subdir"] == "ost1":
                r = subprocess.run([pfsqos, "setstripe", "-c", "1", "-i", "1", d],
                                   capture_output=True, text=True, timeout=STEP_TIMEOUT_S)
                if r.returncode != 0:
                    raise SystemExit("setstripe: " + r.stderr.strip())
            dirs[j["id"]] = d
            if pr["rw"] in ("read", "randread"):
                # Lay out the files to read before anything is timed.
                subprocess.run(["fio", "--directory=" + d] + fio_args(j, pr, 0, 0, True),
                               check=True, capture_output=True, timeout=STEP_TIMEOUT_S,
                               env=dict(os.environ, SLURM_JOB_ID=j["id"]))
        running = []
        for j in shape["jobs"]:
            out = os.path.join(work, "fio.%s.json" % j["id"])
            p = subprocess.Popen(["fio", "--directory=" + dirs[j["id"]], "--output=" + out]
                                 + fio_args(j, j["procs"], runtime_s, ramp_s),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 env=dict(os.environ, SLURM_JOB_ID=j["id"]))
            running.append((j, p, out))
        result = {}
        for j, p, out in running:
            _, err = p.communicate(timeout=STEP_TIMEOUT_S + runtime_s + ramp_s)
            if p.returncode != 0:
                raise SystemExit("fio for job %s failed: %s" % (j["id"], err.decode()[-2000:]))
            with open(out) as f:
                text = f.read()
            # fio may print notes before its JSON.
            data = json.loads(text[text.index("{"):])
            r = data["jobs"][0]
            d = r["read"] if j["procs"]["rw"] in ("read", "randread") else r["write"]
            pct = d["clat_ns"].get("percentile", {})
            p99 = next((v for k, v in pct.items() if abs(float(k) - 99.0) < 1e-9), None)
            result[j["id"]] = {"bytes": d["io_bytes"], "mib_s": d["bw_bytes"] / MIB,
                               "p99_us": None if p99 is None else p99 / 1e3,
                               "runtime_s": d["runtime"] / 1e3}
        return result
    finally:
        cluster.stop()


# ----------------------------------------------------------------------------- sim side

def sim_size(pr):
    """A burst moves its size once. fio's time-based jobs wrap around their files for the
    whole window; the simulator's processes stop after `size`, so they get more than the
    window can move (on the device a wrapped sequential stream is still sequential, and a
    random request is random whatever the span)."""
    if pr["burst"] is not None:
        return pr["burst"]
    return "1T"


def scenario_toml(shape, profile, runtime_s, ramp_s, link_mib_s, latency_us):
    osses = shape["osses"]
    lines = ['name = "validate"', "",
             "[simulation]", "duration_s = %g" % (ramp_s + runtime_s + 5.0), "bin_ms = 100",
             "seed = 1", "",
             "[cluster]", "clients = %d" % shape["mounts"], 'brw_size = "1M"',
             "max_rpcs_in_flight = %d" % MAX_RPCS_IN_FLIGHT,
             "stripe_count = %d" % osses, 'stripe_size = "1M"', "",
             "[client]", "max_dirty_mb = %d" % MAX_DIRTY_MB,
             "max_dirty_client_mb = %d" % MAX_DIRTY_MB,
             "max_read_ahead_mb = %d" % MAX_READ_AHEAD_MB,
             "max_read_ahead_per_file_mb = %d" % MAX_READ_AHEAD_MB, "",
             "[network]", "client_link_mib_s = %.1f" % link_mib_s,
             "server_link_mib_s = %.1f" % link_mib_s,
             # On the loopback there is no wire: a message's one-way time is all the
             # stack's cost per message.
             "latency_us = 0.0", "message_us = %.2f" % latency_us, "",
             "[[device]]", 'name = "disk"', "profile = %s" % json.dumps(os.path.abspath(profile)),
             ""]
    for i in range(osses):
        lines += ["[[oss]]", 'name = "oss%d"' % i, "osts = 1", 'device = "disk"',
                  "io_threads = %d" % OSSD_THREADS, "cpts = 1"]
        if "capacity_rpcs_per_s" in shape:
            lines.append("capacity_rpcs_per_s = %d" % shape["capacity_rpcs_per_s"])
        lines.append("")
    for j in shape["jobs"]:
        pr = j["procs"]
        lines += ["[[job]]", 'id = "%s"' % j["id"], "nodes = %d" % j["nodes"],
                  "weight = %d" % j["weight"], "clients = [%d]" % j["mount"], "",
                  "[[job.processes]]", 'rw = "%s"' % pr["rw"], 'bs = "%s"' % pr["bs"],
                  'size = "%s"' % sim_size(pr),
                  "numjobs = %d" % pr["numjobs"], "iodepth = 1"]
        if pr["subdir"] == "ost1":
            lines += ["stripe_count = 1", "stripe_offset = 1"]
        if pr["burst"] is not None:
            lines += ["[job.processes.shape]", 'kind = "bursts"',
                      'bursts = [{ at_s = %g, size = "%s" }]' % (pr["startdelay_s"], pr["burst"])]
        else:
            lines += ["[job.processes.shape]", 'kind = "continuous"',
                      "stop_s = %g" % (ramp_s + runtime_s)]
        lines.append("")
    lines += ["[policy]", 'default = "%s"' % shape.get("sim_policy", "nobw"), ""]
    return "\n".join(lines)


def run_sim(sim, path, ramp_s, runtime_s):
    r = subprocess.run([sim, "%g" % ramp_s, "%g" % (ramp_s + runtime_s), path],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit("validate_sim %s: %s" % (path, r.stderr.strip()))
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return {j["job"]: j for j in out["jobs"]}, out["events"]


# ----------------------------------------------------------------------------- comparison

def verdict(ok):
    return "within" if ok else "**missed**"


def compare(shape, live, sim, runtime_s):
    ids = [j["id"] for j in shape["jobs"]]
    bursty = {j["id"] for j in shape["jobs"] if j["bursty"]}
    # Aggregate: every job's bytes over the window (a burst lies inside it).
    live_total = sum(live[i]["bytes"] for i in ids)
    sim_total = sum(sim[i]["bytes"] for i in ids)
    live_agg, sim_agg = live_total / MIB / runtime_s, sim_total / MIB / runtime_s
    rows = []
    tput_ok = abs(sim_agg / live_agg - 1) <= THROUGHPUT_TOLERANCE if live_agg > 0 else False
    shares = []
    share_ok = True
    for i in ids:
        ls = 100.0 * live[i]["bytes"] / live_total if live_total else 0.0
        ss = 100.0 * sim[i]["bytes"] / sim_total if sim_total else 0.0
        shares.append((i, ls, ss))
        share_ok &= abs(ls - ss) <= SHARE_TOLERANCE_POINTS
    p99 = []
    p99_ok = True
    for i in ids:
        lp, sp = live[i]["p99_us"], sim[i]["p99_us"]
        ok = lp is not None and sp is not None and abs(sp / lp - 1) <= P99_TOLERANCE
        p99.append((i, lp, sp))
        p99_ok &= ok
    rows = {"aggregate": (live_agg, sim_agg, tput_ok), "shares": (shares, share_ok),
            "p99": (p99, p99_ok), "bursty": sorted(bursty)}
    return rows


def fmt_num(x, digits=1):
    return "n/a" if x is None else ("%.*f" % (digits, x))


def table(results):
    out = ["| shape | aggregate MiB/s, live / sim | | shares %, live / sim | | "
           "p99 latency us, live / sim | |",
           "|---|---|---|---|---|---|---|"]
    for name, c in results:
        la, sa, tok = c["aggregate"]
        shares, sok = c["shares"]
        p99, pok = c["p99"]
        share_text = "; ".join("%s: %.1f / %.1f" % (i, l, s) for i, l, s in shares)
        p99_text = "; ".join("%s: %s / %s" % (i, fmt_num(l), fmt_num(s)) for i, l, s in p99)
        out.append("| %s | %.1f / %.1f | %s | %s | %s | %s | %s |" % (
            name, la, sa, verdict(tok), share_text,
            verdict(sok) if len(shares) > 1 else "(one job)", p99_text, verdict(pok)))
    return "\n".join(out)


def replace(doc, tag, body):
    return generated.replace(doc, tag, body, where="docs/physics.md")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pfsqos", required=True)
    ap.add_argument("--sim", required=True, help="the validate_sim example binary")
    ap.add_argument("--profile", required=True)
    ap.add_argument("--work", required=True, help="a directory on the calibrated disk")
    ap.add_argument("--runtime-s", type=float, default=8.0)
    ap.add_argument("--ramp-s", type=float, default=2.0)
    ap.add_argument("--host-facts")
    ap.add_argument("--json-out")
    ap.add_argument("--doc", action="store_true")
    a = ap.parse_args()
    if shutil.which("fio") is None:
        raise SystemExit("fio is missing (scripts/setup.sh installs it)")
    started = time.monotonic()
    load_before = os.getloadavg()[0]
    link_mib_s, latency_us = measure_loopback()
    print("loopback: %.0f MiB/s one stream, %.1f us one way" % (link_mib_s, latency_us),
          file=sys.stderr)
    results, raw = [], []
    os.makedirs(a.work, exist_ok=True)
    for k, shape in enumerate(shapes(a.runtime_s, a.ramp_s)):
        work = os.path.join(a.work, "shape%d" % k)
        shutil.rmtree(work, ignore_errors=True)
        print("[%d/8] %s: live" % (k + 1, shape["name"]), file=sys.stderr)
        live = run_live(a.pfsqos, work, shape, a.runtime_s, a.ramp_s)
        path = os.path.join(work, "scenario.toml")
        with open(path, "w") as f:
            f.write(scenario_toml(shape, a.profile, a.runtime_s, a.ramp_s, link_mib_s,
                                  latency_us))
        print("[%d/8] %s: simulated" % (k + 1, shape["name"]), file=sys.stderr)
        sim, events = run_sim(a.sim, path, a.ramp_s, a.runtime_s)
        c = compare(shape, live, sim, a.runtime_s)
        results.append((shape["name"], c))
        raw.append({"shape": shape["name"], "live": live, "sim": sim, "sim_events": events})
        # The OSTs' objects are not needed any more; keep the logs.
        for d in os.listdir(work):
            if d.startswith("ost"):
                shutil.rmtree(os.path.join(work, d), ignore_errors=True)
    wall_s = time.monotonic() - started
    load_after = os.getloadavg()[0]
    text = table(results)
    print(text)
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"loopback_mib_s": link_mib_s, "loopback_latency_us": latency_us,
                       "runtime_s": a.runtime_s, "ramp_s": a.ramp_s, "wall_s": wall_s,
                       "load_average_1min": [load_before, load_after],
                       "shapes": raw}, f, indent=1)
    if a.doc:
        facts = []
        if a.host_facts:
            with open(a.host_facts) as f:
                facts = ["* " + l.strip() for l in f if ": " in l]
        body = "\n".join(
            ["Run by `scripts/validate-physics.sh` on %s UTC (%.0f s wall time), fio %ds per "
             "shape after %ds of ramp, psync, 1 MiB blocks unless named; the simulator with "
             "`profiles/measured/this-machine.toml` and this machine's loopback as the network "
             "(%.0f MiB/s one TCP stream, %.1f us one way, measured by the script). The "
             "machine's one-minute load average was %.1f before and %.1f after (the live "
             "runtime shares its cores with whatever else runs). The host:"
             % (time.strftime("%Y-%m-%d %H:%M", time.gmtime()), wall_s, a.runtime_s, a.ramp_s,
                link_mib_s, latency_us, load_before, load_after), ""] + facts + ["", text])
        with open(DOC) as f:
            doc = f.read()
        with open(DOC, "w") as f:
            f.write(replace(doc, "validation", body))
        print("updated docs/physics.md", file=sys.stderr)


if __name__ == "__main__":
    main()
