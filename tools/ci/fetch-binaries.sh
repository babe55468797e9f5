#!/usr/bin/env bash
# The bench job: the cell's server and tool into the cache (vkbench/ci/bench.py).
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ci fetch
