#!/usr/bin/env bash
# ab.yml: check|run the A/B's inputs (vkbench/ci/inputs.py, trust.py; docs/security.md).
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [[ "${1:-}" == check ]]; then ci inputs ab; else ci "${1:-}" ab "${@:2}"; fi
