#!/usr/bin/env bash
# Job-started check: is this machine quiet enough to benchmark on?
#
# Fails the job when, after waiting up to --wait-s for things to settle, the 1-minute load
# average is still above --max-load, a container is running, or a benchmark server/client is
# left over (any user). A previous job's cleanup normally leaves none; if one is there,
# something is wrong, and numbers taken next to it would be wrong too. This check removes
# nothing: cleanup-after-job.sh does that, and the runner unit runs it before registering.
#
# --check: report only, always exit 0 (for trying it on a machine that is not a runner).
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: check-machine-quiet.sh [--max-load N] [--wait-s N] [--process NAME]... [--check]
  --max-load N     highest acceptable 1-minute load average (default 0.5)
  --wait-s N       how long to wait for the load to settle (default 300)
  --process NAME   a process name (exact) that must not be running; repeatable
                   (default: valkey-server redis-server valkey-benchmark redis-benchmark memtier_benchmark)
  --check          report only; exit 0 whatever is found
USAGE
}

max_load=0.5
wait_s=300
check_only=false
processes=()
proc_root=${VKBENCH_PROC_ROOT:-/proc}   # tests point this at a fake /proc

while [[ $# -gt 0 ]]; do
  case $1 in
    --max-load) max_load=$2; shift 2 ;;
    --wait-s) wait_s=$2; shift 2 ;;
    --process) processes+=("$2"); shift 2 ;;
    --check) check_only=true; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "check-machine-quiet: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done
if [[ ${#processes[@]} -eq 0 ]]; then
  processes=(valkey-server redis-server valkey-benchmark redis-benchmark memtier_benchmark)
fi
[[ $wait_s =~ ^[0-9]+$ ]] || { echo "check-machine-quiet: --wait-s must be whole seconds" >&2; exit 2; }

load1() { cut -d ' ' -f 1 "$proc_root/loadavg"; }
# awk does the float comparison that bash cannot.
load_ok() { awk -v l="$1" -v m="$max_load" 'BEGIN { exit !(l <= m) }'; }

problems=()

deadline=$((SECONDS + wait_s))
load=$(load1)
while ! load_ok "$load" && ! $check_only && ((SECONDS < deadline)); do
  sleep 5
  load=$(load1)
done
if load_ok "$load"; then
  echo "quiet: 1-minute load $load <= $max_load"
else
  problems+=("1-minute load average $load > $max_load (waited ${wait_s}s)")
fi

for name in "${processes[@]}"; do
  # The kernel keeps 15 characters of a process name (valkey-benchmark -> valkey-benchmar).
  if pids=$(pgrep -x -- "${name:0:15}"); then
    problems+=("leftover $name process(es): $(echo "$pids" | tr '\n' ' ')")
  fi
done

if command -v docker >/dev/null 2>&1; then
  if running=$(docker ps --quiet 2>/dev/null); then
    if [[ -n $running ]]; then
      problems+=("running container(s): $(docker ps --format '{{.Names}} ({{.Image}})' | tr '\n' ' ')")
    fi
  else
    problems+=("docker is installed but 'docker ps' fails (daemon down, or this user is not in the docker group)")
  fi
fi

if [[ ${#problems[@]} -eq 0 ]]; then
  echo "quiet: no leftover servers or containers"
  exit 0
fi
for p in "${problems[@]}"; do
  echo "not quiet: $p"
done
if $check_only; then
  exit 0
fi
echo "not quiet: refusing to benchmark here; cleanup-after-job.sh removes leftovers"
exit 1
