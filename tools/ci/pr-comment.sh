#!/usr/bin/env bash
# Comment the A/B on its pull request (vkbench/ci/comment.py).
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ci comment pr
