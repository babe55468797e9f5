#!/usr/bin/env bash
# ACTIONS_RUNNER_HOOK_JOB_STARTED: runs before the job's first step; a failure fails the job.
set -euo pipefail
exec "$(dirname -- "${BASH_SOURCE[0]}")/run-job-hooks.sh" started
