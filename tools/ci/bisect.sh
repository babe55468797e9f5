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

mode="${1:-}"
dir="${VKBENCH_BISECT_DIR:-vkbench-bisect}"
issue="${VKBENCH_BISECT_ISSUE:-}"
incident="${VKBENCH_BISECT_INCIDENT:-}"
fail() { ci_error "bisect inputs" "$1"; exit 2; }
[[ -z "$issue" || "$issue" =~ ^[1-9][0-9]{0,6}$ ]] || fail "incident_issue must be an issue number"
# An incident id of detect.json: 12 hex, or inc-<12 hex> for one a confirmation A/B opened.
[[ -z "$incident" || "$incident" =~ ^(inc-)?[0-9a-f]{12}$ ]] || fail "incident must be an incident id (12 hex or inc-<12 hex>)"
github_repository() {
  [[ "${GITHUB_REPOSITORY:-}" =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ ]] || fail "GITHUB_REPOSITORY must be OWNER/NAME"
}

case "$mode" in
  comment)
    [[ -n "$issue" ]] || exit 0
    if [[ ! -s "$dir/bisect.md" ]]; then
      ci_warning "bisect" "no bisect.md was produced; nothing to comment"
      exit 0
    fi
    github_repository
    body="$(mktemp)"
    trap 'rm -f "$body"' EXIT
    ci_comment_json "$dir/bisect.md" >"$body"
    ci_github_api POST "/repos/${GITHUB_REPOSITORY}/issues/${issue}/comments" "$body" >/dev/null
    exit 0 ;;
  record)
    [[ -n "$incident" ]] || fail "record needs VKBENCH_BISECT_INCIDENT (the incident id)"
    report="$dir/bisect.json"
    [[ -s "$report" ]] || { ci_error "bisect" "no bisect.json: the bisect failed, nothing to record"; exit 1; }
    ci_git_auth
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    args=(bisect-record --history "$work/pages/history" --incident "$incident" --bisect "$report")
    [[ -n "${VKBENCH_WORKFLOW_RUN_URL:-}" ]] && args+=(--run-url "$VKBENCH_WORKFLOW_RUN_URL")
    # Detection honours the known changes recorded in the repository, as publish does.
    [[ -f "$CI_REPO_ROOT/results/annotations.yaml" ]] && args+=(--annotations "$CI_REPO_ROOT/results/annotations.yaml")
    site="${VKBENCH_SITE_OUT:-site}"
    [[ "$site" =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$ ]] || fail "VKBENCH_SITE_OUT must be a folder name of the pages branch"
    # shellcheck disable=SC2329 # called by ci_record_in_history
    record_bisect() {
      "$VKBENCH" "${args[@]}" || return $?
      # The site's overview shows the culprit: rebuild it (incremental: only detect.json changed).
      "$VKBENCH" site build --history "$work/pages/history" --out "$work/pages/${site}" >&2
    }
    ci_record_in_history "$work/pages" "bisect ${incident}" "Bisect recorded" record_bisect
    exit 0 ;;
  dispatch)
    actions="${VKBENCH_ALERT_ACTIONS:-vkbench-alert/actions.json}"
    if [[ ! -s "$actions" ]]; then
      printf '## Bisects\n\nalert recorded no actions: nothing to bisect.\n' | ci_summary
      exit 0
    fi
    github_repository
    ci_trusted_source || exit 2
    classes="$(ci_runner_classes)" || { ci_error "bisect" "cannot read runners/classes.yaml"; exit 2; }
    ci_git_auth
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    ci_clone_pages "$work/pages"
    # One workflow_dispatch body per chosen incident, written by vkbench (no value is spliced into
    # a shell string); bisect.yml checks every input again.
    args=(bisect-requests --history "$work/pages/history" --actions "$actions" --repository "$CI_TRUSTED_REPOSITORY"
      --ref "${GITHUB_REF_NAME:-main}" --out "$work/dispatch")
    IFS=, read -r -a class_list <<<"$classes"
    for runner_class in "${class_list[@]}"; do args+=(--runner-class "$runner_class"); done
    chosen="$("$VKBENCH" "${args[@]}")"
    count=0
    for body in "$work"/dispatch/*.json; do
      [[ -e "$body" ]] || break
      ci_github_api POST "/repos/${GITHUB_REPOSITORY}/actions/workflows/bisect.yml/dispatches" "$body" >/dev/null
      count=$((count + 1))
    done
    printf '## Bisects\n\n%s incident(s) dispatched to bisect.yml.\n\n%s\n' "$count" "$chosen" | ci_summary
    exit 0 ;;
esac

case "$mode" in
  check) "$VKBENCH" ci inputs bisect --runner-classes "$CI_RUNNER_CLASSES" ;;
  run) "$VKBENCH" ci run bisect --runner-classes "$CI_RUNNER_CLASSES" "${@:2}" ;;
  *) ci_error "bisect" "usage: tools/ci/bisect.sh check|run|comment|record|dispatch"; exit 2 ;;
esac
