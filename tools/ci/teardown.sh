#!/usr/bin/env bash
# `if: always()` after a cell: remove what a cancelled or crashed run left behind, so the next job
# on this self-hosted runner starts clean. Never fails the job: the run's own result is what matters.
set -uo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ci_container_env
"$VKBENCH" run --backend "${VKBENCH_BACKEND:-compose}" --cleanup-only || echo "::warning title=teardown::vkbench run --cleanup-only failed; the runner may hold leftovers of this job"
exit 0
