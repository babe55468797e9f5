#!/usr/bin/env bash
# The README's main command: install what is needed, then run the smoke matrix on loopback,
# store the results in a local history, detect regressions and build the trend site.
# Extra arguments go to `vkbench demo` (e.g. --preset pipeline-sweep, --dir DIR).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
tools/setup.sh
exec .venv/bin/vkbench demo "$@"
