#!/usr/bin/env bash
# Put the server and benchmark tool one cell needs into the vkbench binary cache.
#
#   VKBENCH_CELL   the cell JSON (the matrix entry's `cell`), passed through env
#
# Releases come from the cache or a registry; a git ref (valkey:unstable, a branch) is built
# from source by `vkbench servers fetch` itself. A moving ref is rebuilt once per workflow run
# and machine (a stamp holds the run id), so every cell of one run on one machine measures the
# same build, and tomorrow's run measures tomorrow's commit.
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ -z "${VKBENCH_CELL:-}" ]]; then
  ci_error "fetch" "VKBENCH_CELL is empty"
  exit 2
fi

py="$(ci_python)"
# server (engine:version) and tool; the compact cell JSON leaves defaults out.
read -r server tool < <("$py" -c '
import json, sys
cell = json.loads(sys.argv[1])
print(cell["server"], cell.get("tool") or "valkey-benchmark")
' "$VKBENCH_CELL")
engine="${server%%:*}"
version="${server#*:}"

refresh=()
if [[ ! "$version" =~ ^[0-9]+(\.[0-9]+)*$ && ! "$version" =~ ^[0-9a-f]{40}$ && "$version" != /* ]]; then
  stamp_dir="${VKBENCH_CACHE:-$HOME/.cache/vkbench}/ci-stamps"
  stamp="$stamp_dir/${engine}-${version//\//_}.run"
  run="${GITHUB_RUN_ID:-local}"
  if [[ "$(cat "$stamp" 2>/dev/null || true)" != "$run" ]]; then
    refresh=(--refresh)
  fi
fi

"$VKBENCH" servers fetch "$engine" "$version" "${refresh[@]}"
if [[ ${#refresh[@]} -gt 0 ]]; then
  mkdir -p "$stamp_dir"
  printf '%s\n' "$run" >"$stamp"
fi

tools=(--tool "$tool")
# valkey-cli creates clusters and replicas; fetch it whenever the tool is valkey's.
[[ "$tool" == valkey-benchmark ]] && tools+=(--tool valkey-cli)
"$VKBENCH" servers fetch "${tools[@]}"
