#!/usr/bin/env bash
# What building Valkey from source needs (the source-build recipe, `vkbench ab`, `vkbench bisect`):
# git, a C toolchain, make, pkg-config, ccache and OpenSSL's headers (libssl-dev: a TLS cell's
# server is built with BUILD_TLS=yes); and valgrind (callgrind, callgrind_control) for
# `--instrument instructions`, which counts a server's instructions under callgrind. ccache turns the rebuild of a nearby commit
# (an A/B's second side, a bisect midpoint) from minutes into seconds; vkbench uses it when it is
# on PATH, with its cache under $VKBENCH_CACHE/ccache.
#
# Idempotent: when everything is there it only checks (well under a second).
set -euo pipefail

needed=(git make gcc pkg-config ccache valgrind callgrind_control)
missing=()
for tool in "${needed[@]}"; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
# A header, not a command: BUILD_TLS=yes compiles against <openssl/ssl.h>.
[ -e /usr/include/openssl/ssl.h ] || missing+=(libssl-dev)
if (( ${#missing[@]} == 0 )); then
  echo "build.sh: git, make, gcc, pkg-config, ccache, libssl-dev and valgrind are installed"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "build.sh: ERROR: missing ${missing[*]}; run as root to install them" >&2; exit 1; }
command -v apt-get >/dev/null || { echo "build.sh: ERROR: needs a Debian host (apt-get) to install ${missing[*]}" >&2; exit 1; }
echo "build.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q --no-install-recommends git build-essential pkg-config ccache libssl-dev valgrind >/dev/null \
  || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends git build-essential pkg-config ccache libssl-dev valgrind >/dev/null; }
for tool in "${needed[@]}"; do
  command -v "$tool" >/dev/null || { echo "build.sh: ERROR: $tool still missing after apt-get install" >&2; exit 1; }
done
[ -e /usr/include/openssl/ssl.h ] || { echo "build.sh: ERROR: libssl-dev still missing after apt-get install" >&2; exit 1; }
