#!/usr/bin/env bash
# Register this machine as an ephemeral GitHub Actions runner, good for exactly one job.
#
# The runner's systemd unit runs this (as root, ExecStartPre=+) before every start: an
# ephemeral runner deregisters itself after its one job and run.sh exits, systemd restarts
# the unit, and this makes the next registration. Both modes give an ephemeral runner:
#   --mode jit    (default) POST .../actions/runners/generate-jitconfig; the single-use config
#                 goes to --output as ACTIONS_RUNNER_INPUT_JITCONFIG=..., which run.sh reads from
#                 its environment (argv would show it to every local user via ps). JIT runners
#                 are ephemeral by construction, and the minting credential never reaches the
#                 runner user.
#   --mode token  POST .../actions/runners/registration-token, then config.sh --ephemeral, the
#                 short-lived token in ACTIONS_RUNNER_INPUT_TOKEN (again not argv).
#
# The credential that may mint these (a fine-grained PAT or a GitHub App installation token,
# see docs/runners.md for the narrowest permission) comes from $VKBENCH_GITHUB_TOKEN or from
# --token-file (a root-only file). It is never printed and reaches curl on stdin, never argv.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: register-runner.sh (--repo OWNER/NAME | --org ORG) --labels L1,L2,... [options]
  --mode jit|token         jit (default): single-use JIT config; token: config.sh --ephemeral
  --name-prefix P          runner name prefix; a timestamp and random suffix keep names unique
  --runner-group-id N      runner group id for jit (default 1, the "Default" group)
  --runner-group NAME      runner group name for token mode (default "Default")
  --runner-dir DIR         actions-runner directory (default /opt/actions-runner)
  --runner-user USER       run config.sh as USER and let USER's group read --output
  --output FILE            jit: env file for the runner unit (default /run/vkbench-runner/jit.env)
  --state-dir DIR          keeps the last runner id, to delete a registration that never ran a job
  --token-file FILE        read the credential here when VKBENCH_GITHUB_TOKEN is unset
  --api-url URL            default https://api.github.com
  --server-url URL         default https://github.com (token mode: config.sh --url)
USAGE
}

mode=jit
repo=""
org=""
labels=""
name_prefix=$(hostname -s)
group_id=1
group_name=Default
runner_dir=/opt/actions-runner
runner_user=""
output=/run/vkbench-runner/jit.env
state_dir=/var/lib/vkbench-runner
token_file=""
api_url=https://api.github.com
server_url=https://github.com

while [[ $# -gt 0 ]]; do
  case $1 in
    --mode) mode=$2; shift 2 ;;
    --repo) repo=$2; shift 2 ;;
    --org) org=$2; shift 2 ;;
    --labels) labels=$2; shift 2 ;;
    --name-prefix) name_prefix=$2; shift 2 ;;
    --runner-group-id) group_id=$2; shift 2 ;;
    --runner-group) group_name=$2; shift 2 ;;
    --runner-dir) runner_dir=$2; shift 2 ;;
    --runner-user) runner_user=$2; shift 2 ;;
    --output) output=$2; shift 2 ;;
    --state-dir) state_dir=$2; shift 2 ;;
    --token-file) token_file=$2; shift 2 ;;
    --api-url) api_url=${2%/}; shift 2 ;;
    --server-url) server_url=${2%/}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "register-runner: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done

die() { echo "register-runner: $*" >&2; exit 1; }

[[ $mode == jit || $mode == token ]] || die "--mode must be jit or token"
[[ -n $labels ]] || die "--labels is required (self-hosted, the class label, bench-server/bench-client)"
if [[ -n $repo && -z $org ]]; then
  [[ $repo =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ ]] || die "--repo must be OWNER/NAME"
  scope_path=/repos/$repo
  scope_url=$server_url/$repo
elif [[ -n $org && -z $repo ]]; then
  [[ $org =~ ^[A-Za-z0-9_.-]+$ ]] || die "--org must be an organization login"
  scope_path=/orgs/$org
  scope_url=$server_url/$org
else
  die "give exactly one of --repo OWNER/NAME or --org ORG"
fi
[[ $group_id =~ ^[0-9]+$ ]] || die "--runner-group-id must be a number"

# The credential: env first (interactive use), then the root-only file (systemd).
token=${VKBENCH_GITHUB_TOKEN:-}
unset VKBENCH_GITHUB_TOKEN
if [[ -z $token && -n $token_file ]]; then
  [[ -r $token_file ]] || die "cannot read --token-file $token_file"
  token=$(head -n 1 -- "$token_file")
fi
[[ -n $token ]] || die "no credential: set VKBENCH_GITHUB_TOKEN or pass --token-file"
# It goes into a curl config line between double quotes: refuse anything that could break out.
# (GitHub tokens are [A-Za-z0-9_]; the value itself is never shown.)
[[ $token =~ ^[A-Za-z0-9_.-]+$ ]] || die "the credential has unexpected characters (not shown)"

# api METHOD PATH [JSON]: print the response body; fail on HTTP >= 400. The Authorization
# header reaches curl through its config on stdin, so it is in no argv and no log.
api() {
  local method=$1 path=$2 body=${3-}
  local args=(--silent --show-error --fail-with-body --max-time 30 --retry 3
    -X "$method" -H "Accept: application/vnd.github+json" -H "X-GitHub-Api-Version: 2022-11-28"
    --config -)
  if [[ -n $body ]]; then
    args+=(-H "Content-Type: application/json" --data-binary "$body")
  fi
  curl "${args[@]}" "$api_url$path" <<<"header = \"Authorization: Bearer $token\""
}

random_suffix() { od -An -N3 -tx1 /dev/urandom | tr -d ' \n'; }
runner_name="$name_prefix-$(date -u +%Y%m%d%H%M%S)-$(random_suffix)"

# A crash can leave the previous runner's local settings behind; config.sh refuses to
# configure over them, and a JIT start would not need them.
rm -f -- "$runner_dir/.runner" "$runner_dir/.credentials" "$runner_dir/.credentials_rsaparams"

# A JIT registration whose runner died before taking a job stays listed (offline) until
# GitHub expires it: delete it so Settings -> Actions -> Runners shows only live runners.
# One that ran its job is already gone (404), which is the normal case.
install -d -m 0700 -- "$state_dir"
last_id_file=$state_dir/last-runner-id
if [[ -s $last_id_file ]]; then
  last_id=$(<"$last_id_file")
  if [[ $last_id =~ ^[0-9]+$ ]]; then
    api DELETE "$scope_path/actions/runners/$last_id" >/dev/null 2>&1 || true
  fi
  rm -f -- "$last_id_file"
fi

as_runner_user() {
  if [[ -n $runner_user && $(id -un) != "$runner_user" ]]; then
    runuser -u "$runner_user" -- "$@"
  else
    "$@"
  fi
}

if [[ $mode == jit ]]; then
  body=$(jq -cn --arg name "$runner_name" --argjson group "$group_id" --arg labels "$labels" \
    '{name: $name, runner_group_id: $group, labels: ($labels | split(",")), work_folder: "_work"}')
  if ! reply=$(api POST "$scope_path/actions/runners/generate-jitconfig" "$body"); then
    # The error body (message, documentation_url) carries no secret and says what is wrong.
    die "generate-jitconfig failed for $scope_path: ${reply:-no answer}"
  fi
  jit=$(jq -er '.encoded_jit_config | select(type == "string" and length > 0)' <<<"$reply") \
    || die "generate-jitconfig answered without encoded_jit_config"
  runner_id=$(jq -r '.runner.id // empty' <<<"$reply")
  unset reply
  install -d -m 0750 -- "$(dirname -- "$output")"
  tmp=$(mktemp -- "$output.XXXXXX")
  printf 'ACTIONS_RUNNER_INPUT_JITCONFIG=%s\n' "$jit" >"$tmp"
  unset jit
  chmod 0640 -- "$tmp"
  if [[ -n $runner_user ]]; then
    chgrp -- "$(id -gn "$runner_user")" "$tmp"
  fi
  mv -f -- "$tmp" "$output"
  if [[ -n $runner_id ]]; then
    printf '%s\n' "$runner_id" >"$last_id_file"
  fi
else
  if ! reply=$(api POST "$scope_path/actions/runners/registration-token"); then
    die "registration-token failed for $scope_path: ${reply:-no answer}"
  fi
  ACTIONS_RUNNER_INPUT_TOKEN=$(jq -er '.token | select(type == "string" and length > 0)' <<<"$reply") \
    || die "registration-token answered without a token"
  unset reply
  export ACTIONS_RUNNER_INPUT_TOKEN
  # --ephemeral: the runner takes one job, then GitHub removes it and run.sh exits.
  (cd -- "$runner_dir" && as_runner_user ./config.sh --unattended --ephemeral --replace \
    --url "$scope_url" --name "$runner_name" --labels "$labels" \
    --runnergroup "$group_name" --work _work)
  unset ACTIONS_RUNNER_INPUT_TOKEN
  # The unit's EnvironmentFile is optional; an empty one keeps a stale JIT config out.
  if [[ -e $output ]]; then
    : >"$output"
  fi
fi
unset token
echo "register-runner: registered $runner_name ($mode, ephemeral) for $scope_url with labels $labels"
