#!/usr/bin/env bash
# Steer hardware interrupts to the housekeeping CPUs (--cpus, e.g. "0"), away from the cores a
# benchmark server or client is pinned to. irqbalance must be off (the bench_tuning role
# masks it), or it moves them back within seconds.
#
# Some IRQs cannot move (per-CPU timers, many of a Pi's SoC interrupts): the kernel refuses the
# write, and that is counted, not an error. /proc/irq/default_smp_affinity is set too, so IRQs
# allocated later start on the housekeeping CPUs. Run at boot by vkbench-bench-tuning.service.
# --check: print what would change, change nothing. --proc-root: for tests.
set -euo pipefail

cpus=""
check_only=false
proc=/proc
while [[ $# -gt 0 ]]; do
  case $1 in
    --cpus) cpus=$2; shift 2 ;;
    --check) check_only=true; shift ;;
    --proc-root) proc=$2/proc; shift 2 ;;
    -h|--help) echo "usage: set-irq-affinity.sh --cpus LIST [--check]   (LIST like 0 or 0-1 or 0,2)"; exit 0 ;;
    *) echo "set-irq-affinity: unknown argument: $1" >&2; exit 2 ;;
  esac
done
if [[ ! $cpus =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]]; then
  echo "set-irq-affinity: --cpus must be a CPU list like 0, 0-1 or 0,2" >&2
  exit 2
fi

# "0-2,5" -> "0 1 2 5": compare lists by their members, not their spelling.
expand() {
  local part out=() i
  local IFS=,
  for part in $1; do
    if [[ $part == *-* ]]; then
      for ((i = ${part%-*}; i <= ${part#*-}; i++)); do out+=("$i"); done
    else
      out+=("$part")
    fi
  done
  IFS=' '
  printf '%s\n' "${out[@]}" | sort -n -u | tr '\n' ' '
}
# "0-1" -> "3"; wider masks in the kernel's comma-separated 32-bit groups ("1,00000003").
to_mask() {
  local cpu groups=() g top=0 mask_str=""
  for cpu in $(expand "$1"); do
    g=$((cpu / 32))
    groups[g]=$(( ${groups[g]:-0} | 1 << (cpu % 32) ))
    ((g > top)) && top=$g
  done
  for ((g = top; g >= 0; g--)); do
    if ((g == top)); then
      mask_str+=$(printf '%x' "${groups[g]:-0}")
    else
      mask_str+=$(printf ',%08x' "${groups[g]:-0}")
    fi
  done
  echo "$mask_str"
}

wanted=$(expand "$cpus")
moved=0 already=0 refused=0
shopt -s nullglob
for f in "$proc"/irq/[0-9]*/smp_affinity_list; do
  irq=$(basename -- "$(dirname -- "$f")")
  if [[ $(expand "$(<"$f")") == "$wanted" ]]; then
    already=$((already + 1))
  elif $check_only; then
    echo "irq: would move IRQ $irq from $(<"$f") to $cpus"
    moved=$((moved + 1))
  elif (echo "$cpus" >"$f") 2>/dev/null; then
    moved=$((moved + 1))
  else
    refused=$((refused + 1))
  fi
done

mask=$(to_mask "$cpus")
if [[ -w $proc/irq/default_smp_affinity ]] || $check_only; then
  if $check_only; then
    echo "irq: would set default_smp_affinity to $mask"
  else
    echo "$mask" >"$proc/irq/default_smp_affinity"
  fi
fi
verb=$($check_only && echo "would move" || echo "moved")
echo "irq: $verb $moved, already on $cpus: $already, not movable: $refused"
