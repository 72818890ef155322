#!/usr/bin/env bash
# Installs and starts a single-node Slurm (Debian's slurmctld, slurmd and munge) for the Slurm
# job-facts test (crates/pfsqos-cli/tests/cli/agent_slurm.rs). Needs root and apt-get; without them it
# says so and exits 0: the test then skips, saying why. Safe to run again: it starts only what is
# not already running. The configuration is the smallest that runs jobs in a container without
# systemd or cgroups: one node, one partition, proctrack/linuxproc, no accounting database.
set -euo pipefail
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "pfsqos setup-slurm: not root or no apt-get: the Slurm test will skip" >&2
  exit 0
fi
if ! command -v slurmctld >/dev/null 2>&1 || ! command -v slurmd >/dev/null 2>&1 ||
  ! command -v munged >/dev/null 2>&1 || ! command -v squeue >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  pkgs="slurmctld slurmd slurm-client munge"
  apt-get install -y -qq --no-install-recommends $pkgs >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends $pkgs >/dev/null 2>&1; } ||
    { echo "pfsqos setup-slurm: could not install $pkgs: the Slurm test will skip" >&2; exit 0; }
fi
host="$(hostname -s)"
cpus="$(nproc)"
mem_mb="$(awk '/MemTotal/ {print int($2 / 1024 / 2)}' /proc/meminfo)"
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
if [ ! -s /etc/munge/munge.key ]; then
  mkdir -p /etc/munge
  if command -v mungekey >/dev/null 2>&1; then mungekey --create --force >/dev/null; else
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none; fi
fi
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
chmod 0700 /etc/munge; chmod 0400 /etc/munge/munge.key
chown -R slurm:slurm /var/spool/slurmctld /var/log/slurm 2>/dev/null || true
conf=/etc/slurm/slurm.conf
if [ ! -f "$conf" ] || ! grep -q '^# written by pfsqos setup-slurm' "$conf"; then
  [ -f "$conf" ] && cp "$conf" "$conf.before-pfsqos"
  cat >"$conf" <<CONF
# written by pfsqos setup-slurm: a single-node cluster for pfsqos's Slurm test
ClusterName=pfsqos
SlurmctldHost=$host
SlurmUser=slurm
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
PriorityType=priority/basic
MpiDefault=none
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$host CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONF
fi
pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged || true
pgrep -x slurmctld >/dev/null || slurmctld || true
pgrep -x slurmd >/dev/null || slurmd || true
# Wait (bounded) for the node to come up, then make sure it is not left DOWN from an earlier run.
for _ in $(seq 1 60); do
  if sinfo -h -o '%T' 2>/dev/null | grep -Eq 'idle|mixed|alloc'; then break; fi
  scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
  sleep 1
done
if sinfo -h -o '%T' 2>/dev/null | grep -Eq 'idle|mixed|alloc'; then
  echo "pfsqos setup-slurm: Slurm is up on $host ($cpus CPUs)"
else
  echo "pfsqos setup-slurm: Slurm did not come up (see /var/log/slurm): the Slurm test will skip" >&2
fi
