#!/usr/bin/env bash
# The A/B of two commits (or a pull request) of a Valkey repository, for ab.yml.
#
#   tools/ci/ab.sh check   validate the inputs only (a GitHub-hosted job, before any runner is used)
#   tools/ci/ab.sh run     build both sides from source and run them interleaved (`vkbench ab`)
#
#   VKBENCH_AB_REPOSITORY  https URL of the Valkey repository (github.com or gitlab.com)
#   VKBENCH_AB_BASE        base: the full 40-hex SHA of a commit; a branch, tag or shorter commit
#                          only for the trusted repository
#   VKBENCH_AB_CANDIDATE   candidate, the same way; with VKBENCH_AB_PR, the full SHA of the head
#                          that was approved (the caller in docs/templates pins it): a pull request
#                          that moved since is refused, never built
#   VKBENCH_AB_PR          pull request number of that repository (or empty)
#   VKBENCH_AB_PRESET      cells (default ab); `specs-from-changes`: the catalog specs the files
#                          changed between base and candidate touch (vkbench ab --specs-from-changes);
#                          VKBENCH_AB_MAX_ROUNDS (default 20)
#   VKBENCH_AB_CELL        one cell (JSON) instead of the preset; VKBENCH_AB_CONFIRM a candidate id
#                          (the trusted repository only: its verdict goes into the history)
#   VKBENCH_MACHINE_CLASS  the runner class; VKBENCH_AB_DIR output (default vkbench-ab)
#   VKBENCH_BACKEND        run: the backend of vkbench ab (default native; teardown.sh reads it too)
#   VKBENCH_VALKEY_REPOSITORY / _BRANCH  the trusted repository and its branch (lib.sh; repository
#                          variables): check outputs trusted=true for a confirmation of it, and
#                          run then passes --require-branch (also when VKBENCH_AB_TRUSTED=true)
#
# What a reviewer approves is what runs: every commit of another repository (and a pull request's
# head, always) is a full SHA, and check writes them to the job summary the reviewer reads before
# approving. A branch name would build whatever was pushed to it after the approval.
# The inputs come from a dispatch form: they are checked against strict patterns and passed to
# vkbench as separate arguments, never through a shell string. No secret is in this job's env.
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mode="${1:-}"
repo="${VKBENCH_AB_REPOSITORY:-}"
base="${VKBENCH_AB_BASE:-}"
cand="${VKBENCH_AB_CANDIDATE:-}"
pr="${VKBENCH_AB_PR:-}"
preset="${VKBENCH_AB_PRESET:-ab}"
max_rounds="${VKBENCH_AB_MAX_ROUNDS:-20}"

fail() { ci_error "A/B inputs" "$1"; exit 2; }
[[ "$repo" =~ ^https://(github\.com|gitlab\.com)/[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+$ ]] \
  || fail "repository must be an https URL of a github.com or gitlab.com repository"
# The trusted repository (its branches are pushed only by its maintainers) may name refs; any
# other repository's refs are the full commit SHAs the reviewer approves (docs/security.md).
ci_trusted_source || exit 2
ci_check_commit base "$base" "$repo" || exit 2
if [[ -n "$pr" ]]; then
  [[ "$pr" =~ ^[1-9][0-9]{0,6}$ ]] || fail "pr must be a pull request number"
  ci_is_full_sha "$cand" \
    || fail "with pr, candidate must be the full SHA of the pull request's head commit that was approved"
else
  [[ -n "$cand" ]] || fail "candidate must be a commit (or give pr)"
  ci_check_commit candidate "$cand" "$repo" || exit 2
fi
[[ "$preset" =~ ^[a-z0-9][a-z0-9-]{0,39}$ ]] || fail "preset must be a preset name (letters, digits and -, not starting with -)"
confirm="${VKBENCH_AB_CONFIRM:-}"
[[ -z "$confirm" || "$confirm" =~ ^confirm-[0-9a-f]{12}$ ]] || fail "confirm must be confirm-<12 hex>"
# A confirmation's verdict goes into the history: never from a pull request's code, and only for
# the nightly's own candidates, which are commits of the trusted repository.
[[ -z "$confirm" || -z "$pr" ]] || fail "confirm is for the nightly's own candidates, never a pull request"
[[ -z "$confirm" || "$repo" == "$CI_TRUSTED_REPOSITORY" ]] \
  || fail "confirm is for the nightly's own candidates: the repository must be the trusted one (VKBENCH_VALKEY_REPOSITORY)"
cell="${VKBENCH_AB_CELL:-}"
ci_check_cell cell "$cell" || exit 2
[[ "$preset" != specs-from-changes || -z "$cell" ]] || fail "give one of cell and preset specs-from-changes"
if [[ ! "$max_rounds" =~ ^[0-9]{1,3}$ ]] || (( max_rounds < 4 || max_rounds > 200 )); then
  fail "max_rounds must be 4..200"
fi
# runs-on and the runner's concurrency group take it: a declared class only (runners/classes.yaml).
ci_check_runner_class runner_class "${VKBENCH_MACHINE_CLASS:-}" || exit 2
# The nightly's own confirmation of two commits of the trusted repository runs like the nightly
# (environment benchmark-nightly, no reviewer), once `vkbench ab --require-branch` has checked
# that both are merged; anything else waits for a reviewer of `benchmark` (docs/security.md).
trusted=false
ci_trusted_followup "$repo" "$confirm" && trusted=true

case "$mode" in
  check)
    ci_untrusted_log "A/B of ${repo}: base ${base}, candidate ${pr:+pull request #${pr} }${cand}"
    if [[ "$trusted" == true ]]; then
      echo "trusted: a confirmation of two commits of the nightly's repository (checked on its branch before building)"
    fi
    # What the reviewer of `benchmark` approves: exactly these commits are built.
    {
      printf '## A/B to approve\n\n| | |\n| --- | --- |\n'
      printf '| repository | %s |\n' "$(ci_md_text "$repo")"
      printf '| base | %s |\n' "$(ci_md_commit "$base")"
      if [[ -n "$pr" ]]; then
        printf '| candidate | pull request #%s at commit %s (refused if its head moved) |\n' "$pr" "$(ci_md_text "$cand")"
      else
        printf '| candidate | %s |\n' "$(ci_md_commit "$cand")"
      fi
      if [[ "$trusted" == true ]]; then
        printf '\nTrusted: the confirmation %s of two commits of the trusted repository (runs without a reviewer once both are checked on its branch).\n' \
          "$(ci_md_text "$confirm")"
      fi
      printf '\n'
    } | ci_summary
    ci_output trusted "$trusted"
    exit 0 ;;
  run) ;;
  *) ci_error "A/B" "usage: tools/ci/ab.sh check|run"; exit 2 ;;
esac

[[ -n "${VKBENCH_MACHINE_CLASS:-}" ]] || fail "VKBENCH_MACHINE_CLASS is empty"
dir="${VKBENCH_AB_DIR:-vkbench-ab}"
args=(ab --repo "$repo" --base "$base" --max-rounds "$max_rounds"
  --machine-class "$VKBENCH_MACHINE_CLASS" --out "$dir" --backend "${VKBENCH_BACKEND:-native}")
if [[ "$preset" == specs-from-changes ]]; then
  # The candidate is a commit here (with pr: the approved head's full SHA): what the PR changes.
  args+=(--specs-from-changes "${base}..${cand}")
else
  args+=(--preset "$preset")
fi
if [[ -n "$pr" ]]; then
  args+=(--pr "$pr")
  [[ -n "$cand" ]] && args+=(--pr-head "$cand")
else
  args+=(--candidate "$cand")
fi
[[ -n "$cell" ]] && args+=(--cell "$cell")
# The inputs job chose the environment from the same inputs (VKBENCH_AB_TRUSTED, its output):
# either one saying "trusted" means both commits must be on the trusted repository's branch.
if [[ "$trusted" == true || "${VKBENCH_AB_TRUSTED:-false}" == true ]]; then
  args+=(--require-branch "$CI_TRUSTED_BRANCH")
fi
# vkbench ab appends its table to $GITHUB_STEP_SUMMARY itself.
"$VKBENCH" "${args[@]}"
