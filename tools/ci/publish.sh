#!/usr/bin/env bash
# The publish job: results into the history, detection into the summary (vkbench/ci/publish.py).
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ci publish
