#!/usr/bin/env bash
# The `plan` job: expand a preset into the GitHub job matrix, one job per cell. The inputs
# (VKBENCH_PRESET, VKBENCH_VERSIONS, ...) are checked by `vkbench ci plan` (vkbench/ci/plan.py).
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
exec "$VKBENCH" ci plan --runner-classes "${VKBENCH_RUNNER_CLASSES_FILE:-$CI_REPO_ROOT/runners/classes.yaml}"
