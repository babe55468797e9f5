#!/usr/bin/env bash
# Write github-action-benchmark input files for the coarse backstop chart:
# rps.json (customBiggerIsBetter) and latency.json (customSmallerIsBetter).
#
#   VKBENCH_RESULTS_DIR  default vkbench-results
#   VKBENCH_GAB_OUT      default gab
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

out="${VKBENCH_GAB_OUT:-gab}"
"$VKBENCH" export gab "${VKBENCH_RESULTS_DIR:-vkbench-results}" --out "$out"
for f in rps.json latency.json; do
  if [[ ! -s "$out/$f" ]]; then
    ci_error "export" "vkbench export gab wrote no ${out}/${f}"
    exit 1
  fi
done
