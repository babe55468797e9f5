#!/usr/bin/env bash
# The plan job: the preset as the job matrix (vkbench/ci/plan.py).
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ci plan
