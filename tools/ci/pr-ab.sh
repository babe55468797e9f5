#!/usr/bin/env bash
# The PR benchmark: an A/B of two server builds on one runner class, in one job, on one machine.
#
#   VKBENCH_BASE_REF        git commit of the PR's base (built from source)
#   VKBENCH_CANDIDATE_REF   git commit of the PR's merge commit (built from source)
#   VKBENCH_PRESET          cell list; default smoke (VKBENCH_IO_THREADS / _TOPOLOGIES narrow it)
#   VKBENCH_MACHINE_CLASS   the runner class this job runs on
#   VKBENCH_AB_DIR          output: base/, candidate/ and compare.md; default vkbench-ab
#   VKBENCH_BACKEND, VKBENCH_RUN_ID, VKBENCH_TRIGGER, VKBENCH_WORKFLOW_RUN_URL as in run-cell.sh
#
# The same cells run for both builds, alternating which goes first (ABBA), so slow drift of the
# machine (thermals, page cache) does not favour one side.
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

for var in VKBENCH_BASE_REF VKBENCH_CANDIDATE_REF VKBENCH_MACHINE_CLASS VKBENCH_RUN_ID VKBENCH_TRIGGER; do
  if [[ -z "${!var:-}" ]]; then
    ci_error "A/B" "$var is empty"
    exit 2
  fi
done
for var in VKBENCH_BASE_REF VKBENCH_CANDIDATE_REF; do
  if [[ ! "${!var}" =~ ^[0-9a-f]{7,40}$ ]]; then
    ci_error "A/B" "$var must be a commit hash"
    exit 2
  fi
done

ci_container_env
dir="${VKBENCH_AB_DIR:-vkbench-ab}"
preset="${VKBENCH_PRESET:-smoke}"
mkdir -p "$dir/base" "$dir/candidate"

# Both servers built from source up front: a build failure stops the A/B before any run.
"$VKBENCH" servers fetch valkey "$VKBENCH_BASE_REF"
"$VKBENCH" servers fetch valkey "$VKBENCH_CANDIDATE_REF"
"$VKBENCH" servers fetch --tool valkey-benchmark --tool valkey-cli

plan() { # plan VERSION -> one cell JSON per line
  local args=(matrix "$preset" --format github --versions "valkey:$1" --runners "$VKBENCH_MACHINE_CLASS")
  [[ -n "${VKBENCH_IO_THREADS:-}" ]] && args+=(--io-threads "$VKBENCH_IO_THREADS")
  [[ -n "${VKBENCH_TOPOLOGIES:-}" ]] && args+=(--topologies "$VKBENCH_TOPOLOGIES")
  "$VKBENCH" "${args[@]}" | "$(ci_python)" -c '
import json, sys
for entry in json.load(sys.stdin)["include"]:
    print(entry["cell"])
'
}
mapfile -t base_cells < <(plan "$VKBENCH_BASE_REF")
mapfile -t cand_cells < <(plan "$VKBENCH_CANDIDATE_REF")
if [[ ${#base_cells[@]} -eq 0 || ${#base_cells[@]} -ne ${#cand_cells[@]} ]]; then
  ci_error "A/B" "the two cell lists differ or are empty (${#base_cells[@]} vs ${#cand_cells[@]})"
  exit 2
fi

run_one() { # run_one CELL OUT
  local args=(run --cell "$1" --backend "${VKBENCH_BACKEND:-compose}" --out "$2"
    --run-id "$VKBENCH_RUN_ID" --machine-class "$VKBENCH_MACHINE_CLASS" --trigger "$VKBENCH_TRIGGER")
  [[ -n "${VKBENCH_WORKFLOW_RUN_URL:-}" ]] && args+=(--workflow-run-url "$VKBENCH_WORKFLOW_RUN_URL")
  "$VKBENCH" "${args[@]}"
}

failed=0
for i in "${!base_cells[@]}"; do
  if (( i % 2 == 0 )); then
    run_one "${base_cells[$i]}" "$dir/base" || failed=$((failed + 1))
    run_one "${cand_cells[$i]}" "$dir/candidate" || failed=$((failed + 1))
  else
    run_one "${cand_cells[$i]}" "$dir/candidate" || failed=$((failed + 1))
    run_one "${base_cells[$i]}" "$dir/base" || failed=$((failed + 1))
  fi
done

"$VKBENCH" compare "$dir/base" "$dir/candidate" --format markdown >"$dir/compare.md"
ci_summary <"$dir/compare.md"
if [[ $failed -gt 0 ]]; then
  ci_error "A/B" "${failed} of $(( ${#base_cells[@]} * 2 )) runs failed; the comparison covers the rest"
  exit 1
fi
