#!/usr/bin/env python3
"""Probes live pfsqos daemons as an attacker on the loopback range would, and prints what it
measured as Markdown table rows (`--rows`: scripts/under-attack.sh adds them to docs/live.md's
table).

Each probe starts its own daemons in a scratch directory, with the binary $PFSQOS:

* handshake flood: idle unauthenticated sockets from many loopback addresses (127.0.1.x),
  renewed as the servers close them, held against the ossd and the MDS while `pfsqos lctl`
  reads a parameter 20 times and, as root with /dev/fuse, 3 mounts start;
* refused-connection logging: one peer opening connections and sending garbage for 8 s; the
  ossd's and the coordinator's log bytes are counted;
* the coordinator under a handshake flood held across its restart: two agents (each on an
  ossd of its own, through the emulated lctl) and 256 idle sockets from 32 addresses held
  while the coordinator is stopped and started again; whether either agent went to its safe
  state (which removes every rule) and when the restarted coordinator took their reports;
* stalled reads: 64 connections from 16 addresses each asking for a 64 MiB read and never
  reading their socket (`stalled_reads`, an example of pfsqos-ossd, $STALLED_READS); how long
  another client's 1 MiB writes take before and while they are held;
* unlinked files' objects: as root with /dev/fuse, 20,000 files created and unlinked through
  a mount; the object files left on the OST once the MDS's destroyer has run (and how long it
  took to remove them);

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
        # The servers' own key: `lctl` (an administrator's) proves it, never the cluster key.
        server_key = os.path.join(self.dir, "server.key")
        with open(server_key, "w") as f:
            f.write(os.urandom(24).hex() + "\n")
        self.server_key = server_key
        os.makedirs(os.path.join(self.dir, "ost0"))
        args = [PFSQOS, "ossd", "--listen", "127.0.0.1:0", "--ost",
                os.path.join(self.dir, "ost0"), "--key-file", key,
                "--server-key-file", server_key, *ossd_args]
        self.oss = self.start("ossd", args).split()[-1]
        self.mds = self.start("mds", [
            PFSQOS, "mds", "--listen", "127.0.0.1:0", "--db", os.path.join(self.dir, "mds.db"),
            "--key-file", key, "--server-key-file", server_key,
            "--oss", f"{self.oss}:1"]).split()[-1]

    def start(self, name, args):
        out = os.path.join(self.dir, f"{name}.out")
        err = open(os.path.join(self.dir, f"{name}.err"), "w")
        p = subprocess.Popen(args, stdout=open(out, "w"), stderr=err)
        self.procs.append(p)
        return first_line(out)

    def log_bytes(self, name):
        return os.path.getsize(os.path.join(self.dir, f"{name}.err"))

    def lctl(self, *args, timeout_s=10):
        return subprocess.run([PFSQOS, "lctl", "--server", self.oss, "--key-file", self.server_key,
                               *args], capture_output=True, text=True, timeout=timeout_s)

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
        tries = garbage_for(c.oss, 8)
        grew = c.log_bytes("ossd") - before
        LINES.append(f"| ossd log written while one peer sent garbage on {tries} connections "
                     f"for 8 s | {grew} bytes |")
    finally:
        c.close()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def garbage_for(target, secs):
    """One peer opening connections to `target` and sending garbage for `secs` seconds;
    returns the connections made."""
    deadline = time.monotonic() + secs
    tries = 0
    while time.monotonic() < deadline:
        try:
            s = socket.create_connection(addr(target), timeout=1)
            s.sendall(b"GET / HTTP/1.0\r\n\r\n" * 4)
            s.close()
            tries += 1
        except OSError:
            pass
    return tries


def probe_coordinator_logging():
    d = tempfile.mkdtemp(prefix="pfsqos-attack-coord.")
    p = None
    try:
        key = os.path.join(d, "key")
        with open(key, "w") as f:
            f.write(os.urandom(24).hex() + "\n")
        target = f"127.0.0.1:{free_port()}"
        conf = os.path.join(d, "coordinator.toml")
        with open(conf, "w") as f:
            f.write(f'listen = "{target}"\nkey_file = "{key}"\ncontroller = "gift"\n'
                    f'agents = ["oss1"]\n')
        err = os.path.join(d, "coordinator.err")
        p = subprocess.Popen([PFSQOS, "coordinator", "--config", conf],
                             stdout=subprocess.DEVNULL, stderr=open(err, "w"))
        deadline = time.monotonic() + 30
        while "coordinator listening" not in open(err).read():
            if time.monotonic() > deadline or p.poll() is not None:
                raise RuntimeError(f"the coordinator did not start: {open(err).read()}")
            time.sleep(0.1)
        before = os.path.getsize(err)
        tries = garbage_for(target, 8)
        grew = os.path.getsize(err) - before
        LINES.append(f"| coordinator log written while one peer sent garbage on {tries} "
                     f"connections for 8 s | {grew} bytes |")
    finally:
        if p is not None:
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(d, ignore_errors=True)


def scrape(port):
    """The value of every sample of http://127.0.0.1:PORT/metrics, by metric name (a
    counter's without its `_total`)."""
    import urllib.request
    out = {}
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                name = name.split("{")[0]
                out[name.removesuffix("_total")] = float(value)
    return out


def wait_for(what, cond, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if cond():
                return time.monotonic()
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


def probe_coordinator_flood_restart(sources=32, per_source=8, hold_s=5, watch_s=15):
    bindir = os.path.dirname(shutil.which(PFSQOS) or PFSQOS)
    agentd, emu = os.path.join(bindir, "pfsqos-agentd"), os.path.join(bindir, "pfsqos-lctl-emu")
    if not (os.path.exists(agentd) and os.path.exists(emu)):
        LINES.append("| agents served while the coordinator restarts under a handshake flood | "
                     "not measured: pfsqos-agentd and pfsqos-lctl-emu are not built |")
        return
    osses = [Cluster(), Cluster()]
    d = tempfile.mkdtemp(prefix="pfsqos-attack-coord.")
    procs, coord = [], None
    flood = None
    try:
        key = osses[0].key
        target, coord_metrics = f"127.0.0.1:{free_port()}", free_port()
        conf = os.path.join(d, "coordinator.toml")
        with open(conf, "w") as f:
            f.write(f'listen = "{target}"\nkey_file = "{key}"\ncontroller = "gift"\n'
                    f'period_ms = 200\nagents = ["oss1", "oss2"]\n'
                    f'metrics_listen = "127.0.0.1:{coord_metrics}"\n')

        def start_coordinator():
            err = open(os.path.join(d, "coordinator.err"), "a")
            return subprocess.Popen([PFSQOS, "coordinator", "--config", conf],
                                    stdout=subprocess.DEVNULL, stderr=err)

        coord = start_coordinator()
        agent_metrics = []
        for i, c in enumerate(osses):
            os.makedirs(os.path.join(c.dir, "bin"))
            os.symlink(emu, os.path.join(c.dir, "bin", "lctl"))
            port = free_port()
            agent_metrics.append(port)
            config = os.path.join(c.dir, "agent.toml")
            with open(config, "w") as f:
                f.write(f'controller = "static"\nost_capacity_rpcs_per_s = 100\n'
                        f'rule_prefix = "pfq"\nperiod_ms = 200\nlctl_backoff_ms = 10\n'
                        f'metrics_listen = "127.0.0.1:{port}"\n[coordinator]\n'
                        f'addr = "{target}"\nkey_file = "{key}"\nagent_name = "oss{i + 1}"\n'
                        f'safe_hold_ms = {hold_s * 1000}\n[[jobs]]\nid = "big.1"\nnodes = 8\n')
            env = dict(os.environ, PATH=os.path.join(c.dir, "bin") + ":" + os.environ["PATH"],
                       PFSQOS_LCTL_SERVER=c.oss, PFSQOS_LCTL_KEY_FILE=c.server_key,
                       PFSQOS_LCTL_VERSION="2.17", PFSQOS_LCTL_OST_INDEX_BASE=str(i))
            procs.append(subprocess.Popen([agentd, "--config", config], env=env,
                                          stdout=subprocess.DEVNULL,
                                          stderr=open(os.path.join(c.dir, "agent.err"), "w")))
        # Both agents served before the attack.
        wait_for("both agents' reports", lambda: scrape(coord_metrics)
                 .get("pfsqos_coordinator_reports_accepted", 0) >= 10, 60)
        flood = Flood(target, sources, per_source)
        time.sleep(2)
        coord.terminate()
        coord.wait(timeout=10)
        restarted = time.monotonic()
        coord = start_coordinator()
        first = wait_for("a report after the restart", lambda: scrape(coord_metrics)
                         .get("pfsqos_coordinator_reports_accepted", 0) >= 1, 60) - restarted
        safe, samples = 0, 0
        deadline = time.monotonic() + watch_s
        while time.monotonic() < deadline:
            for port in agent_metrics:
                try:
                    safe += scrape(port).get("pfsqos_agent_safe_state", 0) > 0
                    samples += 1
                except OSError:
                    pass
            time.sleep(0.2)
        taken = scrape(coord_metrics).get("pfsqos_coordinator_reports_accepted", 0)
        LINES.append(
            f"| two agents while {sources * per_source} idle sockets from {sources} addresses "
            f"are held across a coordinator restart (safe_hold_ms {hold_s * 1000}) | first "
            f"report taken {first:.1f} s after the restart; {taken:.0f} reports taken in the "
            f"next {watch_s} s; {safe} of {samples} samples of the agents in the safe state |")
    finally:
        if flood is not None:
            flood.close()
        for p in [coord, *procs]:
            if p is not None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
        for c in osses:
            c.close()
        shutil.rmtree(d, ignore_errors=True)


def probe_stalled_reads(stalled=64):
    probe = os.environ.get("STALLED_READS", "")
    if not os.path.exists(probe):
        LINES.append(f"| another client's writes while {stalled} stalled 64 MiB reads are held | "
                     f"not measured: STALLED_READS names no built probe |")
        return
    c = Cluster()
    try:
        r = subprocess.run([probe, c.oss, c.key, str(stalled)], capture_output=True, text=True,
                           timeout=600)
        if r.returncode != 0:
            raise RuntimeError(f"stalled_reads failed: {r.stderr}")
        v = dict(kv.split("=") for kv in r.stdout.split())
        delay = float(v["during_max_s"]) - float(v["before_median_s"])
        LINES.append(
            f"| another client's 1 MiB writes while {stalled} connections from 16 addresses "
            f"hold 64 MiB reads they never read | median {v['during_median_s']} s, slowest "
            f"{v['during_max_s']} s (without them: median {v['before_median_s']} s, slowest "
            f"{v['before_max_s']} s): delayed by at most {delay:.3f} s |")
    finally:
        c.close()


def probe_unlinked_objects(files=20000):
    if not fuse_ok():
        LINES.append(f"| object files left after {files} creates and unlinks | not measured: "
                     f"needs root, /dev/fuse and fusermount3 |")
        return
    c = Cluster()
    try:
        mnt, out, _ = c.mount("mnt")
        if "ready" not in first_line(out, 30):
            raise RuntimeError("the mount did not start")
        objects = os.path.join(c.dir, "ost0", "objects")
        count = lambda: len(os.listdir(objects)) if os.path.isdir(objects) else 0
        before = count()
        started = time.monotonic()
        for i in range(files):
            path = os.path.join(mnt, f"u{i}")
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
            os.unlink(path)
        ops_s = time.monotonic() - started
        unlinked = time.monotonic()
        deadline = unlinked + 120
        left = count() - before
        while left > 0 and time.monotonic() < deadline:
            time.sleep(0.1)
            left = count() - before
        drained_s = time.monotonic() - unlinked
        LINES.append(f"| object files left on the OST after {files} creates and unlinks through "
                     f"a mount ({ops_s:.0f} s) | {left}, {drained_s:.1f} s after the last "
                     f"unlink |")
    finally:
        c.close()


def main():
    started = time.monotonic()
    rows_only = "--rows" in sys.argv[1:]
    for probe in (probe_handshake_flood, probe_refused_logging, probe_coordinator_logging,
                  probe_coordinator_flood_restart, probe_stalled_reads,
                  probe_unlinked_objects):
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
