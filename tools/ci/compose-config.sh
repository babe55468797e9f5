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

# The compose plugin of tools/setup/containers.sh when docker has none of its own
# (`config` only parses; it never talks to an engine).
if ! docker compose version >/dev/null 2>&1 && [[ -d "$CI_REPO_ROOT/.cache/containers/docker/cli-plugins" ]]; then
  # shellcheck source=tools/containers-env.sh
  source "$CI_REPO_ROOT/tools/containers-env.sh"
fi

# The stacks refuse to interpolate without a password. This one is generated here, used for
# parsing only, and masked before anything could print it (`--quiet` prints nothing anyway).
VALKEY_PASSWORD="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
if ci_in_actions; then
  printf '::add-mask::%s\n' "$VALKEY_PASSWORD"
fi
export VALKEY_PASSWORD

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
