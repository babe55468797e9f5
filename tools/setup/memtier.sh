#!/usr/bin/env bash
# Build memtier_benchmark 2.3.0 from its source release into the vkbench cache
# ($VKBENCH_CACHE, default ~/.cache/vkbench: memtier/2.3.0/bin/memtier_benchmark).
#
# Installs the Debian build dependencies (as root) when one is missing, then runs
# `vkbench servers fetch --refresh --tool memtier_benchmark`, which downloads the release from GitHub, or
# takes $VKBENCH_MEMTIER_SOURCE (a local path or URL) instead, checks the archive's sha256,
# applies vkbench's patches (bench/vkbench/servers/patches/) and builds it (about a minute).
# Idempotent: a cached build is only checked. A memtier_benchmark on PATH is left alone and does not
# count: the cache gets its own 2.3.0 build.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
vkbench="${repo_root}/.venv/bin/vkbench"
if [[ ! -x "${vkbench}" ]]; then
  echo "error: ${vkbench} not found; create the venv and install vkbench first (the top-level setup does)" >&2
  exit 3
fi

# The cache's own build, not whatever `servers list` would show: a memtier_benchmark on PATH (or
# named by VKBENCH_TOOL_MEMTIER_BENCHMARK) may be any version, and the project runs 2.3.0 with
# its patches. A PATH copy is left alone; the build goes into the cache beside it.
if "${repo_root}/.venv/bin/python" -c '
import sys
from vkbench.servers import cache, memtier_build
found = cache.cached_binary("memtier", memtier_build.MEMTIER_VERSION, "memtier_benchmark")
sys.exit(0 if found is not None else 1)'; then
  echo "memtier_benchmark: cached"
  exit 0
fi

build_deps=(autoconf automake libpcre3-dev libevent-dev pkg-config zlib1g-dev libssl-dev g++ make patch)
missing=()
for pkg in "${build_deps[@]}"; do
  dpkg-query -W -f='${Status}' "${pkg}" 2>/dev/null | grep -q "install ok installed" || missing+=("${pkg}")
done
if ((${#missing[@]})); then
  if [[ $(id -u) != 0 ]]; then
    echo "error: building memtier_benchmark needs: ${missing[*]} (run this script as root, or apt-get install them)" >&2
    exit 3
  fi
  echo "installing memtier build dependencies: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
fi

# --refresh: build even when a memtier_benchmark is on PATH (fetch would otherwise settle for it);
# without the override variable, which would name that other binary instead of building.
env -u VKBENCH_TOOL_MEMTIER_BENCHMARK nice -n 10 "${vkbench}" servers fetch --refresh --tool memtier_benchmark
