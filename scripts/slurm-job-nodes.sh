#!/usr/bin/env bash
# Gives a live pfsqos ossd the node count (or, with `--basis priority`, the scaled Slurm
# priority) of every running Slurm job, through the interface the ossd has for job facts
# (`lctl set_param ost.OSS.ost_io.job_nodes=JOB=N`, an administrator's count, which wins over
# what mounts report). The numbers come from `pfsqos jobfacts`, the reader and scaling the
# agent's `[slurm]` uses. Runs once, or every INTERVAL seconds with `--every INTERVAL`. Each
# line is checked again (a Slurm job id, a number in 1..=1000000) before it is used; anything
# else is skipped and counted. Arguments after `--` go to `pfsqos lctl` (e.g. `--server ADDR
# --key-file FILE`); without them it finds the cluster as `pfsqos lctl` does. PFSQOS (default
# `pfsqos`) and SQUEUE (default `squeue`) name the programs.
#
#   scripts/slurm-job-nodes.sh --every 10 --basis priority -- --server 10.0.0.7:7988 --key-file /etc/pfsqos/cluster.key
set -euo pipefail
every=""
basis="nodes"
while [ $# -gt 0 ]; do
  case "$1" in
  --every) every="${2:-}"; shift 2 ;;
  --basis) basis="${2:-}"; shift 2 ;;
  *) break ;;
  esac
done
if [ "${1:-}" = "--" ]; then shift; fi
pfsqos="${PFSQOS:-pfsqos}"
squeue="${SQUEUE:-squeue}"
if [ -n "$every" ] && ! [[ "$every" =~ ^[0-9]+$ && "$every" -ge 1 && "$every" -le 3600 ]]; then
  echo "slurm-job-nodes: --every must be 1..=3600 seconds" >&2
  exit 2
fi
if [ "$basis" != "nodes" ] && [ "$basis" != "priority" ]; then
  echo "slurm-job-nodes: --basis must be nodes or priority" >&2
  exit 2
fi
once() {
  local out given=0 skipped=0 failed=0
  out="$("$pfsqos" jobfacts --basis "$basis" --squeue "$squeue")" || {
    echo "slurm-job-nodes: pfsqos jobfacts failed" >&2
    return 1
  }
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    if [[ "$line" =~ ^([0-9_]{1,64})=([0-9]{1,7})$ ]] && [ "${BASH_REMATCH[2]}" -ge 1 ] &&
      [ "${BASH_REMATCH[2]}" -le 1000000 ]; then
      if "$pfsqos" lctl "$@" set_param -n \
        "ost.OSS.ost_io.job_nodes=${BASH_REMATCH[1]}=${BASH_REMATCH[2]}" >/dev/null; then
        given=$((given + 1))
      else
        failed=$((failed + 1))
      fi
    else
      skipped=$((skipped + 1))
    fi
  done <<<"$out"
  echo "slurm-job-nodes: $given job(s) given to the ossd, $skipped line(s) skipped, $failed write(s) failed"
  [ "$failed" -eq 0 ]
}
if [ -z "$every" ]; then
  once "$@"
else
  while true; do once "$@" || true; sleep "$every"; done
fi
