#!/usr/bin/env bash
# Same-night confirmation of detection candidates (docs/detection.md).
#
#   tools/ci/confirm.sh dispatch   after publish: one ab.yml run per candidate waiting in the
#                                  published detect.json (`vkbench ci dispatch confirm`; GH_TOKEN
#                                  with actions: write)
#   tools/ci/confirm.sh record     in ab.yml after a confirmation A/B: record its verdict in the
#                                  history and push, retrying a lost race (`vkbench ci record
#                                  confirm`; GITHUB_TOKEN with contents: write)
#
#   VKBENCH_CONFIRM_ID     record: the request id (confirm-<12 hex>)
#   VKBENCH_AB_DIR         record: the downloaded A/B (ab.json); default vkbench-ab
#   VKBENCH_PAGES_REPO/_BRANCH  where the history is (lib.sh)
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case "${1:-}" in
  dispatch)
    ci_git_auth
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    ci_clone_pages "$work/pages"
    "$VKBENCH" ci dispatch confirm --history "$work/pages/history" ;;
  record) ci_record confirm ;;
  *) ci_error "confirm" "usage: tools/ci/confirm.sh dispatch|record"; exit 2 ;;
esac
