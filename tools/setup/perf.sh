#!/usr/bin/env bash
# Install Debian's linux-perf for `vkbench run --profile` (perf record -g on the servers) and
# its tests. Idempotent: a second run only checks that perf can record.
#
# Where perf cannot record (not root and perf_event_paranoid too high, or no perf events in a
# container), this says so and exits 0: vkbench records "unavailable"/"failed" in the result
# and carries on, and the profile test fails with perf's own reason.
set -euo pipefail

if ! command -v perf >/dev/null; then
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
  echo "installing Debian linux-perf (apt-get)..."
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends linux-perf >/dev/null
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if perf record -g -F 499 -o "$tmp/perf.data" -- sleep 0.2 >"$tmp/log" 2>&1; then
  echo "perf ok: $(perf version 2>/dev/null)"
else
  echo "warning: perf is installed but cannot record here: $(tail -n 3 "$tmp/log" | tr '\n' ' ')" >&2
  echo "  hint: run as root or lower /proc/sys/kernel/perf_event_paranoid (vkbench run --profile records the reason and carries on)" >&2
fi
