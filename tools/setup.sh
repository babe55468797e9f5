#!/usr/bin/env bash
# Install everything vkbench needs on a fresh Debian bookworm machine, as root. Idempotent:
# a second run only checks. Nothing outside the repository is assumed to be installed.
#
#   tools/setup.sh            what `vkbench demo` needs: the venv, server and tool binaries, uPlot
#   tools/setup.sh --test     also what the tests need: test extras, Chromium, podman + compose,
#                             actionlint, lint tools
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
step "installing vkbench into .venv"
extras=""
[[ $with_tests == 1 ]] && extras="[test]"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${extras}"

step "server and tool binaries (cache: ${VKBENCH_CACHE:-$HOME/.cache/vkbench})"
tools/setup/binaries.sh

step "charting library for the trend site (npm)"
tools/setup/site.sh

if [[ $with_tests == 1 ]]; then
  step "headless Chromium for browser tests"
  tools/setup/browser.sh
  step "podman + docker compose for the compose backend"
  tools/setup/containers.sh
  step "actionlint (Go module proxy)"
  tools/setup/actionlint.sh
  step "lint tools (cloud-init schema)"
  tools/setup/lint-tools.sh
fi
step "setup done"
