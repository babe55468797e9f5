#!/usr/bin/env bash
# The weekly digest (digest.yml): what moved in the published history over the last week,
# opened (or, on a re-run, updated) as one GitHub issue, and written to the job summary.
#
#   GITHUB_REPOSITORY             where the issue goes (owner/name)
#   GITHUB_TOKEN                  a token with issues: write, only in this step's env
#   VKBENCH_DIGEST_SINCE          the window (default 7d)
#   VKBENCH_API_URL               default $GITHUB_API_URL
#   VKBENCH_PAGES_REPO/_BRANCH    where the history is (see lib.sh)
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ -z "${GITHUB_REPOSITORY:-}" ]]; then
  ci_error "digest" "GITHUB_REPOSITORY (owner/name) is empty"
  exit 2
fi

ci_git_auth
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
ci_clone_pages "$work/pages"

args=(digest --history "$work/pages/history" --since "${VKBENCH_DIGEST_SINCE:-7d}" --out "$work/digest.md"
      --repo "$GITHUB_REPOSITORY" --token-env GITHUB_TOKEN)
api="${VKBENCH_API_URL:-${GITHUB_API_URL:-}}"
[[ -n "$api" ]] && args+=(--api-url "$api")
[[ -f "$CI_REPO_ROOT/results/annotations.yaml" ]] && args+=(--annotations "$CI_REPO_ROOT/results/annotations.yaml")
"$VKBENCH" "${args[@]}"
ci_summary <"$work/digest.md"
