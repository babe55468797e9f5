#!/usr/bin/env bash
# Run every executable in hooks/job-<phase>.d/ in name order; stop at the first that fails.
#
# The runner takes one script per hook (ACTIONS_RUNNER_HOOK_JOB_STARTED / _COMPLETED), but
# several roles want a say: cleanup checks the machine is quiet, bench_tuning checks a Pi is
# not throttled. Each role drops a file into the .d directory; this runs them. A failing
# started hook fails the job before any step runs, which is the point: no numbers from a
# machine that is busy, hot or throttled.
set -euo pipefail

phase=${1:-}
if [[ $phase != started && $phase != completed ]]; then
  echo "usage: run-job-hooks.sh started|completed" >&2
  exit 2
fi

# Installed as <prefix>/bin/run-job-hooks.sh next to <prefix>/hooks/.
hooks_dir=${VKBENCH_HOOKS_DIR:-$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)/hooks}
dir=$hooks_dir/job-$phase.d
if [[ ! -d $dir ]]; then
  echo "vkbench: no $dir, no job-$phase hooks to run"
  exit 0
fi

shopt -s nullglob
for hook in "$dir"/*; do
  [[ -f $hook && -x $hook ]] || continue
  name=$(basename -- "$hook")
  echo "vkbench: job-$phase hook $name"
  if ! "$hook"; then
    # ::error:: shows up as an annotation on the run, so the reason is visible without logs.
    echo "::error title=vkbench runner hook::job-$phase hook $name failed on $(hostname -s); see its output above"
    exit 1
  fi
done
