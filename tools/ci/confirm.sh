#!/usr/bin/env bash
# After publish: dispatch|record the confirmation A/Bs (vkbench/ci/dispatch.py, record.py).
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ci "${1:-}" confirm
