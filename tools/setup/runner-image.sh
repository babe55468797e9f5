#!/usr/bin/env bash
# The Debian bookworm machine that tests/integration/test_runner_provisioning.py provisions with
# runners/site.yml: a `debootstrap --variant=minbase bookworm` rootfs imported into the project's
# podman (tools/setup/containers.sh) as localhost/vkbench-runner-bookworm:<key>.
#
# Made once per recipe and cached (the key below): the image carries fresh apt lists and, in apt's own
# archive (/var/cache/apt/archives), the .deb files of what the roles install. The playbook
# still installs every package itself (dpkg unpacks and configures them on the first run);
# only the download is done ahead, so the test does not spend minutes fetching from the mirror.
# python3 and python3-apt are in the base, as on every Debian/Raspberry Pi OS image Ansible targets.
#
# Idempotent: a second run finds the image and does nothing. Needs root and the Debian mirror
# (VKBENCH_DEBIAN_MIRROR, default http://deb.debian.org/debian).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tools/containers-env.sh
. "$REPO/tools/containers-env.sh"
MIRROR=${VKBENCH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
WORK="$VKBENCH_CONTAINERS_STATE/runner-image.work"

log() { printf 'runner-image.sh: %s\n' "$*" >&2; }
die() { printf 'runner-image.sh: ERROR: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (debootstrap needs it)"

# What the playbook installs with apt, one list per apt task, in the order the roles run them
# (docker role with docker_engine: podman, then actions_runner; runners/roles/*/tasks and
# defaults): keep in step with them (tests/unit/runners checks it; the provisioning test fails
# when the playbook had to download). Each list is resolved as its own transaction, as the
# playbook does: a dependency with alternatives ("gnupg | gpg", podman's libgpgme11) resolves
# differently when the whole set is asked for at once, and the playbook then downloads.
ENGINE_PACKAGES=(podman runc)
RUNNER_PACKAGES=(
    # the runner's scripts
    ca-certificates curl git jq tar
    # what benchmark jobs build and run with (actions_runner_job_packages; perf as on Debian)
    build-essential ccache pkg-config autoconf automake libtool
    libevent-dev libssl-dev zlib1g-dev libpcre3-dev python3 python3-venv linux-perf valgrind
)
# The content key: this file (the package lists and every build step) and the mirror. Any change
# to either makes a new image; an unchanged recipe reuses the one in the project's podman
# storage (.cache/containers), across sessions.
KEY=$({ printf '%s\n' "$MIRROR"; cat -- "${BASH_SOURCE[0]}"; } | sha256sum | cut -c1-12)
IMAGE="localhost/vkbench-runner-bookworm:$KEY"
if podman image exists "$IMAGE"; then
    echo "$IMAGE" >"$VKBENCH_CONTAINERS_STATE/runner-image"
    exit 0
fi

if ! command -v debootstrap >/dev/null; then
    log "installing debootstrap"
    if ! apt-cache policy debootstrap | grep -q 'Candidate: [0-9]'; then apt-get update -qq; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

rootfs="$WORK/rootfs"
rm -rf "$rootfs" && mkdir -p "$rootfs"
trap 'rm -rf "$rootfs"' EXIT
log "debootstrap --variant=minbase bookworm (about 30 s)"
debootstrap --variant=minbase --include=python3,python3-apt bookworm "$rootfs" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    || die "debootstrap failed; see $WORK/debootstrap.log"

cat >"$rootfs/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb ${MIRROR%/debian}/debian-security bookworm-security main
EOF
# As in Debian's container images: no service starts from maintainer scripts (there is no init
# to start them), and dpkg skips fsync (a throwaway test machine, not a benchmark runner).
printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d" && chmod 0755 "$rootfs/usr/sbin/policy-rc.d"
echo force-unsafe-io >"$rootfs/etc/dpkg/dpkg.cfg.d/vkbench-unsafe-io"
cp -L /etc/resolv.conf "$rootfs/etc/resolv.conf"
log "apt lists and the roles' .debs into the image's apt archive"
chroot "$rootfs" apt-get -qq update
download() {
    chroot "$rootfs" env DEBIAN_FRONTEND=noninteractive apt-get -qq install --download-only --no-install-recommends -y \
        "$@" >/dev/null
}
download "${ENGINE_PACKAGES[@]}"
download "${RUNNER_PACKAGES[@]}"
rm -f "$rootfs/etc/resolv.conf"   # the engine provides one

log "importing $IMAGE"
tar -C "$rootfs" -cf - . | podman import -q \
    --change 'CMD ["sleep", "infinity"]' \
    --change "LABEL org.opencontainers.image.source=debootstrap:bookworm-minbase" \
    - "$IMAGE" >/dev/null
rm -rf "$rootfs"; trap - EXIT
# Older keys of this image are dead weight.
podman images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/vkbench-runner-bookworm:' | grep -vx "$IMAGE" \
    | xargs -r podman rmi -f >/dev/null 2>&1 || true
echo "$IMAGE" >"$VKBENCH_CONTAINERS_STATE/runner-image"
log "done: $IMAGE"
