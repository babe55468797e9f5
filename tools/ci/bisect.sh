#!/usr/bin/env bash
# bisect.yml: check|run|comment|record|dispatch (vkbench/ci/inputs.py, comment.py, record.py, dispatch.py).
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [[ "${1:-}" == check ]]; then ci inputs bisect; else ci "${1:-}" bisect "${@:2}"; fi
