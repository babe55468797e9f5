#!/usr/bin/env bash
# `docker compose config` on every compose file under compose/: catches a file compose itself
# would reject before a benchmark runner ever tries to start it (`config` only parses).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# The compose plugin of tools/setup/containers.sh when docker has none of its own.
if ! docker compose version >/dev/null 2>&1 && [[ -d .cache/containers/docker/cli-plugins ]]; then
  # shellcheck source=tools/containers-env.sh
  source tools/containers-env.sh
fi
# The stacks refuse to interpolate without a password: one for parsing only, masked first.
VALKEY_PASSWORD="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
[[ "${GITHUB_ACTIONS:-}" != true ]] || printf '::add-mask::%s\n' "$VALKEY_PASSWORD"
export VALKEY_PASSWORD
shopt -s nullglob
failed=0
for file in compose/*.yaml compose/*.yml; do
  if docker compose -f "$file" config --quiet; then echo "ok: $file"; else echo "::error title=compose config::docker compose rejects ${file}"; failed=1; fi
done
exit "$failed"
