#!/usr/bin/env python3
"""Probes a live pfsqos cluster as an attacker on the loopback range would, and prints what it
measured as a Markdown table (scripts/under-attack.sh writes it into docs/live.md).

Each probe starts its own daemons in a scratch directory, with the binary $PFSQOS:

* handshake flood: idle unauthenticated sockets from many loopback addresses (127.0.1.x),
  renewed as the servers close them, held against the ossd and the MDS while `pfsqos lctl`
  reads a parameter 20 times and, as root with /dev/fuse, 3 mounts start;
* refused-connection logging: one peer opening connections and sending garbage for 8 s; the
  ossd's log bytes are counted;
* metrics under trickling sockets: 40 sockets that send a request one byte a second to the
  ossd's metrics endpoint while 16 scrapes are made;
* a job whose id cannot be a TBF rule (`*`) against an ordinary job under AdapTBF on a 32 MB/s
  OST, as root with /dev/fuse: the bytes each moved in 8 s, beside two ordinary ids.

Nothing here is a test: the figures are what this machine gave on this run.
"""

import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

PFSQOS = os.environ.get("PFSQOS", "pfsqos")
LINES = []


def note(line):
    print(line, file=sys.stderr, flush=True)


def first_line(path, timeout_s=60.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            with open(path) as f:
                line = f.readline().strip()
            if line:
                return line
        time.sleep(0.1)
    raise RuntimeError(f"no output in {path}")


class Cluster:
    """An ossd (one OST) and an MDS on loopback, each with its own log."""

    def __init__(self, ossd_args=(), metrics=False):
        self.dir = tempfile.mkdtemp(prefix="pfsqos-attack.")
        self.procs = []
        self.mounts = []
        key = os.path.join(self.dir, "key")
        with open(key, "w") as f:
            f.write(os.urandom(24).hex() + "\n")
        self.key = key
        os.makedirs(os.path.join(self.dir, "ost0"))
        args = [PFSQOS, "ossd", "--listen", "127.0.0.1:0", "--ost",
                os.path.join(self.dir, "ost0"), "--key-file", key, *ossd_args]
        if metrics:
            self.metrics = free_port()
            args += ["--metrics-listen", f"127.0.0.1:{self.metrics}"]
        self.oss = self.start("ossd", args).split()[-1]
        self.mds = self.start("mds", [
            PFSQOS, "mds", "--listen", "127.0.0.1:0", "--db", os.path.join(self.dir, "mds.db"),
            "--key-file", key, "--oss", f"{self.oss}:1"]).split()[-1]

    def start(self, name, args):
        out = os.path.join(self.dir, f"{name}.out")
        err = open(os.path.join(self.dir, f"{name}.err"), "w")
        p = subprocess.Popen(args, stdout=open(out, "w"), stderr=err)
        self.procs.append(p)
        return first_line(out)

    def log_bytes(self, name):
        return os.path.getsize(os.path.join(self.dir, f"{name}.err"))

    def lctl(self, *args, timeout_s=10):
        return subprocess.run([PFSQOS, "lctl", "--server", self.oss, "--key-file", self.key, *args],
                              capture_output=True, text=True, timeout=timeout_s)

    def mount(self, name, extra=()):
        mnt = os.path.join(self.dir, name)
        os.makedirs(mnt)
        out = os.path.join(self.dir, f"{name}.out")
        p = subprocess.Popen([PFSQOS, "mount", mnt, "--mds", self.mds, "--key-file", self.key,
                              *extra], stdout=open(out, "w"),
                             stderr=open(os.path.join(self.dir, f"{name}.err"), "w"))
        self.procs.append(p)
        self.mounts.append(mnt)
        return mnt, out, p

    def close(self):
        for m in self.mounts:
            subprocess.run(["umount", "-l", m], capture_output=True)
        for p in reversed(self.procs):
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def addr(text):
    host, port = text.rsplit(":", 1)
    return host, int(port)


class Flood:
    """`per_source` idle sockets from each of `sources` loopback addresses to `target`, each
    reopened when the server closes it, until stopped."""

    def __init__(self, target, sources, per_source):
        self.target = addr(target)
        self.stop = threading.Event()
        self.opened = 0
        self.threads = [threading.Thread(target=self.hold, args=(f"127.0.1.{i + 1}", per_source),
                                         daemon=True) for i in range(sources)]
        for t in self.threads:
            t.start()

    def hold(self, source, n):
        socks = [None] * n
        while not self.stop.is_set():
            for i in range(n):
                s = socks[i]
                alive = False
                if s is not None:
                    try:
                        s.setblocking(False)
                        alive = s.recv(1, socket.MSG_PEEK) != b""
                    except BlockingIOError:
                        alive = True
                    except OSError:
                        alive = False
                if not alive:
                    if s is not None:
                        s.close()
                    try:
                        s = socket.socket()
                        s.bind((source, 0))
                        s.settimeout(2)
                        s.connect(self.target)
                        self.opened += 1
                    except OSError:
                        s = None
                    socks[i] = s
            self.stop.wait(0.05)
        for s in socks:
            if s is not None:
                s.close()

    def close(self):
        self.stop.set()
        for t in self.threads:
            t.join()


def fuse_ok():
    return os.geteuid() == 0 and os.path.exists("/dev/fuse") and shutil.which("fusermount3")


def probe_handshake_flood():
    c = Cluster()
    try:
        floods = [Flood(c.oss, 20, 15), Flood(c.mds, 20, 15)]
        time.sleep(2)  # let the floods fill every slot they can
        ok = 0
        for _ in range(20):
            try:
                r = c.lctl("get_param", "-n", "ost.OSS.ost_io.nrs_policies")
                ok += r.returncode == 0
            except subprocess.TimeoutExpired:
                pass
        LINES.append(f"| `lctl get_param` while 300 idle sockets from 20 addresses are held "
                     f"against the ossd and 300 against the MDS | {ok} in 20 |")
        if fuse_ok():
            up = 0
            for i in range(3):
                mnt, out, p = c.mount(f"mnt{i}", ["--recovery-s", "20"])
                try:
                    up += "ready" in first_line(out, 30)
                except RuntimeError:
                    pass
            LINES.append(f"| new mounts while the same floods are held | {up} in 3 |")
        else:
            LINES.append("| new mounts while the same floods are held | not measured: needs root, "
                         "/dev/fuse and fusermount3 |")
        for f in floods:
            f.close()
    finally:
        c.close()


def probe_refused_logging():
    c = Cluster()
    try:
        before = c.log_bytes("ossd")
        deadline = time.monotonic() + 8
        tries = 0
        while time.monotonic() < deadline:
            try:
                s = socket.create_connection(addr(c.oss), timeout=1)
                s.sendall(b"GET / HTTP/1.0\r\n\r\n" * 4)
                s.close()
                tries += 1
            except OSError:
                pass
        grew = c.log_bytes("ossd") - before
        LINES.append(f"| ossd log written while one peer sent garbage on {tries} connections "
                     f"for 8 s | {grew} bytes |")
    finally:
        c.close()


def probe_metrics_trickle():
    c = Cluster(metrics=True)
    try:
        stop = threading.Event()

        def trickle():
            while not stop.is_set():
                try:
                    s = socket.create_connection(("127.0.0.1", c.metrics), timeout=2)
                    for b in b"GET /metrics HTTP/1.1\r\nHost: x\r\n":
                        if stop.wait(1.0):
                            break
                        s.send(bytes([b]))
                    s.close()
                except OSError:
                    stop.wait(0.2)

        ts = [threading.Thread(target=trickle, daemon=True) for _ in range(40)]
        for t in ts:
            t.start()
        time.sleep(2)
        ok = 0
        for _ in range(16):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{c.metrics}/metrics",
                                            timeout=5) as r:
                    ok += r.status == 200 and len(r.read()) > 0
            except OSError:
                pass
            time.sleep(0.25)
        stop.set()
        for t in ts:
            t.join()
        LINES.append(f"| metrics scrapes answered while 40 sockets trickle a request a byte a "
                     f"second | {ok} in 16 |")
    finally:
        c.close()


def job_bytes(c):
    r = c.lctl("get_param", "-n", "obdfilter.*.job_stats")
    jobs = {}
    job = None
    for line in r.stdout.splitlines():
        line = line.strip()
        if line.startswith("- job_id:"):
            # job_stats escapes what is not printable or is TBF syntax (`*` is `\x2A`).
            job = re.sub(r"\\x([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)),
                         line.split(":", 1)[1].strip().strip('"'))
        elif line.startswith("write_bytes:") and job is not None:
            inner = line.split("{", 1)[1].rstrip("}").replace(" ", "")
            fields = dict(kv.split(":", 1) for kv in inner.split(",") if ":" in kv)
            jobs[job] = jobs.get(job, 0) + int(fields.get("sum", "0"))
    return jobs


def probe_unnamable_job():
    if not fuse_ok() or not shutil.which("dd"):
        LINES.append("| bytes of a job with id `*` against an ordinary job under AdapTBF | not "
                     "measured: needs root, /dev/fuse and fusermount3 |")
        return
    rows = []
    for ids in (("*", "victim"), ("alpha", "victim")):
        c = Cluster(ossd_args=["--policy", "adaptbf", "--ceiling-bytes-per-s", "32000000",
                               "--capacity-rpcs-per-s", "30", "--brw-size-bytes", "1048576"])
        try:
            mnt, out, _ = c.mount("mnt", ["--brw-size-bytes", "1048576",
                                          "--jobid-var", "SLURM_JOB_ID"])
            first_line(out, 30)
            dds = []
            for i, job in enumerate(ids):
                env = dict(os.environ, SLURM_JOB_ID=job)
                dds.append(subprocess.Popen(
                    ["dd", "if=/dev/zero", f"of={mnt}/f{i}", "bs=1M", "count=100000"],
                    env=env, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL))
            time.sleep(2)
            start = job_bytes(c)
            time.sleep(8)
            end = job_bytes(c)
            for d in dds:
                d.kill()
                d.wait()
            moved = [(end.get(j, 0) - start.get(j, 0)) / 8e6 for j in ids]
            rows.append(f"`{ids[0]}` {moved[0]:.1f} MB/s, `{ids[1]}` {moved[1]:.1f} MB/s")
        finally:
            c.close()
    LINES.append(f"| two jobs writing to a 32 MB/s OST under AdapTBF: a job with id `*` against "
                 f"`victim`; two ordinary ids | {rows[0]}; {rows[1]} |")


def main():
    random.seed(1)
    started = time.monotonic()
    only = sys.argv[1:]
    for probe in (probe_handshake_flood, probe_refused_logging, probe_metrics_trickle,
                  probe_unnamable_job):
        if only and probe.__name__ not in only:
            continue
        note(f"under-attack: {probe.__name__}")
        probe()
    print("| probe | measured |")
    print("|---|---|")
    for line in LINES:
        print(line)
    print()
    print(f"Run on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{os.cpu_count()} cores, in {time.monotonic() - started:.0f} s.")


if __name__ == "__main__":
    main()
