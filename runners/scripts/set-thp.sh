#!/usr/bin/env bash
# Set transparent huge pages to never or madvise (enabled and defrag alike).
#
# With THP "always", fork() for RDB/AOF rewrites and khugepaged compaction add latency spikes
# (Valkey logs a warning about it). "madvise" leaves it to programs that ask for it; Valkey
# itself opts out. Run at boot by vkbench-bench-tuning.service.
# --check: print what would change, change nothing. --sysfs-root: for tests.
set -euo pipefail

mode=never
check_only=false
sysfs=/sys
while [[ $# -gt 0 ]]; do
  case $1 in
    --mode) mode=$2; shift 2 ;;
    --check) check_only=true; shift ;;
    --sysfs-root) sysfs=$2/sys; shift 2 ;;
    -h|--help) echo "usage: set-thp.sh [--mode never|madvise] [--check]"; exit 0 ;;
    *) echo "set-thp: unknown argument: $1" >&2; exit 2 ;;
  esac
done
if [[ $mode != never && $mode != madvise ]]; then
  echo "set-thp: --mode must be never or madvise" >&2
  exit 2
fi

thp=$sysfs/kernel/mm/transparent_hugepage
if [[ ! -d $thp ]]; then
  echo "thp: $thp missing (kernel without THP): nothing to set"
  exit 0
fi

for knob in enabled defrag; do
  # The file lists the choices with the current one in brackets: "always madvise [never]".
  line=$(<"$thp/$knob")
  current=$(sed -n 's/.*\[\(.*\)\].*/\1/p' <<<"$line")
  if [[ $current == "$mode" ]]; then
    echo "thp: $knob already $mode"
  elif $check_only; then
    echo "thp: would set $knob from $current to $mode"
  else
    echo "$mode" >"$thp/$knob"
    echo "thp: set $knob from $current to $mode"
  fi
done
