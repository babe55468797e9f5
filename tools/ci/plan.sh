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
#   VKBENCH_RUNNER_CLASSES_FILE  declared classes (default: runners/classes.yaml)
# Output: step output `matrix` ({"include": [...]}) and `cells` (count); a table in the summary.
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# GitHub queues at most this many jobs in one concurrency group (`queue: max`); the bench job's
# group is the runner class, so more cells than this on one class would be cancelled.
QUEUE_LIMIT=100

# Every input is checked against an allow-list before it reaches any command line: a bounded
# length and an alphabet per input (so `$(...)`, quotes, newlines, a leading `-` or a 100k-char
# value end here with an ::error:: naming what is allowed). Runner classes must be declared in
# runners/classes.yaml; vkbench then checks the values themselves (bounded counts, known tools).
RUNNER_CLASSES_FILE="${VKBENCH_RUNNER_CLASSES_FILE:-$CI_REPO_ROOT/runners/classes.yaml}"

# check_input NAME VALUE MAXLEN REGEX ALLOWED-DESCRIPTION
check_input() {
  local name="$1" value="$2" max="$3" re="$4" allowed="$5" LC_ALL=C
  if [[ ${#value} -gt $max ]]; then
    ci_error "Invalid input ${name}" "${name} is ${#value} characters long; at most ${max} are allowed (${allowed})"
    exit 2
  fi
  if ! [[ "$value" =~ $re ]]; then
    ci_error "Invalid input ${name}" "${name} has characters or a form that is not allowed; allowed: ${allowed}"
    exit 2
  fi
}

if [[ -z "${VKBENCH_PRESET:-}" ]]; then
  ci_error "plan" "no preset given (VKBENCH_PRESET is empty)"
  exit 2
fi
check_input preset "$VKBENCH_PRESET" 128 '^[A-Za-z0-9][A-Za-z0-9._/-]*$' \
  "a preset name (smoke, nightly, ...) or a matrix file path in the repository: letters, digits, . _ / -, not starting with - or /"
if [[ "$VKBENCH_PRESET" == *..* ]]; then
  ci_error "Invalid input preset" "preset must not contain '..'; allowed: a preset name or a matrix file path in the repository"
  exit 2
fi
[[ -n "${VKBENCH_VERSIONS:-}" ]] && check_input versions "$VKBENCH_VERSIONS" 512 \
  '^(valkey|redis):[A-Za-z0-9._+-]{1,64}(,(valkey|redis):[A-Za-z0-9._+-]{1,64}){0,15}$' \
  "up to 16 comma-separated engine:version values, engine valkey or redis, e.g. valkey:9.1.2,valkey:unstable"
[[ -n "${VKBENCH_IO_THREADS:-}" ]] && check_input io_threads "$VKBENCH_IO_THREADS" 128 \
  '^[0-9]{1,3}(,[0-9]{1,3}){0,31}$' "up to 32 comma-separated integers, e.g. 1,2,4"
[[ -n "${VKBENCH_TOPOLOGIES:-}" ]] && check_input topologies "$VKBENCH_TOPOLOGIES" 256 \
  '^(standalone|cluster:[0-9]{1,2}(:[0-9])?|replication:[0-9])(,(standalone|cluster:[0-9]{1,2}(:[0-9])?|replication:[0-9])){0,15}$' \
  "up to 16 comma-separated topologies: standalone, cluster:N, cluster:N:R, replication:R"
[[ -n "${VKBENCH_TOOL:-}" ]] && check_input tool "$VKBENCH_TOOL" 32 \
  '^(valkey-benchmark|redis-benchmark|memtier_benchmark)$' "valkey-benchmark, redis-benchmark, memtier_benchmark (or empty: the preset's)"
[[ -n "${VKBENCH_REPETITIONS:-}" ]] && check_input repetitions "$VKBENCH_REPETITIONS" 3 \
  '^[1-9][0-9]?$' "an integer from 1 to 99"

if [[ -n "${VKBENCH_RUNNERS:-}" ]]; then
  check_input runner_classes "$VKBENCH_RUNNERS" 256 '^[a-z0-9-]+(,[a-z0-9-]+){0,15}$' \
    "comma-separated runner classes from runners/classes.yaml: $(ci_runner_classes || true)"
  IFS=, read -r -a requested <<<"$VKBENCH_RUNNERS"
  for runner in "${requested[@]}"; do
    ci_check_runner_class runner_classes "$runner" || exit 2
  done
fi

args=(matrix --format github --allowed-runners "$RUNNER_CLASSES_FILE")
[[ -n "${VKBENCH_VERSIONS:-}" ]] && args+=(--versions "$VKBENCH_VERSIONS")
[[ -n "${VKBENCH_IO_THREADS:-}" ]] && args+=(--io-threads "$VKBENCH_IO_THREADS")
[[ -n "${VKBENCH_TOPOLOGIES:-}" ]] && args+=(--topologies "$VKBENCH_TOPOLOGIES")
[[ -n "${VKBENCH_TOOL:-}" ]] && args+=(--tool "$VKBENCH_TOOL")
[[ -n "${VKBENCH_RUNNERS:-}" ]] && args+=(--runners "$VKBENCH_RUNNERS")
[[ -n "${VKBENCH_REPETITIONS:-}" ]] && args+=(--repetitions "$VKBENCH_REPETITIONS")
args+=(-- "$VKBENCH_PRESET")

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
counts="$("$(ci_python)" -c '
import collections, json, sys
try:
    cells = json.loads(sys.argv[1])["include"]
except (ValueError, KeyError, TypeError):
    sys.exit("vkbench matrix did not print a GitHub matrix")
print(len(cells))
for runner, n in sorted(collections.Counter(c["runner"] for c in cells).items()):
    print(runner, n)
' "$matrix")" || { ci_error "The benchmark plan is invalid" "vkbench matrix did not print a GitHub matrix"; exit 1; }
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
