#!/usr/bin/env bash
# Post the A/B comparison on the pull request and take the trigger label off, so adding the
# label again starts a new run (`vkbench ci comment pr`: bench/vkbench/ci/comment.py names the
# VKBENCH_* variables it reads). Runs on a GitHub-hosted runner; GH_TOKEN is a token allowed to
# comment on the pull request's repository (none: a warning, nothing is posted).
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
"$VKBENCH" ci comment pr
