#!/usr/bin/env bash
# Under attack: re-measures on a live cluster on loopback (`pfsqos up`: one ossd with one OST
# paced to 32 MiB/s under AdapTBF, an mds, one FUSE mount) what hostile input does:
#  1. a job whose id is TBF syntax (SLURM_JOB_ID='*') against an ordinary job, then two
#     ordinary jobs for comparison: MiB/s of each over SECS seconds, from the ossd's metrics;
#  2. the metrics endpoint while 40 sockets from 8 loopback addresses trickle their requests
#     (a byte every 100 ms, renewed as they are closed): scrapes answered of 16;
#  3. Prometheus' lint (`promtool check metrics`) of the live ossd and mds endpoints;
#  4. handshake floods (300 idle sockets from 20 addresses against the ossd, and as many
#     against the mds: lctl reads and new mounts that get through; 256 from 32 addresses held
#     across a coordinator restart: whether its two agents stay served), refused-connection
#     logging of the ossd and the coordinator, another client's writes while 64 stalled
#     64 MiB reads are held, and the object files 20,000 creates and unlinks leave
#     (scripts/under-attack.py, with daemons of its own);
#  5. the Lustre exporters' job id parse of the ossd's job_stats (the GSI lustre_exporter's
#     `job_id:[ \t]*"?([^"\n\r]*)"?`) against the `jobid` labels of `lustre_job_*`.
# Writes the "Under attack" sections of docs/live.md (1-4) and docs/lustre.md (5) between
# their generated markers; NO_DOCS=1 only prints. Bounded: about 2*REPEATS*(SECS+3) + 120 s
# after the build (SECS=15, REPEATS=2 by default; the 20,000 creates and unlinks take most
# of the rest). Needs fio, curl, python3 and /dev/fuse (scripts/setup.sh);
# promtool (Debian's prometheus) for 3, which is reported as not run without it.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
secs=${SECS:-15}
repeats=${REPEATS:-2}
cargo build --locked -q -p pfsqos-cli
cargo build --locked -q -p pfsqos-agent --bins # pfsqos-agentd and pfsqos-lctl-emu, for 4
cargo build --locked -q -p pfsqos-ossd --example stalled_reads
stalled_reads=$(realpath "${CARGO_TARGET_DIR:-target}/debug/examples/stalled_reads")
bin=$(realpath "${CARGO_TARGET_DIR:-target}/debug/pfsqos")
work=$(mktemp -d)
trickler_pid=""
cleanup() {
  [[ -n $trickler_pid ]] && kill "$trickler_pid" 2>/dev/null || true
  (cd "$work" && "$bin" down cluster.toml >/dev/null 2>&1) || true
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
cat >cluster.toml <<'EOF'
[mds]
listen = "127.0.0.1:0"
metrics_listen = "127.0.0.1:19989"

[[oss]]
listen = "127.0.0.1:0"
osts = ["pfsqos-data/ost0"]
metrics_listen = "127.0.0.1:19988"
policy = "adaptbf"
ceiling_bytes_per_s = 33554432

[mount]
enabled = true
path = "pfsqos-mnt"
jobid_var = "SLURM_JOB_ID"
EOF
export PFSQOS_CLUSTER="$work/cluster.toml"
"$bin" up cluster.toml >up.log 2>&1 || { cat up.log; exit 1; }
mnt="$work/pfsqos-mnt"
oss_metrics=127.0.0.1:19988
mds_metrics=127.0.0.1:19989
started=$(date -u +%Y-%m-%dT%H:%MZ)
load_start=$(cut -d' ' -f1 /proc/loadavg)

# Helpers reading the ossd's answers (written out so that no quoting is shared with bash).
cat >"$work/attack.py" <<'EOF'
import json, re, sys

def labels(text):
    """Bytes written per `jobid` label of `lustre_job_write_bytes_total`, unescaped."""
    out = {}
    for line in text.splitlines():
        if not line.startswith("lustre_job_write_bytes_total{"):
            continue
        i = line.index('jobid="') + len('jobid="')
        job, k = [], i
        while line[k] != '"':
            if line[k] == "\\":
                k += 1
                job.append({"n": "\n"}.get(line[k], line[k]))
            else:
                job.append(line[k])
            k += 1
        job = "".join(job)
        out[job] = out.get(job, 0) + float(line.rsplit(" ", 1)[1])
    return out

def exporter_id(job):
    """The id as job_stats prints it (current Lustre), without its quotes."""
    keep = lambda c: c.isascii() and (c.isalnum() or c in ".@-_:/")
    if all(keep(c) for c in job) and ":" not in job and not job.startswith("@"):
        return job
    return "".join(c if keep(c) else "".join("\\x%02X" % b for b in c.encode()) for c in job)

cmd = sys.argv[1]
if cmd == "labels":
    print(json.dumps(labels(sys.stdin.read())))
elif cmd == "rates":
    a, b, b0, b1, t0, t1 = sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), json.loads(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7])
    rate = lambda j: (b1.get(exporter_id(j), 0) - b0.get(exporter_id(j), 0)) / (t1 - t0) / 2**20
    print(f"{rate(a):.1f} {rate(b):.1f}")
elif cmd == "join":
    parsed = set(re.findall(r'job_id:[ \t]*"?([^"\n\r]*)"?', sys.stdin.read()))
    both = parsed & set(json.loads(sys.argv[2]).keys())
    ids = ", ".join("`" + j + "`" for j in sorted(parsed))
    print(f"{len(both)} of the {len(parsed)} job ids the GSI lustre_exporter parses from the "
          f"ossd's job_stats ({ids}) are `jobid` labels of `lustre_job_write_bytes_total`, so a "
          f"dashboard joining the exporter's series with the ossd's sees each job once")
EOF

# Bytes written per job label, as JSON.
job_bytes() {
  curl -sf "http://$oss_metrics/metrics" | python3 "$work/attack.py" labels
}

# Two fio writers of 1 MiB blocks under SLURM_JOB_ID $1 and $2 for SECS seconds (after a
# 3 s start, so that AdapTBF has given them rules); prints "MIB_S_1 MIB_S_2" measured from
# the ossd's job_stats over the same window.
pair() {
  local pids=() i=0 job
  for job in "$1" "$2"; do
    i=$((i + 1))
    SLURM_JOB_ID="$job" fio --name="w$i" --filename="$mnt/pair.$i" --rw=write --bs=1M \
      --size=64M --ioengine=psync --time_based --runtime=$((secs + 5)) \
      --output=/dev/null >/dev/null 2>&1 &
    pids+=($!)
  done
  sleep 3
  local t0 b0 t1 b1
  t0=$(date +%s.%N)
  b0=$(job_bytes)
  sleep "$secs"
  t1=$(date +%s.%N)
  b1=$(job_bytes)
  for p in "${pids[@]}"; do wait "$p"; done
  python3 "$work/attack.py" rates "$1" "$2" "$b0" "$b1" "$t0" "$t1"
}

# Each pair REPEATS times, alternating, so a drift of the machine's load hits both alike.
star_runs=() plain_runs=()
for _ in $(seq 1 "$repeats"); do
  read -r a b < <(pair '*' victim)
  star_runs+=("$a and $b")
  read -r a b < <(pair 'plain.1' 'plain.2')
  plain_runs+=("$a and $b")
done
join_runs() { local IFS=';'; echo "$*" | sed 's/;/; /g'; }
star=$(join_runs "${star_runs[@]}")
plain=$(join_runs "${plain_runs[@]}")

# 40 trickling sockets from 127.0.0.2-9 while 16 scrapes run one after the other.
python3 - "$oss_metrics" "$work/trickle.stop" <<'EOF' &
import socket, sys, threading, time, os
host, port = sys.argv[1].split(":")
stop = sys.argv[2]
def trickle(i):
    src = f"127.0.0.{2 + i % 8}"
    head = b"GET /metrics HTTP/1.1\r\nHost: trickle\r\nX-Pad: " + b"a" * 64
    while not os.path.exists(stop):
        try:
            s = socket.create_connection((host, int(port)), timeout=5, source_address=(src, 0))
            for b in head:
                if os.path.exists(stop):
                    break
                s.send(bytes([b]))
                time.sleep(0.1)
        except OSError:
            time.sleep(0.01)
threads = [threading.Thread(target=trickle, args=(i,), daemon=True) for i in range(40)]
for t in threads:
    t.start()
while not os.path.exists(stop):
    time.sleep(0.1)
EOF
trickler_pid=$!
sleep 2
scrapes_ok=0
for _ in $(seq 1 16); do
  code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://$oss_metrics/metrics" || true)
  [[ $code == 200 ]] && scrapes_ok=$((scrapes_ok + 1))
done
touch "$work/trickle.stop"
wait "$trickler_pid" || true
trickler_pid=""

# Prometheus' lint of the live endpoints.
lint() {
  curl -sf -H 'Accept: text/plain;version=0.0.4' "http://$1/metrics" | promtool check metrics 2>&1 |
    grep -c . || true
}
if command -v promtool >/dev/null 2>&1; then
  lint_text="$(lint "$oss_metrics") problems in the ossd's answer, $(lint "$mds_metrics") in the mds's"
else
  lint_text="not run (promtool is not installed here)"
fi

# The exporters' parse of job_stats against the metrics' labels.
join_text=$("$bin" lctl get_param -n 'obdfilter.*.job_stats' |
  python3 "$work/attack.py" join "$(job_bytes)")

# Handshake floods against the ossd and the MDS, and refused-connection logging: separate
# daemons started by scripts/under-attack.py (one table row each).
flood_rows=$(PFSQOS="$bin" STALLED_READS="$stalled_reads" python3 "$repo/scripts/under-attack.py" --rows)

live=$(cat <<EOF
Measured by \`scripts/under-attack.sh\` ($started, $(nproc) cores, load average $load_start at
the start): one ossd with one OST paced to 32 MiB/s under AdapTBF, one FUSE mount, fio writers
of 1 MiB blocks, $secs s per pair after a 3 s start, $repeats runs of each pair alternating.

| what | measured |
|---|---|
| \`SLURM_JOB_ID='*'\` against job \`victim\`, MiB/s per run | $star |
| two ordinary jobs (\`plain.1\`, \`plain.2\`), MiB/s per run | $plain |
| scrapes answered while 40 sockets from 8 addresses trickle | $scrapes_ok of 16 |
| \`promtool check metrics\` on the live endpoints | $lint_text |
$flood_rows
EOF
)
lustre=$(cat <<EOF
Measured by \`scripts/under-attack.sh\` ($started) on the same live ossd: $join_text.
EOF
)
echo "$live"
echo
echo "$lustre"
if [[ -z ${NO_DOCS:-} ]]; then
  python3 - "$repo/docs/live.md" "$live" "$repo/docs/lustre.md" "$lustre" <<'EOF'
import sys
begin, end = "<!-- under-attack:begin (scripts/under-attack.sh) -->", "<!-- under-attack:end -->"
for path, text in ((sys.argv[1], sys.argv[2]), (sys.argv[3], sys.argv[4])):
    doc = open(path).read()
    i, j = doc.index(begin) + len(begin), doc.index(end)
    open(path, "w").write(doc[:i] + "\n" + text + "\n" + doc[j:])
EOF
fi
