#!/usr/bin/env bash
# The `plan` job: expand a preset into the GitHub job matrix, one job per cell.
#
# Inputs arrive as environment variables (the workflow maps `inputs.*` into `env:`; they are
# never pasted into the script text, which would let a dispatch input inject shell):
#   VKBENCH_PRESET       preset name or matrix file (required)
#   VKBENCH_VERSIONS     e.g. valkey:9.1.2,valkey:unstable    (empty: the preset's)
#   VKBENCH_IO_THREADS   e.g. 1,2,4                           (empty: the preset's)
#   VKBENCH_TOPOLOGIES   e.g. standalone,cluster:3            (empty: the preset's)
#   VKBENCH_TOOL         valkey-benchmark | redis-benchmark | memtier_benchmark (empty: preset's)
#   VKBENCH_RUNNERS      runner classes, e.g. cloud-x86,pi-cm4 (empty: the preset's)
#   VKBENCH_REPETITIONS  repetitions per cell                 (empty: the preset's)
# Output: step output `matrix` ({"include": [...]}) and `cells` (count); a table in the summary.
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# GitHub queues at most this many jobs in one concurrency group (`queue: max`); the bench job's
# group is the runner class, so more cells than this on one class would be cancelled.
QUEUE_LIMIT=100

if [[ -z "${VKBENCH_PRESET:-}" ]]; then
  ci_error "plan" "no preset given (VKBENCH_PRESET is empty)"
  exit 2
fi

args=(matrix "$VKBENCH_PRESET" --format github)
[[ -n "${VKBENCH_VERSIONS:-}" ]] && args+=(--versions "$VKBENCH_VERSIONS")
[[ -n "${VKBENCH_IO_THREADS:-}" ]] && args+=(--io-threads "$VKBENCH_IO_THREADS")
[[ -n "${VKBENCH_TOPOLOGIES:-}" ]] && args+=(--topologies "$VKBENCH_TOPOLOGIES")
[[ -n "${VKBENCH_TOOL:-}" ]] && args+=(--tool "$VKBENCH_TOOL")
[[ -n "${VKBENCH_RUNNERS:-}" ]] && args+=(--runners "$VKBENCH_RUNNERS")
[[ -n "${VKBENCH_REPETITIONS:-}" ]] && args+=(--repetitions "$VKBENCH_REPETITIONS")

errfile="$(mktemp)"
trap 'rm -f "$errfile"' EXIT
status=0
matrix="$("$VKBENCH" "${args[@]}" 2>"$errfile")" || status=$?
if [[ $status -ne 0 ]]; then
  # vkbench's message names the bad input; it may quote it, so it is logged inertly.
  ci_untrusted_log "$(cat "$errfile")"
  ci_error "The benchmark plan is invalid" "vkbench matrix exited ${status}: $(cat "$errfile")"
  exit "$status"
fi

# Count cells per runner class; refuse an empty plan (GitHub rejects an empty matrix with an
# obscure message) and a class with more cells than the concurrency queue holds.
py="$(ci_python)"
counts="$("$py" -c '
import collections, json, sys
cells = json.loads(sys.argv[1])["include"]
print(len(cells))
for runner, n in sorted(collections.Counter(c["runner"] for c in cells).items()):
    print(runner, n)
' "$matrix")"
total="$(head -n1 <<<"$counts")"
if [[ "$total" -eq 0 ]]; then
  ci_error "The benchmark plan is empty" "the preset and filters select no cell; widen versions, io_threads, topologies or runner_classes"
  exit 2
fi
while read -r runner n; do
  if [[ "$n" -gt "$QUEUE_LIMIT" ]]; then
    ci_error "Too many cells for one runner class" "${runner} has ${n} cells; one concurrency group queues at most ${QUEUE_LIMIT}: narrow the matrix or split the run"
    exit 2
  fi
done < <(tail -n +2 <<<"$counts")

ci_output matrix "$matrix"
ci_output cells "$total"

{
  printf '### Benchmark plan: %s cells\n\n| runner class | cells |\n| --- | ---: |\n' "$total"
  # shellcheck disable=SC2016 # the backticks are Markdown, not a command substitution
  tail -n +2 <<<"$counts" | while read -r runner n; do printf '| `%s` | %s |\n' "$runner" "$n"; done
  printf '\n'
} | ci_summary
