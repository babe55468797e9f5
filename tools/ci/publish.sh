#!/usr/bin/env bash
# The `publish` job: ingest this run's results into the gh-pages branch (history/), detect
# change points, rebuild the site, commit and push (vkbench publish retries a rejected push),
# then put the detection report into the job summary.
#
#   VKBENCH_RESULTS_DIR   downloaded result files; default vkbench-results
#   VKBENCH_PAGES_REPO    git URL or path of the pages repository; default this repo on GitHub
#   VKBENCH_PAGES_BRANCH  default gh-pages
#   VKBENCH_SITE_OUT      where the built site is also left locally; default site
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
# Commits made by vkbench publish need an identity; a runner has none configured.
export GIT_AUTHOR_NAME="${GIT_AUTHOR_NAME:-github-actions[bot]}"
export GIT_AUTHOR_EMAIL="${GIT_AUTHOR_EMAIL:-41898282+github-actions[bot]@users.noreply.github.com}"
export GIT_COMMITTER_NAME="${GIT_COMMITTER_NAME:-$GIT_AUTHOR_NAME}"
export GIT_COMMITTER_EMAIL="${GIT_COMMITTER_EMAIL:-$GIT_AUTHOR_EMAIL}"

status=0
"$VKBENCH" publish "$results" --repo-dir "$remote" --branch "$branch" --detect --site-out "$site" || status=$?
if [[ $status -eq 8 ]]; then
  ci_error "Publish lost the race" "the push to ${branch} was rejected on every retry; re-run the publish job (the results are still in the run's artifacts)"
  exit 8
elif [[ $status -ne 0 ]]; then
  ci_error "vkbench publish failed" "exit ${status}"
  exit "$status"
fi

# The summary reads what is now on the branch, not a local copy: it shows what readers see.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
ci_clone_pages "$work/pages"
{
  printf '## Benchmark history updated\n\n'
  # shellcheck disable=SC2016 # the backticks are Markdown
  printf 'Published %s result file(s) to `%s`.\n\n' "$(find "$results" -maxdepth 1 -name '*.json' | wc -l | tr -d ' ')" "$branch"
  "$VKBENCH" detect --history "$work/pages/history" --format markdown
} | ci_summary
