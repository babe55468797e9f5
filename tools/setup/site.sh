#!/usr/bin/env bash
# Install the site's front-end dependencies (uPlot, pinned by site-src/package-lock.json).
# The package vendors uPlot (bench/vkbench/site/vendor); tools/sync_site_vendor.py refreshes it from
# site-src/node_modules after this, and the unit tests compare the two.
# Idempotent: does nothing when node_modules already matches the lock file.
set -euo pipefail

cd "$(dirname "$0")/../../site-src"

if ! command -v npm >/dev/null; then
  echo "error: npm not found" >&2
  echo "  hint: install Node.js and npm (Debian: apt-get install nodejs npm)" >&2
  exit 1
fi

# npm writes node_modules/.package-lock.json on install; equal to the lock file means up to date.
if [[ -f node_modules/uplot/dist/uPlot.iife.min.js && -f node_modules/.package-lock.json ]] \
   && node -e '
     const a = require("./package-lock.json").packages, b = require("./node_modules/.package-lock.json").packages;
     for (const k of Object.keys(a)) if (k && (!b[k] || b[k].version !== a[k].version)) process.exit(1);
   '; then
  echo "site-src: node_modules up to date"
  exit 0
fi

npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
echo "site-src: installed $(node -p 'require("./node_modules/uplot/package.json").version' | sed 's/^/uplot /')"
