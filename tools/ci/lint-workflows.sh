#!/usr/bin/env bash
# actionlint over .github/workflows, zizmor over them and the local actions (.github/actions): what ci.yml and tests/workflows/test_lint.py run.
# zizmor runs offline: its online audits would call the GitHub API, which this project's
# machines cannot reach, and the pins are checked by tests/workflows/test_workflow_rules.py.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
tools/setup/actionlint.sh >/dev/null
# actionlint also runs shellcheck on every run: block when shellcheck is on PATH.
PATH="$PWD/.venv/bin:$PATH" .cache/bin/actionlint -no-color
format=plain
[[ "${GITHUB_ACTIONS:-}" != true ]] || format=github
"$(command -v zizmor || printf '%s' "$PWD/.venv/bin/zizmor")" --offline --no-progress --format "$format" .github/workflows .github/actions
