#!/usr/bin/env bash
# actionlint and zizmor over .github/workflows: what ci.yml and tests/workflows/test_lint.py run.
# zizmor runs offline: its online audits would call the GitHub API, which this project's
# machines cannot reach, and the pins are checked by tests/workflows/test_workflow_rules.py.
set -euo pipefail
# shellcheck source=tools/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$CI_REPO_ROOT"

tools/setup/actionlint.sh >/dev/null
# actionlint also runs shellcheck on every run: block when shellcheck is on PATH.
PATH="$CI_REPO_ROOT/.venv/bin:$PATH" .cache/bin/actionlint -no-color

zizmor="$(command -v zizmor || printf '%s' "$CI_REPO_ROOT/.venv/bin/zizmor")"
format=plain
ci_in_actions && format=github
"$zizmor" --offline --no-progress --format "$format" .github/workflows
