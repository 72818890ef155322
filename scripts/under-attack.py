#!/usr/bin/env python3
"""Probes live pfsqos daemons as an attacker on the loopback range would, and prints what it
measured as Markdown table rows (`--rows`: scripts/under-attack.sh adds them to docs/live.md's
table).

Each probe starts its own daemons in a scratch directory, with the binary $PFSQOS:

* handshake flood: idle unauthenticated sockets from many loopback addresses (127.0.1.x),
  renewed as the servers close them, held against the ossd and the MDS while `pfsqos lctl`
  reads a parameter 20 times and, as root with /dev/fuse, 3 mounts start;
* refused-connection logging: one peer opening connections and sending garbage for 8 s; the
  ossd's log bytes are counted;

Nothing here is a test: the figures are what this machine gave on this run.
"""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

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

    def __init__(self, ossd_args=()):
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


def main():
    started = time.monotonic()
    rows_only = "--rows" in sys.argv[1:]
    for probe in (probe_handshake_flood, probe_refused_logging):
        note(f"under-attack: {probe.__name__}")
        probe()
    if rows_only:
        print("\n".join(LINES))
        return
    print("| probe | measured |")
    print("|---|---|")
    for line in LINES:
        print(line)
    print()
    print(f"Run on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{os.cpu_count()} cores, in {time.monotonic() - started:.0f} s.")


if __name__ == "__main__":
    main()
