#!/usr/bin/env bash
# Post the A/B comparison on the pull request and take the trigger label off, so adding the
# label again starts a new run. Runs on a GitHub-hosted runner with pull-requests: write.
#
#   VKBENCH_PR_NUMBER         the pull request
#   VKBENCH_AB_DIR            the downloaded A/B artifact (ab.md of `vkbench ab`); default vkbench-ab
#   VKBENCH_AB_RESULT         result of the A/B job (success, failure, cancelled)
#   VKBENCH_LABEL             label to remove; default run-benchmark
#   VKBENCH_WORKFLOW_RUN_URL  link to the run
#   VKBENCH_PR_REPO           OWNER/NAME of the pull request's repository (default GITHUB_REPOSITORY)
#   GH_TOKEN                  a token allowed to comment there; empty: nothing is posted
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ ! "${VKBENCH_PR_NUMBER:-}" =~ ^[0-9]+$ ]]; then
  ci_error "comment" "VKBENCH_PR_NUMBER must be a number"
  exit 2
fi
dir="${VKBENCH_AB_DIR:-vkbench-ab}"
repo="${VKBENCH_PR_REPO:-${GITHUB_REPOSITORY:-}}"
# Exactly OWNER/NAME: it becomes part of the API path, where another segment or a . or ..
# (a path the server normalises) would post somewhere else.
if [[ ! "$repo" =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ || "$repo" == *..* || "${repo%%/*}" == . || "${repo#*/}" == . ]]; then
  ci_error "comment" "VKBENCH_PR_REPO must be OWNER/NAME"
  exit 2
fi
if [[ -z "${GH_TOKEN:-}" ]]; then
  ci_warning "comment" "no token for ${repo} is configured: the table is in the job summary only"
  exit 0
fi
table="$dir/ab.md"
[[ -s "$table" ]] || table="$dir/compare.md"
label="${VKBENCH_LABEL:-run-benchmark}"
[[ "$label" =~ ^[A-Za-z0-9_.-]{1,50}$ ]] || { ci_error "comment" "VKBENCH_LABEL must be a plain label name"; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

{
  printf '### vkbench A/B: base vs this PR\n\n'
  printf 'Job result: **%s** · [workflow run](%s)\n\n' "${VKBENCH_AB_RESULT:-unknown}" "${VKBENCH_WORKFLOW_RUN_URL:-}"
  if [[ -s "$table" ]]; then
    # A comment holds at most 65536 characters; the full table stays in the artifact.
    head -c 60000 "$table"
  else
    printf 'No comparison was produced; see the workflow run.\n'
  fi
} >"$work/body.md"
ci_comment_json "$work/body.md" >"$work/comment.json"

ci_github_api POST "/repos/${repo}/issues/${VKBENCH_PR_NUMBER}/comments" "$work/comment.json" >/dev/null
# Taking the label off lets a maintainer start a new run by adding it again.
if ! ci_github_api DELETE "/repos/${repo}/issues/${VKBENCH_PR_NUMBER}/labels/${label}" >/dev/null; then
  ci_warning "label" "could not remove the ${label} label"
fi
