#!/usr/bin/env bash
# Turn swap off now. A benchmark that pages is measuring the disk (an SD card or eMMC on a Pi).
# The bench_tuning role also keeps it off across boots (swap.target masked, dphys-swapfile
# disabled, fstab swap lines commented); this is the runtime half, run at boot as well.
# --check: print what would change, change nothing. --proc-root: for tests.
set -euo pipefail

check_only=false
proc=/proc
while [[ $# -gt 0 ]]; do
  case $1 in
    --check) check_only=true; shift ;;
    --proc-root) proc=$2/proc; shift 2 ;;
    -h|--help) echo "usage: disable-swap.sh [--check]"; exit 0 ;;
    *) echo "disable-swap: unknown argument: $1" >&2; exit 2 ;;
  esac
done

# /proc/swaps: a header line, then one line per active swap area.
active=$(tail -n +2 "$proc/swaps" | awk '{print $1}')
if [[ -z $active ]]; then
  echo "swap: already off"
  exit 0
fi
if $check_only; then
  echo "swap: would turn off: $(echo "$active" | tr '\n' ' ')"
else
  swapoff -a
  echo "swap: turned off: $(echo "$active" | tr '\n' ' ')"
fi
