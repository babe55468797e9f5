#!/usr/bin/env bash
# Install actionlint (the GitHub Actions workflow linter) into .cache/bin of this work tree.
#
# Built from the Go module proxy with `go install`: this network reaches package registries only,
# so the release binaries on GitHub are out of reach. Idempotent: when .cache/bin/actionlint
# already reports the pinned version, nothing is fetched. tests/workflows/test_lint.py and
# .github/workflows/ci.yml both run this script.
set -euo pipefail

ACTIONLINT_VERSION="${ACTIONLINT_VERSION:-v1.7.12}"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN_DIR="${REPO_ROOT}/.cache/bin"
ACTIONLINT="${BIN_DIR}/actionlint"

if [[ -x "$ACTIONLINT" ]] && [[ "$("$ACTIONLINT" -version 2>/dev/null | head -n1)" == "${ACTIONLINT_VERSION}" ]]; then
  echo "actionlint ${ACTIONLINT_VERSION} already installed: ${ACTIONLINT}"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  echo "error: 'go' is not on PATH; actionlint is built from the Go module proxy" >&2
  echo "  hint: install Go (Debian: apt-get install golang-go, or the toolchain in /usr/local/go/bin)" >&2
  exit 1
fi

mkdir -p "$BIN_DIR"
echo "installing actionlint ${ACTIONLINT_VERSION} into ${BIN_DIR} (go install)..."
# GOFLAGS=-mod=mod: resolve the module graph from the proxy, not a vendor dir.
# GOTOOLCHAIN=auto: let go fetch a newer toolchain from the proxy if actionlint's go.mod asks.
GOBIN="$BIN_DIR" GOFLAGS=-mod=mod GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" \
  go install "github.com/rhysd/actionlint/cmd/actionlint@${ACTIONLINT_VERSION}"

echo "actionlint ok: $("$ACTIONLINT" -version | head -n1)"
