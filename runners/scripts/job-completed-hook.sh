#!/usr/bin/env bash
# ACTIONS_RUNNER_HOOK_JOB_COMPLETED: runs after the job's last step, also after a failure or a
# cancel. The runner unit also runs it before each registration, so a crash or reboot that
# skipped it still leaves the next job a clean machine.
set -euo pipefail
exec "$(dirname -- "${BASH_SOURCE[0]}")/run-job-hooks.sh" completed
