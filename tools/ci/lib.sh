# shellcheck shell=bash
# What the tools/ci/*.sh steps share: find vkbench and hand the step to `vkbench ci <step>`
# (bench/vkbench/ci/: every decision, with unit tests). Never `set -x` here: steps hold tokens.
CI_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export VKBENCH_CHECKOUT="$CI_REPO_ROOT"   # its results/annotations.yaml and runners/classes.yaml

# $VKBENCH_BIN, else the work tree's venv (tools/setup.sh), else PATH (the jobs install the
# wheel), else the checkout's package from source (the inputs jobs, before any wheel is built).
ci_vkbench_from_source() { PYTHONPATH="$CI_REPO_ROOT/bench${PYTHONPATH:+:$PYTHONPATH}" python3 -m vkbench "$@"; }
if [[ -n "${VKBENCH_BIN:-}" ]]; then VKBENCH="$VKBENCH_BIN"
elif [[ -x "$CI_REPO_ROOT/.venv/bin/vkbench" ]]; then VKBENCH="$CI_REPO_ROOT/.venv/bin/vkbench"
elif command -v vkbench >/dev/null; then VKBENCH=vkbench
else VKBENCH=ci_vkbench_from_source; fi

# The compose backend uses the project-local podman service when tools/setup/containers.sh set
# one up and no engine was chosen already: an environment only a sourced shell file can give.
ci_container_env() {
  [[ "${VKBENCH_BACKEND:-compose}" == compose ]] || return 0
  if [[ -z "${DOCKER_HOST:-}" && -S "${VKBENCH_CONTAINERS_STATE:-$CI_REPO_ROOT/.cache/containers}/podman.sock" ]]; then
    # shellcheck source=tools/containers-env.sh
    source "$CI_REPO_ROOT/tools/containers-env.sh"
  fi
}

# ci STEP [ARGS]: this step is `vkbench ci STEP` (a failure is annotated by vkbench itself).
ci() { "$VKBENCH" ci "$@"; }
