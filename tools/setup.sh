#!/usr/bin/env bash
# Install everything vkbench needs on a fresh Debian bookworm machine, as root. Idempotent:
# a second run only checks. Nothing outside the repository is assumed to be installed.
#
#   tools/setup.sh            what `vkbench demo` needs: the venv, server and tool binaries
#   tools/setup.sh --test     also what the tests need: test extras, site-src/node_modules (npm),
#                             memtier_benchmark (source build), Chromium, build tools + ccache,
#                             podman + compose, actionlint, lint tools, PostgreSQL server, the arm64
#                             test image (qemu-user-static, gcc-aarch64-linux-gnu)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
with_tests=0
[[ "${1:-}" == "--test" ]] && with_tests=1

step() { printf '\n==> %s\n' "$*"; }

python=${PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
  step "creating the virtualenv .venv ($($python --version))"
  "$python" -m venv .venv
fi
extras=""
[[ $with_tests == 1 ]] && extras="[test]"
# VKBENCH_WHEEL_DIR=DIR: install vkbench from the one vkbench-*.whl in DIR instead of the
# checkout (editable), exactly that build, as a user would. The benchmark workflow's jobs do this
# with the wheel its plan job built.
if [[ -n "${VKBENCH_WHEEL_DIR:-}" ]]; then
  wheels=("$VKBENCH_WHEEL_DIR"/vkbench-*.whl)
  if [[ ${#wheels[@]} -ne 1 || ! -f "${wheels[0]}" ]]; then
    echo "error: VKBENCH_WHEEL_DIR=$VKBENCH_WHEEL_DIR must hold exactly one vkbench-*.whl" >&2
    exit 2
  fi
  step "installing vkbench into .venv from ${wheels[0]}"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "${wheels[0]}${extras}"
  # The same version may already be installed (editable, or an earlier build): replace it.
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "${wheels[0]}"
else
  step "installing vkbench into .venv"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${extras}"
fi

step "server and tool binaries (cache: ${VKBENCH_CACHE:-$HOME/.cache/vkbench})"
tools/setup/binaries.sh

if [[ $with_tests == 1 ]]; then
  # The package vendors uPlot (bench/vkbench/site/vendor); the tests compare it with npm's copy.
  step "site front-end dependencies (npm ci, pinned by site-src/package-lock.json)"
  tools/setup/site.sh
  step "headless Chromium for browser tests"
  tools/setup/browser.sh
  step "memtier_benchmark 2.3.0 from its source release (build deps from Debian)"
  tools/setup/memtier.sh
  step "perf for CPU profiles (vkbench run --profile)"
  tools/setup/perf.sh
  step "git, C toolchain and ccache for source builds (A/B, bisect); valgrind for instruction counts"
  tools/setup/build.sh
  step "podman + docker compose for the compose backend"
  tools/setup/containers.sh
  step "runner provisioning test: bookworm image (debootstrap) and containers.podman"
  tools/setup/runner-image.sh
  tools/setup/ansible-collections.sh
  step "arm64 tests: qemu-user-static, the aarch64 cross compiler and an arm64 bookworm image (no emulation)"
  tools/setup/arm64.sh
  step "actionlint (Go module proxy)"
  tools/setup/actionlint.sh
  step "PostgreSQL server for the export test (Debian's postgresql; clusters are the test's own)"
  tools/setup/postgres.sh
  step "lint tools (cloud-init schema)"
  tools/setup/lint-tools.sh
  step "act, to run the workflows locally (Go module proxy, patched: tools/setup/act-patches)"
  tools/setup/act.sh
fi
step "setup done"
