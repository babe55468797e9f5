# shellcheck shell=bash
# Helpers shared by the tools/ci/*.sh scripts that the GitHub workflows call.
#
# Every script also runs outside GitHub Actions (tests/workflows/test_local_chain.py runs the
# whole chain on one machine): GITHUB_OUTPUT and GITHUB_STEP_SUMMARY are honoured when set and
# replaced by stdout otherwise. Never `set -x` in these scripts: some of them hold a token.

CI_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# The vkbench executable: $VKBENCH_BIN, else the work tree's venv (tools/setup.sh), else PATH
# (the jobs install the wheel), else the checkout's package run from source (the inputs jobs
# check a dispatch before any wheel is built; they install only what that check imports).
ci_vkbench_bin() {
  if [[ -n "${VKBENCH_BIN:-}" ]]; then
    printf '%s\n' "$VKBENCH_BIN"
  elif [[ -x "$CI_REPO_ROOT/.venv/bin/vkbench" ]]; then
    printf '%s\n' "$CI_REPO_ROOT/.venv/bin/vkbench"
  elif command -v vkbench >/dev/null; then
    printf '%s\n' vkbench
  else
    printf '%s\n' ci_vkbench_from_source
  fi
}
ci_vkbench_from_source() {
  PYTHONPATH="$CI_REPO_ROOT/bench${PYTHONPATH:+:$PYTHONPATH}" python3 -m vkbench "$@"
}
VKBENCH="$(ci_vkbench_bin)"
# shellcheck disable=SC2034 # read by the scripts that source this file
CI_RUNNER_CLASSES="${VKBENCH_RUNNER_CLASSES_FILE:-$CI_REPO_ROOT/runners/classes.yaml}"

# A Python to read JSON with (the one next to vkbench, so it exists wherever vkbench does).
ci_python() {
  local dir
  dir="$(dirname "$(command -v "$VKBENCH" 2>/dev/null || printf '%s' "$VKBENCH")")"
  if [[ -x "$dir/python" ]]; then printf '%s\n' "$dir/python"; else printf '%s\n' python3; fi
}

ci_in_actions() { [[ "${GITHUB_ACTIONS:-}" == "true" ]]; }

# Workflow commands take %, CR and LF escaped; without this a multi-line message is cut at
# its first line and the rest could be read as further commands.
ci_escape() {
  local s="$1"
  s="${s//'%'/'%25'}"
  s="${s//$'\r'/'%0D'}"
  s="${s//$'\n'/'%0A'}"
  printf '%s' "$s"
}

# ci_error TITLE MESSAGE: an annotation in Actions, a plain line on stderr elsewhere.
ci_error() {
  if ci_in_actions; then
    printf '::error title=%s::%s\n' "$(ci_escape "$1")" "$(ci_escape "$2")"
  else
    printf 'error: %s: %s\n' "$1" "$2" >&2
  fi
}

ci_warning() {
  if ci_in_actions; then
    printf '::warning title=%s::%s\n' "$(ci_escape "$1")" "$(ci_escape "$2")"
  else
    printf 'warning: %s: %s\n' "$1" "$2" >&2
  fi
}

# ci_output NAME VALUE: a step output (one line values only).
ci_output() {
  if [[ "$2" == *$'\n'* ]]; then
    ci_error "internal" "step output $1 must be one line"
    return 1
  fi
  if [[ -n "${GITHUB_OUTPUT:-}" ]]; then
    printf '%s=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"
  else
    printf '%s=%s\n' "$1" "$2"
  fi
}

# ci_summary < markdown: append to the job summary (stdout outside Actions).
ci_summary() {
  if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then
    cat >>"$GITHUB_STEP_SUMMARY"
  else
    cat
  fi
}

# ci_git_auth: let git (and so vkbench publish) reach the GitHub remote with $GITHUB_TOKEN,
# for the processes of this step only. The token goes into an http.extraheader through
# GIT_CONFIG_* variables, never into .git/config (where actions/checkout would persist it and
# a later step or artifact could read it). The base64 form is masked first: GitHub masks the
# secret itself, not encodings of it. No-op without a token (a local bare repo needs none).
ci_git_auth() {
  if [[ -z "${GITHUB_TOKEN:-}" ]]; then
    return 0
  fi
  local server="${GITHUB_SERVER_URL:-https://github.com}" basic
  basic="$(printf 'x-access-token:%s' "$GITHUB_TOKEN" | base64 | tr -d '\n')"
  if ci_in_actions; then
    printf '::add-mask::%s\n' "$basic"
  fi
  export GIT_CONFIG_COUNT=1
  export GIT_CONFIG_KEY_0="http.${server}/.extraheader"
  export GIT_CONFIG_VALUE_0="AUTHORIZATION: basic ${basic}"
  export GIT_TERMINAL_PROMPT=0
}

# ci_pages_remote: where the gh-pages branch lives: $VKBENCH_PAGES_REPO (a URL or a path, the
# local chain test uses a bare repo), else this repository on GitHub.
ci_pages_remote() {
  if [[ -n "${VKBENCH_PAGES_REPO:-}" ]]; then
    printf '%s\n' "$VKBENCH_PAGES_REPO"
  elif [[ -n "${GITHUB_REPOSITORY:-}" ]]; then
    printf '%s/%s.git\n' "${GITHUB_SERVER_URL:-https://github.com}" "$GITHUB_REPOSITORY"
  else
    ci_error "configuration" "set VKBENCH_PAGES_REPO (git URL or path) or GITHUB_REPOSITORY"
    return 1
  fi
}

# ci_history_branch: the branch history/ lives on: $VKBENCH_DATA_BRANCH when the history was
# split off the Pages branch (`vkbench history split`), else the pages branch itself.
ci_history_branch() {
  printf '%s\n' "${VKBENCH_DATA_BRANCH:-${VKBENCH_PAGES_BRANCH:-gh-pages}}"
}

# ci_clone_pages DEST: a shallow read-only copy of the branch history/ lives on.
ci_clone_pages() {
  local remote branch
  branch="$(ci_history_branch)"
  remote="$(ci_pages_remote)"
  rm -rf "$1"
  git clone --quiet --depth 1 --single-branch --branch "$branch" "$remote" "$1"
}

# ci_container_env: for the compose backend, use the project-local podman service when
# tools/setup/containers.sh set one up and no engine was chosen already (DOCKER_HOST in the
# runner's .env, or a system docker). Sourcing it otherwise would point docker at a socket
# that does not exist.
ci_container_env() {
  [[ "${VKBENCH_BACKEND:-compose}" == compose ]] || return 0
  local state="${VKBENCH_CONTAINERS_STATE:-$CI_REPO_ROOT/.cache/containers}"
  if [[ -z "${DOCKER_HOST:-}" && -S "$state/podman.sock" ]]; then
    # shellcheck source=tools/containers-env.sh
    source "$CI_REPO_ROOT/tools/containers-env.sh"
  fi
}

# ci_github_api METHOD PATH [BODY_FILE]: one GitHub REST call, its JSON reply on stdout. The
# token ($GH_TOKEN, else $GITHUB_TOKEN) reaches curl on stdin as a header: never on a command
# line (ps) nor in a log. The API root is $GITHUB_API_URL, which GitHub sets on every runner
# (https://api.github.com, or GHES's); no retry: a repeated POST could dispatch or comment twice.
ci_github_api() {
  local method="$1" path="$2" body="${3:-}" token="${GH_TOKEN:-${GITHUB_TOKEN:-}}"
  local api="${GITHUB_API_URL:-https://api.github.com}"
  if [[ -z "$token" ]]; then
    ci_error "GitHub API" "no token (GH_TOKEN or GITHUB_TOKEN) for ${method} ${path}"
    return 1
  fi
  local args=(--silent --show-error --fail-with-body --max-time 60 -X "$method" -H @-
    -H "Accept: application/vnd.github+json" -H "X-GitHub-Api-Version: 2022-11-28")
  if [[ -n "$body" ]]; then
    args+=(-H "Content-Type: application/json" --data-binary "@${body}")
  fi
  printf 'Authorization: Bearer %s\n' "$token" | curl "${args[@]}" "${api%/}${path}"
}

# ci_comment_json MARKDOWN_FILE: {"body": <the file's text>} for an issue or PR comment, built
# by Python from the file (no shell quoting of untrusted text).
ci_comment_json() {
  "$(ci_python)" -c 'import json, sys; print(json.dumps({"body": open(sys.argv[1], encoding="utf-8", errors="replace").read()}))' "$1"
}

# ci_runner_classes: the runner classes declared in runners/classes.yaml, comma-separated and
# sorted ($VKBENCH_RUNNER_CLASSES_FILE overrides the file), read with PyYAML; fails (status 1)
# when the file cannot be read.
ci_runner_classes() {
  local file="${VKBENCH_RUNNER_CLASSES_FILE:-$CI_REPO_ROOT/runners/classes.yaml}"
  "$(ci_python)" -c '
import sys, yaml
data = yaml.safe_load(open(sys.argv[1], encoding="utf-8"))
print(",".join(sorted(data["classes"])))
' "$file" 2>/dev/null
}

# The repository whose commits the nightly benchmarks (its source builds), and its default
# branch: the repository variables VKBENCH_VALKEY_REPOSITORY and VKBENCH_VALKEY_BRANCH, else
# upstream's. Its merged commits are trusted like the nightly itself: a confirmation A/B or an
# incident's bisect of two of them runs in `benchmark-nightly` (no reviewer), after
# `vkbench ab/bisect --require-branch` checked both are on that branch (docs/security.md).
CI_DEFAULT_VALKEY_REPOSITORY="https://github.com/valkey-io/valkey"
CI_DEFAULT_VALKEY_BRANCH="unstable"

# ci_trusted_source: set CI_TRUSTED_REPOSITORY and CI_TRUSTED_BRANCH from those variables; an
# ::error:: and status 2 when the repository is not an https URL of a github.com or gitlab.com
# repository or the branch not a plain branch name.
ci_trusted_source() {
  local repo="${VKBENCH_VALKEY_REPOSITORY:-$CI_DEFAULT_VALKEY_REPOSITORY}"
  local branch="${VKBENCH_VALKEY_BRANCH:-$CI_DEFAULT_VALKEY_BRANCH}" LC_ALL=C
  if [[ ${#repo} -gt 200 || ! "$repo" =~ ^https://(github\.com|gitlab\.com)/[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+$ ]]; then
    ci_error "Invalid variable VKBENCH_VALKEY_REPOSITORY" "must be the https URL of a github.com or gitlab.com repository"
    return 2
  fi
  if [[ ! "$branch" =~ ^[A-Za-z0-9_][A-Za-z0-9._/-]{0,99}$ || "$branch" == *..* || "$branch" == refs/* ]]; then
    ci_error "Invalid variable VKBENCH_VALKEY_BRANCH" "must be a branch name, e.g. unstable"
    return 2
  fi
  # shellcheck disable=SC2034 # read by the scripts that source this file (bisect.sh)
  CI_TRUSTED_REPOSITORY="$repo"
  # shellcheck disable=SC2034
  CI_TRUSTED_BRANCH="$branch"
}

# ci_record_in_history PAGES MESSAGE TITLE CMD...: clone the history's branch into PAGES, run CMD
# (which writes into PAGES/history), commit what changed with MESSAGE and push; a push rejected
# by a concurrent writer is retried on the new branch tip (5 attempts, then status 8). CMD's
# output goes to the job summary under TITLE. Nothing changed: no commit, status 0.
ci_record_in_history() {
  local pages="$1" message="$2" title="$3" remote branch out attempt
  shift 3
  branch="$(ci_history_branch)"
  remote="$(ci_pages_remote)" || return 1
  for attempt in 1 2 3 4 5; do
    ci_clone_pages "$pages"
    out="$("$@")" || return $?
    git -C "$pages" add -A
    if ! git -C "$pages" -c user.name="vkbench" -c user.email="vkbench@users.noreply.github.com" \
      commit -q --no-verify -m "$message"; then
      printf '%s\n' "$out"
      return 0
    fi
    if git -C "$pages" push -q "$remote" "HEAD:${branch}"; then
      printf '## %s\n\n%s\n' "$title" "$out" | ci_summary
      return 0
    fi
    ci_warning "$title" "push rejected (attempt ${attempt}); retrying on the new ${branch}"
    sleep $((attempt * 3))
  done
  ci_error "$title" "could not push after 5 attempts"
  return 8
}
