#!/usr/bin/env bash
# The `publish` job: ingest this run's results into the gh-pages branch (history/), detect
# change points, rebuild the site, commit and push (vkbench publish retries a rejected push),
# then put the detection report into the job summary.
#
#   VKBENCH_RESULTS_DIR   downloaded result files; default vkbench-results
#   VKBENCH_PAGES_REPO    git URL or path of the pages repository; default this repo on GitHub
#   VKBENCH_PAGES_BRANCH  default gh-pages
#   VKBENCH_SITE_OUT      folder of the branch the site is built into; default site
#   VKBENCH_DATA_BRANCH   if set, the history lives on this (unpublished) branch and the pages
#                         branch holds only the site (`vkbench history split` migrates)
#   VKBENCH_KEEP_RAW_DAYS, VKBENCH_KEEP_RESULTS_DAYS  retention of raw outputs and result
#                         copies in the history (default: kept forever; series points always are)
#   GITHUB_TOKEN          a token that may push (contents: write), only in this step's env
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

results="${VKBENCH_RESULTS_DIR:-vkbench-results}"
branch="${VKBENCH_PAGES_BRANCH:-gh-pages}"
site="${VKBENCH_SITE_OUT:-site}"

if ! compgen -G "$results/*.json" >/dev/null; then
  ci_error "Nothing to publish" "no result files in ${results}: every bench job failed or uploaded nothing"
  exit 1
fi

ci_git_auth
remote="$(ci_pages_remote)"
# Detection honours the known changes recorded in the repository (docs/workflows.md).
annotations=()
if [[ -f "$CI_REPO_ROOT/results/annotations.yaml" ]]; then
  annotations=(--annotations "$CI_REPO_ROOT/results/annotations.yaml")
fi

branches=(--branch "$branch")
if [[ -n "${VKBENCH_DATA_BRANCH:-}" ]]; then
  branches=(--branch "$VKBENCH_DATA_BRANCH" --site-branch "$branch")
fi
retention=()
if [[ -n "${VKBENCH_KEEP_RAW_DAYS:-}" ]]; then retention+=(--keep-raw-days "$VKBENCH_KEEP_RAW_DAYS"); fi
if [[ -n "${VKBENCH_KEEP_RESULTS_DAYS:-}" ]]; then retention+=(--keep-results-days "$VKBENCH_KEEP_RESULTS_DAYS"); fi

# The checkout is kept in $work so the summary reads exactly what was pushed.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
status=0
"$VKBENCH" publish "$results" --strict --repo-dir "$remote" "${branches[@]}" --detect "${annotations[@]}" "${retention[@]}" \
  --site-out "$site" --workdir "$work/pages" || status=$?
# --strict: a result already on the branch with other numbers fails the job (exit 13), never
# dropped silently. A failure (8: the push lost every race; 13) was annotated by vkbench itself, with its hint.
[[ $status -eq 0 ]] || exit "$status"

{
  printf '## Benchmark history updated\n\n'
  # shellcheck disable=SC2016 # the backticks are Markdown
  printf 'Published %s result file(s) to `%s`.\n\n' "$(find "$results" -maxdepth 1 -name '*.json' | wc -l | tr -d ' ')" "$branch"
  "$VKBENCH" detect --history "$work/pages/history" --format markdown --no-write "${annotations[@]}"
  # io-threads advice from the newest sweep of each machine class (empty when none swept);
  # a failure here must not hide the detection report above.
  "$VKBENCH" advise --history "$work/pages/history" --format markdown || echo "(io-threads advice unavailable: see the publish log)"
} | ci_summary
