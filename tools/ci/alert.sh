#!/usr/bin/env bash
# The alert job: one issue per regression incident (vkbench/ci/issues.py).
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ci alert
