#!/usr/bin/env bash
# The bisect of a regression, for bisect.yml, and its automatic start from the nightly.
#
#   tools/ci/bisect.sh check     validate the inputs only (a GitHub-hosted job, before the wheel is
#                                built): `vkbench ci inputs bisect`; outputs trusted=true|false
#   tools/ci/bisect.sh run       check again, then `vkbench bisect` (builds from source, A/B per step)
#   tools/ci/bisect.sh comment   post bisect.md on the incident's issue (GH_TOKEN, GITHUB_REPOSITORY)
#   tools/ci/bisect.sh record    record bisect.json under the incident in the history on gh-pages
#                                (history/bisects.json, then detection again) and push, retrying a
#                                lost race (GITHUB_TOKEN with contents: write)
#   tools/ci/bisect.sh dispatch  after `vkbench alert` (benchmark.yml, ab.yml): one bisect.yml run per
#                                regression issue alert opened whose incident lies between two
#                                commits of the trusted repository (GH_TOKEN with actions: write)
#
#   VKBENCH_BISECT_REPOSITORY  https URL of the Valkey repository (github.com or gitlab.com)
#   VKBENCH_BISECT_GOOD / _BAD the ends of the range: full 40-hex commit SHAs (what the reviewer
#                              approves is what runs: check writes them to the job summary); a
#                              branch, tag or shorter commit only for the trusted repository
#   VKBENCH_BISECT_PRESET      cells (default ab); VKBENCH_BISECT_CELL one cell (JSON) instead
#   VKBENCH_BISECT_ISSUE       incident issue number (optional)
#   VKBENCH_BISECT_INCIDENT    incident id in detect.json (optional; set by dispatch): with the
#                              trusted repository, the run is trusted and record keys the result by it
#   VKBENCH_BISECT_TRUSTED     run: the inputs job's verdict (true: --require-branch, as when trusted)
#   VKBENCH_MACHINE_CLASS      the runner class; VKBENCH_BISECT_DIR output (default vkbench-bisect)
#   VKBENCH_ALERT_ACTIONS      dispatch: `vkbench alert --actions-out` of the alert job (default
#                              vkbench-alert/actions.json)
#   VKBENCH_VALKEY_REPOSITORY / _BRANCH  the trusted repository and its branch (lib.sh)
#   VKBENCH_PAGES_REPO/_BRANCH where the history is (lib.sh)
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case "${1:-}" in
  check) "$VKBENCH" ci inputs bisect --runner-classes "$CI_RUNNER_CLASSES" ;;
  run) "$VKBENCH" ci run bisect --runner-classes "$CI_RUNNER_CLASSES" "${@:2}" ;;
  comment) "$VKBENCH" ci comment bisect ;;
  record) ci_record bisect ;;
  dispatch)
    ci_git_auth
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    if [[ -s "${VKBENCH_ALERT_ACTIONS:-vkbench-alert/actions.json}" ]]; then ci_clone_pages "$work/pages"; fi
    "$VKBENCH" ci dispatch bisect --history "$work/pages/history" --runner-classes "$CI_RUNNER_CLASSES" ;;
  *) ci_error "bisect" "usage: tools/ci/bisect.sh check|run|comment|record|dispatch"; exit 2 ;;
esac
