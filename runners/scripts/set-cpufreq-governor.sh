#!/usr/bin/env bash
# Set every CPU's cpufreq governor (default: performance), so a benchmark does not measure
# how fast the clock ramps up. Run at boot by vkbench-bench-tuning.service.
#
# Many cloud VMs expose no cpufreq at all (the host owns the clock): that is reported and is
# not an error. A governor the kernel does not offer is an error.
# --check: print what would change, change nothing. --sysfs-root: for tests.
set -euo pipefail

governor=performance
check_only=false
sysfs=/sys
while [[ $# -gt 0 ]]; do
  case $1 in
    --governor) governor=$2; shift 2 ;;
    --check) check_only=true; shift ;;
    --sysfs-root) sysfs=$2/sys; shift 2 ;;
    -h|--help) echo "usage: set-cpufreq-governor.sh [--governor NAME] [--check]"; exit 0 ;;
    *) echo "set-cpufreq-governor: unknown argument: $1" >&2; exit 2 ;;
  esac
done

shopt -s nullglob
policies=("$sysfs"/devices/system/cpu/cpufreq/policy*)
if [[ ${#policies[@]} -eq 0 ]]; then
  echo "cpufreq: no cpufreq policies under $sysfs (usual on cloud VMs): nothing to set"
  exit 0
fi

for policy in "${policies[@]}"; do
  name=$(basename -- "$policy")
  current=$(<"$policy/scaling_governor")
  if [[ $current == "$governor" ]]; then
    echo "cpufreq: $name already $governor"
    continue
  fi
  available=$(<"$policy/scaling_available_governors")
  if [[ " $available " != *" $governor "* ]]; then
    echo "cpufreq: $name offers '$available', not $governor" >&2
    exit 1
  fi
  if $check_only; then
    echo "cpufreq: would set $name from $current to $governor"
  else
    echo "$governor" >"$policy/scaling_governor"
    echo "cpufreq: set $name from $current to $governor"
  fi
done
