#!/usr/bin/env bash
# The `alert` job: open, update or close one GitHub issue per regression incident found in the
# published history. Runs in its own job so that `issues: write` is granted nowhere else.
#
#   GITHUB_REPOSITORY             where the issues go (owner/name)
#   GITHUB_TOKEN                  a token with issues: write, only in this step's env
#   VKBENCH_API_URL               default $GITHUB_API_URL (the local chain test points it at a fake)
#   VKBENCH_PAGES_REPO/_BRANCH    where the history is (see lib.sh)
#   VKBENCH_FAIL_ON_REGRESSION    "true": fail the job while a regression is open
#   VKBENCH_ALERT_ACTIONS         also write what was done (vkbench alert --actions-out) to this
#                                 file: the next job dispatches bisects of the issues opened
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ -z "${GITHUB_REPOSITORY:-}" ]]; then
  ci_error "alert" "GITHUB_REPOSITORY (owner/name) is empty"
  exit 2
fi

ci_git_auth
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
ci_clone_pages "$work/pages"

args=(alert --repo "$GITHUB_REPOSITORY" --history "$work/pages/history" --token-env GITHUB_TOKEN)
api="${VKBENCH_API_URL:-${GITHUB_API_URL:-}}"
[[ -n "$api" ]] && args+=(--api-url "$api")
[[ -n "${GITHUB_SERVER_URL:-}" ]] && args+=(--server-url "$GITHUB_SERVER_URL")
[[ "${VKBENCH_FAIL_ON_REGRESSION:-false}" == "true" ]] && args+=(--fail-on regression)
[[ -n "${VKBENCH_ALERT_ACTIONS:-}" ]] && args+=(--actions-out "$VKBENCH_ALERT_ACTIONS")

status=0
output="$("$VKBENCH" "${args[@]}")" || status=$?
printf '%s\n' "$output"
{
  printf '## Regression alerts\n\n'
  printf '%s\n' "${output:-no incident changed}"
} | ci_summary
# A failure (10: an open regression) was annotated by vkbench itself, with its hint.
exit "$status"
