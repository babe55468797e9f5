#!/usr/bin/env bash
# Same-night confirmation of detection candidates (docs/detection.md).
#
#   tools/ci/confirm.sh dispatch   after publish: one ab.yml run per candidate waiting in the
#                                  published detect.json (GH_TOKEN with actions: write)
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
    "$(ci_python)" - "$detect" >"$work/requests.tsv" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for r in (doc.get("confirmation") or {}).get("waiting", []):
    print("\t".join([r["id"], r["repository"], r["good"]["commit"], r["bad"]["commit"], r["machine_class"],
                     json.dumps(r["cell"], separators=(",", ":"))]))
PY
    count=0
    while IFS=$'\t' read -r id repository good bad class cell; do
      [[ "$id" =~ ^confirm-[0-9a-f]{12}$ && "$good" =~ ^[0-9a-f]{40}$ && "$bad" =~ ^[0-9a-f]{40}$ ]] || continue
      gh workflow run ab.yml --repo "$GITHUB_REPOSITORY" -f repository="$repository" -f base="$good" \
        -f candidate="$bad" -f runner_class="$class" -f cell="$cell" -f confirm="$id" -f comment=false
      count=$((count + 1))
    done <"$work/requests.tsv"
    printf '## Confirmation A/Bs\n\n%s candidate(s) dispatched to ab.yml.\n' "$count" | ci_summary ;;
  record)
    id="${VKBENCH_CONFIRM_ID:-}"
    [[ "$id" =~ ^confirm-[0-9a-f]{12}$ ]] || { ci_error "confirm" "VKBENCH_CONFIRM_ID must be confirm-<12 hex>"; exit 2; }
    ab="${VKBENCH_AB_DIR:-vkbench-ab}/ab.json"
    [[ -s "$ab" ]] || { ci_error "confirm" "no ab.json: the A/B failed, the candidate stays waiting"; exit 1; }
    remote="$(ci_pages_remote)"
    branch="${VKBENCH_PAGES_BRANCH:-gh-pages}"
    for attempt in 1 2 3 4 5; do
      ci_clone_pages "$work/pages"
      out="$("$VKBENCH" confirm --history "$work/pages/history" --id "$id" --ab "$ab")"
      git -C "$work/pages" add -A history
      git -C "$work/pages" -c user.name="vkbench" -c user.email="vkbench@users.noreply.github.com" \
        commit -q --no-verify -m "confirm ${id}" || { echo "$out"; exit 0; }
      if git -C "$work/pages" push -q "$remote" "HEAD:${branch}"; then
        printf '## Confirmation\n\n%s\n' "$out" | ci_summary
        exit 0
      fi
      ci_warning "confirm" "push rejected (attempt ${attempt}); retrying on the new ${branch}"
      sleep $((attempt * 3))
    done
    ci_error "confirm" "could not push the confirmation after 5 attempts"
    exit 8 ;;
  *) ci_error "confirm" "usage: tools/ci/confirm.sh dispatch|record"; exit 2 ;;
esac
