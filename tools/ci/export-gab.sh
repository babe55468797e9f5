#!/usr/bin/env bash
# github-action-benchmark's input files (vkbench/ci/publish.py).
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ci export-gab
