#!/usr/bin/env bash
# Debian's PostgreSQL server for the tests of `vkbench export postgres`
# (tests/integration/test_export_postgres.py starts a throw-away cluster of its own with initdb +
# pg_ctl, on a unix socket in a temporary directory, as the `postgres` user when run as root).
# Idempotent: a second run only checks that initdb is there.
set -euo pipefail

find_initdb() { find /usr/lib/postgresql -path '*/bin/initdb' 2>/dev/null | sort -V | tail -n 1; }

if [[ -z "$(find_initdb)" ]]; then
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
  echo "installing Debian's postgresql (apt-get)..."
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi
initdb=$(find_initdb)
if [[ -z "$initdb" ]]; then
  echo "error: no /usr/lib/postgresql/*/bin/initdb after installing postgresql" >&2
  exit 1
fi
echo "postgres ok: $("$initdb" --version)"
