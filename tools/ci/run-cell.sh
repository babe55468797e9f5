#!/usr/bin/env bash
# Run one matrix cell and leave its result in the output directory.
#
#   VKBENCH_CELL              the cell JSON (matrix entry `cell`)
#   VKBENCH_BACKEND           compose (workflows) | native (local chain test); default compose
#   VKBENCH_OUT               result directory; default vkbench-results
#   VKBENCH_RUN_ID            shared by every cell of one workflow run
#   VKBENCH_MACHINE_CLASS     the runner class (matrix entry `runner`)
#   VKBENCH_TRIGGER           what started the run (github.event_name)
#   VKBENCH_WORKFLOW_RUN_URL  link stored in the result (optional)
#   VKBENCH_PROFILE           source (default): a CPU profile of the servers for cells of builds
#                             from source (unstable, a commit), the builds regressions are found
#                             in, so that an incident has a profile on both sides to diff;
#                             always | never
#
# vkbench tears its own stack down; the workflow's `if: always()` step runs teardown.sh for
# what a cancelled job leaves behind. The stack password is made inside vkbench and never
# printed, so nothing here needs masking.
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

for var in VKBENCH_CELL VKBENCH_RUN_ID VKBENCH_MACHINE_CLASS VKBENCH_TRIGGER; do
  if [[ -z "${!var:-}" ]]; then
    ci_error "run" "$var is empty"
    exit 2
  fi
done

ci_container_env
args=(run --cell "$VKBENCH_CELL"
  --backend "${VKBENCH_BACKEND:-compose}"
  --out "${VKBENCH_OUT:-vkbench-results}"
  --run-id "$VKBENCH_RUN_ID"
  --machine-class "$VKBENCH_MACHINE_CLASS"
  --trigger "$VKBENCH_TRIGGER")
[[ -n "${VKBENCH_WORKFLOW_RUN_URL:-}" ]] && args+=(--workflow-run-url "$VKBENCH_WORKFLOW_RUN_URL")
# The profile is one extra repetition under perf, after the measured ones and never counted
# with them; where perf is missing or not permitted the result says so and the cell carries on.
case "${VKBENCH_PROFILE:-source}" in
  always) args+=(--profile) ;;
  never) ;;
  source)
    if "$(ci_python)" - "$VKBENCH_CELL" <<'PY'
import json, sys
from vkbench.servers.resolve import is_source_version
engine, _, version = json.loads(sys.argv[1])["server"].partition(":")
sys.exit(0 if is_source_version(engine, version) else 1)
PY
    then
      args+=(--profile)
    fi ;;
  *) ci_error "run" "VKBENCH_PROFILE must be source, always or never"; exit 2 ;;
esac

# A failure is annotated by vkbench itself (its message and hint, under GITHUB_ACTIONS).
exec "$VKBENCH" "${args[@]}"
