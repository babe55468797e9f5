#!/usr/bin/env bash
# The A/B of two commits (or a pull request) of a Valkey repository, for ab.yml.
#
#   tools/ci/ab.sh check   validate the dispatch inputs (a GitHub-hosted job, before any runner is
#                          used and before the wheel is built): `vkbench ci inputs ab`
#   tools/ci/ab.sh run     check them again, build both sides and run them: `vkbench ci run ab`
#                          (`run --print-argv`: print that vkbench command as JSON instead)
#
# The inputs (VKBENCH_AB_*, VKBENCH_MACHINE_CLASS), the trust policy and the job summary a reviewer
# approves are described in bench/vkbench/ci/inputs.py and ci/trust.py (docs/security.md).
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case "${1:-}" in
  check) "$VKBENCH" ci inputs ab --runner-classes "$CI_RUNNER_CLASSES" ;;
  run) "$VKBENCH" ci run ab --runner-classes "$CI_RUNNER_CLASSES" "${@:2}" ;;
  *) ci_error "A/B" "usage: tools/ci/ab.sh check|run"; exit 2 ;;
esac
