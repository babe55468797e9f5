#!/usr/bin/env bash
# Job-started check for Raspberry Pi runners: fail the job when the SoC is throttled or hot.
#
# A throttled Pi runs slower than its configured clock, so its numbers are not comparable
# with any other run. `vcgencmd get_throttled` reports (bit: meaning):
#   0 under-voltage now      1 ARM frequency capped now   2 throttled now   3 soft temp limit now
#   16-19: the same four, at some point since boot.
# A current condition (bits 0-3) or a temperature above --max-temp-c fails the check after
# waiting up to --cooldown-wait-s for it to clear (heat clears; under-voltage means a better
# power supply). Past conditions (bits 16-19) are a warning, or a failure with
# --fail-on-past-throttling. The clock and temperature are printed into the job log either
# way, so a result can be traced to the frequency it ran at (overclocked or not).
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: check-pi-throttling.sh [--max-temp-c N] [--cooldown-wait-s N] [--fail-on-past-throttling]
  --max-temp-c N             highest acceptable SoC temperature, whole degrees C (default 75)
  --cooldown-wait-s N        wait this long for heat-related throttling to clear (default 180)
  --fail-on-past-throttling  also fail when throttling happened earlier since boot
USAGE
}

max_temp_c=75
cooldown_wait_s=180
fail_on_past=false
while [[ $# -gt 0 ]]; do
  case $1 in
    --max-temp-c) max_temp_c=$2; shift 2 ;;
    --cooldown-wait-s) cooldown_wait_s=$2; shift 2 ;;
    --fail-on-past-throttling) fail_on_past=true; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "check-pi-throttling: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done
[[ $max_temp_c =~ ^[0-9]+$ && $cooldown_wait_s =~ ^[0-9]+$ ]] \
  || { echo "check-pi-throttling: --max-temp-c and --cooldown-wait-s take whole numbers" >&2; exit 2; }

if ! command -v vcgencmd >/dev/null 2>&1; then
  echo "check-pi-throttling: vcgencmd not found; this check is for Raspberry Pi OS (package raspi-utils / libraspberrypi-bin)" >&2
  exit 1
fi

# throttled=0x50005 -> 327685
read_throttled() {
  local out
  out=$(vcgencmd get_throttled)
  [[ $out =~ throttled=(0x[0-9a-fA-F]+) ]] || { echo "check-pi-throttling: cannot parse '$out'" >&2; exit 1; }
  echo $((BASH_REMATCH[1]))
}
# temp=48.3'C -> 483 (tenths of a degree: bash has no floats)
read_temp_tenths() {
  local out
  out=$(vcgencmd measure_temp)
  [[ $out =~ temp=([0-9]+)\.([0-9]) ]] || { echo "check-pi-throttling: cannot parse '$out'" >&2; exit 1; }
  echo $((10#${BASH_REMATCH[1]} * 10 + 10#${BASH_REMATCH[2]}))
}
describe() {
  local bits=$1 offset=$2 reasons=()
  ((bits >> offset & 1)) && reasons+=("under-voltage")
  ((bits >> (offset + 1) & 1)) && reasons+=("ARM frequency capped")
  ((bits >> (offset + 2) & 1)) && reasons+=("throttled")
  ((bits >> (offset + 3) & 1)) && reasons+=("soft temperature limit")
  local IFS=,
  echo "${reasons[*]}"
}

max_tenths=$((max_temp_c * 10))
deadline=$((SECONDS + cooldown_wait_s))
while :; do
  throttled=$(read_throttled)
  temp=$(read_temp_tenths)
  now_bits=$((throttled & 0xF))
  if ((now_bits == 0 && temp <= max_tenths)) || ((SECONDS >= deadline)); then
    break
  fi
  echo "pi: waiting to cool down: $((temp / 10)).$((temp % 10))C, throttled=$(printf '0x%x' "$throttled")"
  sleep 10
done

clock=$(vcgencmd measure_clock arm 2>/dev/null || true)
echo "pi: temp=$((temp / 10)).$((temp % 10))C max=${max_temp_c}C throttled=$(printf '0x%x' "$throttled") arm ${clock:-clock unknown}"

status=0
if ((now_bits != 0)); then
  echo "::error title=Pi throttled::$(hostname -s) is throttled now: $(describe "$throttled" 0)"
  status=1
fi
if ((temp > max_tenths)); then
  echo "::error title=Pi too hot::$(hostname -s) is at $((temp / 10)).$((temp % 10))C after ${cooldown_wait_s}s, above ${max_temp_c}C: check the cooling"
  status=1
fi
past_bits=$((throttled >> 16 & 0xF))
if ((past_bits != 0)); then
  if $fail_on_past; then
    echo "::error title=Pi throttled earlier::$(hostname -s) was throttled since boot: $(describe "$throttled" 16)"
    status=1
  else
    echo "::warning title=Pi throttled earlier::$(hostname -s) was throttled since boot: $(describe "$throttled" 16)"
  fi
fi
exit "$status"
