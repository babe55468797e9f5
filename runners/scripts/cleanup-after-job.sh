#!/usr/bin/env bash
# Job-completed cleanup: leave the machine as the next benchmark expects to find it.
#
# Removes every container (with its anonymous volumes), every volume, unused networks and
# dangling images, then stops leftover benchmark processes this user owns (TERM, then KILL
# after a grace period). Pulled images stay: re-pulling valkey/valkey for every job would
# only add noise and traffic. The runner user is in the docker group, and this machine is a
# benchmark appliance: nothing else is meant to run containers on it.
#
# --check: print what would be removed, remove nothing.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: cleanup-after-job.sh [--process NAME]... [--grace-s N] [--check]
  --process NAME   exact process name to stop if this user still runs it; repeatable
                   (default: valkey-server redis-server valkey-benchmark redis-benchmark memtier_benchmark vkbench)
  --grace-s N      seconds between TERM and KILL (default 10)
  --check          print what would be done; change nothing
USAGE
}

check_only=false
grace_s=10
processes=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --process) processes+=("$2"); shift 2 ;;
    --grace-s) grace_s=$2; shift 2 ;;
    --check) check_only=true; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "cleanup-after-job: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done
if [[ ${#processes[@]} -eq 0 ]]; then
  processes=(valkey-server redis-server valkey-benchmark redis-benchmark memtier_benchmark vkbench)
fi

# run CMD...: do it, or in --check mode only say it.
run() {
  if $check_only; then
    echo "would run: $*"
  else
    echo "cleanup: $*"
    "$@"
  fi
}

cleanup_docker() {
  if ! command -v docker >/dev/null 2>&1; then
    echo "cleanup: no docker here, skipping containers"
    return 0
  fi
  if ! docker info >/dev/null 2>&1; then
    # Without the daemon nothing can be checked: in real use that must stop the next job.
    echo "cleanup: docker is installed but its daemon does not answer (or this user is not in the docker group)" >&2
    $check_only && return 0
    return 1
  fi
  local containers volumes
  containers=$(docker ps --all --quiet)
  if [[ -n $containers ]]; then
    # shellcheck disable=SC2086 # one id per word is what docker rm wants
    run docker rm --force --volumes $containers
  fi
  volumes=$(docker volume ls --quiet)
  if [[ -n $volumes ]]; then
    # shellcheck disable=SC2086
    run docker volume rm --force $volumes
  fi
  run docker network prune --force
  run docker image prune --force
}

stop_leftover_processes() {
  local uid name pids
  uid=$(id -u)
  for name in "${processes[@]}"; do
    # The kernel keeps 15 characters of a process name (valkey-benchmark -> valkey-benchmar).
    name=${name:0:15}
    pids=$(pgrep -u "$uid" -x -- "$name" || true)
    [[ -n $pids ]] || continue
    # shellcheck disable=SC2086
    run kill -TERM $pids
    $check_only && continue
    local waited=0
    while pgrep -u "$uid" -x -- "$name" >/dev/null && ((waited < grace_s)); do
      sleep 1
      waited=$((waited + 1))
    done
    if pids=$(pgrep -u "$uid" -x -- "$name"); then
      # shellcheck disable=SC2086
      run kill -KILL $pids
    fi
  done
}

cleanup_docker
stop_leftover_processes
echo "cleanup: done"
