#!/usr/bin/env bash
# The bench job: run one cell (vkbench/ci/bench.py).
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ci_container_env
ci cell
