#!/usr/bin/env bash
# `docker compose config` on every compose file under compose/: catches a file that compose
# itself would reject before a benchmark runner ever tries to start it.
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$CI_REPO_ROOT"

shopt -s nullglob
files=(compose/*.yaml compose/*.yml)
if [[ ${#files[@]} -eq 0 ]]; then
  echo "no compose files under compose/; nothing to check"
  exit 0
fi
failed=0
for file in "${files[@]}"; do
  if docker compose -f "$file" config --quiet; then
    echo "ok: $file"
  else
    ci_error "compose config" "docker compose rejects ${file}"
    failed=1
  fi
done
exit "$failed"
