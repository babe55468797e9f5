#!/usr/bin/env bash
# Install nektos/act (runs GitHub Actions workflows locally) into .cache/bin of this work tree,
# for the workflow tests under tests/workflows/act/.
#
# Built from the Go module proxy: this network reaches package registries only, not GitHub's
# release binaries. The pinned module source is downloaded, the patches in
# tools/setup/act-patches/ are applied (each says which act limitation it works around and
# links the upstream issue), and the result is built with `go build`. Idempotent: a stamp
# records the version and the patches' checksum, so a second run only checks.
#
#   ACT_VERSION   the act module version (default below; bump the patches with it)
set -euo pipefail

ACT_VERSION="${ACT_VERSION:-v0.2.89}"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PATCH_DIR="${REPO_ROOT}/tools/setup/act-patches"
BIN_DIR="${REPO_ROOT}/.cache/bin"
ACT="${BIN_DIR}/act"
STAMP="${BIN_DIR}/act.stamp"

patches=("${PATCH_DIR}"/*.patch)
want="act ${ACT_VERSION} patches $(cat "${patches[@]}" | sha256sum | cut -d' ' -f1)"

if [[ -x "$ACT" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]] && "$ACT" --version >/dev/null 2>&1; then
  echo "act ${ACT_VERSION} (patched) already installed: ${ACT}"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  echo "error: 'go' is not on PATH; act is built from the Go module proxy" >&2
  echo "  hint: install Go (Debian: apt-get install golang-go, or the toolchain in /usr/local/go/bin)" >&2
  exit 1
fi

# GOTOOLCHAIN=auto: let go fetch the toolchain act's go.mod asks for from the proxy.
export GOFLAGS=-mod=mod GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" CGO_ENABLED=0
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "downloading act ${ACT_VERSION} from the Go module proxy..."
# `go mod download` needs a module to run in; a throwaway one keeps the work tree clean.
(cd "$work" && go mod init vkbench-act-build >/dev/null 2>&1 &&
  go mod download -json "github.com/nektos/act@${ACT_VERSION}") >"$work/download.json"
src_dir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' "$work/download.json")"
if [[ -z "$src_dir" || ! -f "$src_dir/go.mod" ]]; then
  echo "error: go mod download gave no source directory for act ${ACT_VERSION}" >&2
  cat "$work/download.json" >&2
  exit 1
fi

# The module cache is read-only: build a writable copy.
cp -r "$src_dir" "$work/act"
chmod -R u+w "$work/act"
for p in "${patches[@]}"; do
  echo "applying $(basename "$p")"
  (cd "$work/act" && git apply -p1 "$p")
done

mkdir -p "$BIN_DIR"
echo "building act ${ACT_VERSION} into ${BIN_DIR} (go build)..."
(cd "$work/act" && go build -trimpath -ldflags "-s -w -X main.version=${ACT_VERSION}" -o "$ACT.new" .)
mv -f "$ACT.new" "$ACT"
printf '%s\n' "$want" >"$STAMP.new"
mv -f "$STAMP.new" "$STAMP"
echo "act ok: $("$ACT" --version)"
