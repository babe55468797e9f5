#!/usr/bin/env bash
# The instruction-count A/B of a pull request, on a GitHub-hosted runner (pr-counts.yml): build the
# base and the pull request's head from source and count instructions per operation and memory per
# key under callgrind (`vkbench ab --instrument instructions`). No quiet machine, no secret, no
# self-hosted runner: fork code runs only on the hosted runner GitHub gives this job.
#
#   tools/ci/pr-counts.sh setup   install the build tools and valgrind (sudo apt-get), vkbench and
#                                 valkey-benchmark (tools/setup.sh)
#   tools/ci/pr-counts.sh run     the A/B; its ab.md/ab.json go to $VKBENCH_AB_DIR (default vkbench-ab)
#
#   VKBENCH_AB_REPOSITORY  https URL of the Valkey repository (github.com)
#   VKBENCH_AB_BASE        the base commit (full SHA)
#   VKBENCH_AB_PR          the pull request number
#   VKBENCH_AB_HEAD        its head commit (full SHA): refused if the pull request moved since
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

fail() { ci_error "instruction A/B" "$1"; exit 2; }

case "${1:-}" in
  setup)
    if [[ $(id -u) -ne 0 ]]; then sudo -n tools/setup/build.sh; else tools/setup/build.sh; fi
    tools/setup.sh
    exit 0 ;;
  run) ;;
  *) fail "usage: tools/ci/pr-counts.sh setup|run" ;;
esac

repo="${VKBENCH_AB_REPOSITORY:-}"
[[ "$repo" =~ ^https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ ]] || fail "VKBENCH_AB_REPOSITORY must be https://github.com/OWNER/NAME"
[[ "${VKBENCH_AB_BASE:-}" =~ ^[0-9a-f]{40}$ ]] || fail "VKBENCH_AB_BASE must be a full commit SHA"
[[ "${VKBENCH_AB_HEAD:-}" =~ ^[0-9a-f]{40}$ ]] || fail "VKBENCH_AB_HEAD must be a full commit SHA"
[[ "${VKBENCH_AB_PR:-}" =~ ^[0-9]{1,9}$ ]] || fail "VKBENCH_AB_PR must be a pull request number"
dir="${VKBENCH_AB_DIR:-vkbench-ab}"
args=(ab --repo "$repo" --base "$VKBENCH_AB_BASE" --pr "$VKBENCH_AB_PR" --pr-head "$VKBENCH_AB_HEAD"
  --instrument instructions --machine-class github-hosted --out "$dir")
# Counting pins the server's hash seed with a bind mount in its own mount namespace (unshare -m):
# root. The hosted runner's user has password-less sudo; the environment (the inputs) goes along.
if [[ $(id -u) -ne 0 ]]; then
  sudo -n --preserve-env "$VKBENCH" "${args[@]}"
  sudo -n chown -R "$(id -u):$(id -g)" "$dir"
else
  "$VKBENCH" "${args[@]}"
fi
{
  printf '\n%s\n' "Wall-clock numbers (rps, latency) need a quiet runner: a maintainer can add the label \`run-benchmark\` for the wall-clock A/B on a self-hosted machine."
} >>"$dir/ab.md"
printf '%s\n' "$VKBENCH_AB_PR" >"$dir/pr-number"
printf '%s\n' "$VKBENCH_AB_HEAD" >"$dir/pr-head"
