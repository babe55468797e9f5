#!/usr/bin/env bash
# Same-night confirmation of detection candidates (docs/detection.md).
#
#   tools/ci/confirm.sh dispatch   after publish: one ab.yml run per candidate waiting in the
#                                  published detect.json (GH_TOKEN with actions: write; REST
#                                  workflow_dispatch to $GITHUB_API_URL, tools/ci/lib.sh)
#   tools/ci/confirm.sh record     in ab.yml after a confirmation A/B: record its verdict in the
#                                  history on gh-pages and push, retrying a lost race (GITHUB_TOKEN
#                                  with contents: write)
#
#   VKBENCH_CONFIRM_ID     record: the request id (confirm-<12 hex>)
#   VKBENCH_AB_DIR         record: the downloaded A/B (ab.json); default vkbench-ab
#   VKBENCH_PAGES_REPO/_BRANCH  where the history is (lib.sh)
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mode="${1:-}"
ci_git_auth
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

case "$mode" in
  dispatch)
    ci_clone_pages "$work/pages"
    detect="$work/pages/history/detect.json"
    [[ -f "$detect" ]] || { echo "no detect.json: nothing to confirm"; exit 0; }
    [[ "${GITHUB_REPOSITORY:-}" =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ ]] \
      || { ci_error "confirm" "GITHUB_REPOSITORY must be OWNER/NAME"; exit 2; }
    # One workflow_dispatch body per waiting candidate (ab.yml's inputs), written by Python so
    # that no value is ever spliced into a shell string; ab.yml checks every input again.
    mkdir "$work/dispatch"
    "$(ci_python)" - "$detect" "$work/dispatch" "${GITHUB_REF_NAME:-main}" <<'PY'
import json, re, sys
from pathlib import Path
doc, out, ref = json.load(open(sys.argv[1])), Path(sys.argv[2]), sys.argv[3]
for n, r in enumerate((doc.get("confirmation") or {}).get("waiting", [])):
    good, bad = r["good"].get("commit") or "", r["bad"].get("commit") or ""
    if not (re.fullmatch(r"confirm-[0-9a-f]{12}", r["id"]) and re.fullmatch(r"[0-9a-f]{40}", good)
            and re.fullmatch(r"[0-9a-f]{40}", bad)):
        print(f"skipping malformed confirmation request {r.get('id')!r}", file=sys.stderr)
        continue
    inputs = {"repository": r["repository"], "base": good, "candidate": bad, "runner_class": r["machine_class"],
              "cell": json.dumps(r["cell"], separators=(",", ":")), "confirm": r["id"], "comment": "false",
              "instrument": r.get("instrument") or "wallclock"}
    (out / f"{n:04d}.json").write_text(json.dumps({"ref": ref, "inputs": inputs}))
PY
    count=0
    for body in "$work"/dispatch/*.json; do
      [[ -e "$body" ]] || break
      ci_github_api POST "/repos/${GITHUB_REPOSITORY}/actions/workflows/ab.yml/dispatches" "$body" >/dev/null
      count=$((count + 1))
    done
    printf '## Confirmation A/Bs\n\n%s candidate(s) dispatched to ab.yml.\n' "$count" | ci_summary ;;
  record)
    id="${VKBENCH_CONFIRM_ID:-}"
    [[ "$id" =~ ^confirm-[0-9a-f]{12}$ ]] || { ci_error "confirm" "VKBENCH_CONFIRM_ID must be confirm-<12 hex>"; exit 2; }
    ab="${VKBENCH_AB_DIR:-vkbench-ab}/ab.json"
    [[ -s "$ab" ]] || { ci_error "confirm" "no ab.json: the A/B failed, the candidate stays waiting"; exit 1; }
    args=(confirm --history "$work/pages/history" --id "$id" --ab "$ab")
    # Detection honours the known changes recorded in the repository, as publish does (without
    # them a silenced incident would come back unsilenced and get an issue).
    [[ -f "$CI_REPO_ROOT/results/annotations.yaml" ]] && args+=(--annotations "$CI_REPO_ROOT/results/annotations.yaml")
    ci_record_in_history "$work/pages" "confirm ${id}" "Confirmation" "$VKBENCH" "${args[@]}"
    exit 0 ;;
  *) ci_error "confirm" "usage: tools/ci/confirm.sh dispatch|record"; exit 2 ;;
esac
