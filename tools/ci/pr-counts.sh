#!/usr/bin/env bash
# pr-counts.yml: setup (build tools, valgrind, vkbench) | run (vkbench/ci/counts.py, as root).
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [[ "${1:-}" != setup ]]; then ci counts; exit; fi
if [[ $(id -u) -ne 0 ]]; then sudo -n "$CI_REPO_ROOT/tools/setup/build.sh"; else "$CI_REPO_ROOT/tools/setup/build.sh"; fi
"$CI_REPO_ROOT/tools/setup.sh"
