#!/usr/bin/env bash
# The bisect of a regression, for bisect.yml.
#
#   tools/ci/bisect.sh check     validate the inputs only (a GitHub-hosted job)
#   tools/ci/bisect.sh run       `vkbench bisect` (builds from source, A/B per step)
#   tools/ci/bisect.sh comment   post bisect.md on the incident's issue (GH_TOKEN, GITHUB_REPOSITORY)
#
#   VKBENCH_BISECT_REPOSITORY  https URL of the Valkey repository (github.com or gitlab.com)
#   VKBENCH_BISECT_GOOD / _BAD the ends of the range (branch, tag or 7-40 hex commit)
#   VKBENCH_BISECT_PRESET      cells (default ab); VKBENCH_BISECT_ISSUE incident issue number (optional)
#   VKBENCH_MACHINE_CLASS      the runner class; VKBENCH_BISECT_DIR output (default vkbench-bisect)
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mode="${1:-}"
dir="${VKBENCH_BISECT_DIR:-vkbench-bisect}"
issue="${VKBENCH_BISECT_ISSUE:-}"
fail() { ci_error "bisect inputs" "$1"; exit 2; }
[[ -z "$issue" || "$issue" =~ ^[1-9][0-9]{0,6}$ ]] || fail "incident_issue must be an issue number"

if [[ "$mode" == comment ]]; then
  [[ -n "$issue" ]] || exit 0
  if [[ ! -s "$dir/bisect.md" ]]; then
    ci_warning "bisect" "no bisect.md was produced; nothing to comment"
    exit 0
  fi
  [[ "${GITHUB_REPOSITORY:-}" =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ ]] || fail "GITHUB_REPOSITORY must be OWNER/NAME"
  body="$(mktemp)"
  trap 'rm -f "$body"' EXIT
  ci_comment_json "$dir/bisect.md" >"$body"
  ci_github_api POST "/repos/${GITHUB_REPOSITORY}/issues/${issue}/comments" "$body" >/dev/null
  exit 0
fi

repo="${VKBENCH_BISECT_REPOSITORY:-}"
good="${VKBENCH_BISECT_GOOD:-}"
bad="${VKBENCH_BISECT_BAD:-}"
preset="${VKBENCH_BISECT_PRESET:-ab}"
ref_re='^[A-Za-z0-9._][A-Za-z0-9._/-]{0,99}$'
[[ "$repo" =~ ^https://(github\.com|gitlab\.com)/[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+$ ]] \
  || fail "repository must be an https URL of a github.com or gitlab.com repository"
[[ "$good" =~ $ref_re && "$good" != *..* ]] || fail "good must be a branch, tag or commit"
[[ "$bad" =~ $ref_re && "$bad" != *..* ]] || fail "bad must be a branch, tag or commit"
[[ "$preset" =~ ^[a-z0-9][a-z0-9-]{0,39}$ ]] || fail "preset must be a preset name (letters, digits and -, not starting with -)"
# runs-on and the runner's concurrency group take it: a declared class only (runners/classes.yaml).
ci_check_runner_class runner_class "${VKBENCH_MACHINE_CLASS:-}" || exit 2

case "$mode" in
  check)
    ci_untrusted_log "bisect ${repo}: ${good}..${bad}"
    exit 0 ;;
  run)
    [[ -n "${VKBENCH_MACHINE_CLASS:-}" ]] || fail "VKBENCH_MACHINE_CLASS is empty"
    "$VKBENCH" bisect --repo "$repo" --good "$good" --bad "$bad" --preset "$preset" \
      --machine-class "$VKBENCH_MACHINE_CLASS" --out "$dir" ;;
  *) ci_error "bisect" "usage: tools/ci/bisect.sh check|run|comment"; exit 2 ;;
esac
