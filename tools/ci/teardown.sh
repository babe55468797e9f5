#!/usr/bin/env bash
# `if: always()` step after a cell: remove whatever a cancelled or crashed run left behind
# (containers, networks, volumes, server processes), so the next job on this self-hosted
# runner starts clean. Never fails the job: the run's own result is what matters.
set -uo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ci_container_env
if ! "$VKBENCH" run --backend "${VKBENCH_BACKEND:-compose}" --cleanup-only; then
  ci_warning "teardown" "vkbench run --cleanup-only failed; the runner may hold leftovers of this job"
fi
exit 0
