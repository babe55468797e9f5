#!/usr/bin/env bash
# First-boot provisioning of a cloud benchmark VM: run runners/site.yml locally, at a pinned
# commit, with a pinned ansible-core. cloud-init's runcmd runs it once (its user data embeds
# this file as /usr/local/sbin/vkbench-bootstrap; tests/unit/runners checks the copies match).
#
# Reproducible on purpose: the playbook comes from one reviewed commit (fetched by its full
# SHA and checked after checkout, never a moving branch) and ansible-core plus its
# dependencies from runners/requirements-bootstrap.txt at that same commit. Nothing re-runs
# it later (unlike an ansible-pull timer), so a machine does not change under a running
# benchmark series: to change a machine, build a new one from a new commit.
#
# Reads /etc/vkbench-runner/bootstrap.env (written by cloud-init):
#   VKBENCH_REPO_URL   https clone URL of the vkbench repository
#   VKBENCH_COMMIT     full 40-hex commit SHA to provision from
#   VKBENCH_INVENTORY  inventory that puts localhost in its class group (cloud_x86, ...)
# The runner's registration credential is not in user data (instance metadata is readable by
# every local process); deliver it afterwards, see docs/runners.md.
set -euo pipefail

env_file=${1:-/etc/vkbench-runner/bootstrap.env}
prefix=/opt/vkbench-bootstrap

# shellcheck source=/dev/null # written by cloud-init, KEY=value lines
. "$env_file"
: "${VKBENCH_REPO_URL:?set in $env_file}" "${VKBENCH_COMMIT:?set in $env_file}" "${VKBENCH_INVENTORY:?set in $env_file}"

if [[ ! $VKBENCH_COMMIT =~ ^[0-9a-f]{40}$ || $VKBENCH_COMMIT =~ ^0+$ ]]; then
  echo "vkbench-bootstrap: VKBENCH_COMMIT must be the full SHA of a reviewed commit, not '$VKBENCH_COMMIT'" >&2
  exit 1
fi

# git to fetch, python3-venv for ansible's venv, python3-apt for the apt module (cheap when present).
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends git python3-venv python3-apt ca-certificates

# Fetch exactly one commit (GitHub serves a commit by SHA), then prove HEAD is that commit.
checkout=$prefix/vkbench
install -d -m 0755 "$prefix"
if [[ ! -d $checkout/.git ]]; then
  git init -q "$checkout"
  git -C "$checkout" remote add origin "$VKBENCH_REPO_URL"
fi
git -C "$checkout" fetch -q --depth 1 origin "$VKBENCH_COMMIT"
git -C "$checkout" checkout -q --detach FETCH_HEAD
head=$(git -C "$checkout" rev-parse HEAD)
if [[ $head != "$VKBENCH_COMMIT" ]]; then
  echo "vkbench-bootstrap: checked out $head, expected $VKBENCH_COMMIT" >&2
  exit 1
fi

venv=$prefix/ansible-venv
if [[ ! -x $venv/bin/ansible-playbook ]]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check -r "$checkout/runners/requirements-bootstrap.txt"

# Modules run with the distro python, which has python3-apt; ansible runs from the venv.
cd "$checkout/runners"
"$venv/bin/ansible-playbook" -c local -i "$VKBENCH_INVENTORY" site.yml
echo "vkbench-bootstrap: provisioned from $VKBENCH_COMMIT"
