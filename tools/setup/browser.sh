#!/usr/bin/env bash
# Install Debian's chromium for the browser tests (tests/browser) and tools/bench_site.py.
#
# Playwright drives this binary through executable_path; it must never download a browser of
# its own (this network reaches only package registries). Idempotent and quiet: a second run
# only re-checks that chromium starts headless.
set -euo pipefail

CHROMIUM=/usr/bin/chromium

if [[ ! -x "$CHROMIUM" ]]; then
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
  echo "installing Debian chromium (apt-get)..."
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi

# The same flags the tests use; without the background-networking ones chromium keeps trying
# to reach Google services on a closed network.
if ! out=$("$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --dump-dom 'data:text/html,<p id=ok>chromium-ok</p>' 2>/dev/null) || [[ "$out" != *chromium-ok* ]]; then
  echo "error: $CHROMIUM is installed but does not start headless" >&2
  echo "  hint: run '$CHROMIUM --headless --no-sandbox --dump-dom about:blank' to see why" >&2
  exit 1
fi
echo "chromium ok: $("$CHROMIUM" --version 2>/dev/null)"
