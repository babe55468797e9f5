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

# ci_record confirm|bisect: `vkbench ci record` into the history's branch (with the step's git
# credentials), detection honouring the known changes recorded in the repository, as publish does.
ci_record() {
  local remote
  remote="$(ci_pages_remote)" || return 1
  ci_git_auth
  "$VKBENCH" ci record "$1" --remote "$remote" --branch "$(ci_history_branch)" \
    --annotations "$CI_REPO_ROOT/results/annotations.yaml"
}
