#!/usr/bin/env bash
# The arm64 Debian bookworm machine tests/arm64 runs vkbench in (a Raspberry Pi OS stand-in, under
# qemu-user emulation): localhost/vkbench-arm64-bookworm:<key> in the project's podman
# (tools/setup/containers.sh), imported with --arch arm64. Also installs what the arm64 tests need
# on the host: qemu-user-static (its binfmt handler is registered by the tests' own fixture, never
# here) and Debian's aarch64 cross compiler (gcc-aarch64-linux-gnu) for the cross-built server.
#
# Built without running anything under emulation, so without touching binfmt_misc:
#   1. `debootstrap --foreign --arch=arm64 --variant=minbase` (first stage: downloads and unpacks
#      the required packages, downloads the rest);
#   2. every downloaded .deb unpacked with the host's dpkg-deb (what the second stage would install,
#      minus maintainer scripts) and the few facts those scripts would make written here: users
#      and groups, the CA bundle, dpkg's status file, the awk alternative;
#   3. vkbench's dependencies (pyproject.toml) as aarch64 wheels for bookworm's Python 3.11,
#      installed by the host's pip (`--platform ... --target`) into /usr/local/lib/python3.11/dist-packages,
#      so the test only installs the vkbench wheel itself (a venv with --system-site-packages).
# Cached by content: the key hashes this file, the mirror and pyproject.toml's dependencies; an
# unchanged recipe reuses the image across sessions.
#
# Idempotent: a second run finds the image and does nothing. Needs root and the Debian mirror
# (VKBENCH_DEBIAN_MIRROR) and PyPI.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tools/containers-env.sh
. "$REPO/tools/containers-env.sh"
MIRROR=${VKBENCH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
WORK="$VKBENCH_CONTAINERS_STATE/arm64-image.work"
PYTHON=${PYTHON:-"$REPO/.venv/bin/python"}

log() { printf 'arm64.sh: %s\n' "$*" >&2; }
die() { printf 'arm64.sh: ERROR: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (debootstrap needs it)"

# The host's tools: the emulator (no binfmt-support: nothing is registered by installing it),
# the cross compiler and its arm64 libc, debootstrap.
HOST_PACKAGES=(debootstrap qemu-user-static gcc-aarch64-linux-gnu libc6-dev-arm64-cross binutils-aarch64-linux-gnu)
missing=()
for package in "${HOST_PACKAGES[@]}"; do
    dpkg-query -W -f '${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
if (( ${#missing[@]} )); then
    log "installing ${missing[*]}"
    if ! apt-cache policy "${missing[@]}" | grep -q 'Candidate: [0-9]'; then apt-get update -qq; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# What the image holds besides minbase: Python with venv and pip (vkbench), CA certificates
# (PyPI over HTTPS), the archive keyring and gpgv (apt-get update of the servers' side apt
# state), procps (ps, for the runner's process checks).
INCLUDE=python3,python3-venv,python3-pip,ca-certificates,debian-archive-keyring,gpgv,procps
# vkbench's runtime dependencies, as pyproject.toml lists them, for bookworm's Python (3.11.2:
# environment markers such as valkey's python_full_version < "3.11.3" are read against it).
DEPENDENCIES=$(sed -n '/^dependencies = \[/,/^\]/p' "$REPO/pyproject.toml")
KEY=$({ printf '%s\n%s\n' "$MIRROR" "$DEPENDENCIES"; cat -- "${BASH_SOURCE[0]}"; } | sha256sum | cut -c1-12)
IMAGE="localhost/vkbench-arm64-bookworm:$KEY"
if podman image exists "$IMAGE"; then
    echo "$IMAGE" >"$VKBENCH_CONTAINERS_STATE/arm64-image"
    exit 0
fi

began=$SECONDS
mkdir -p "$WORK"
rootfs="$WORK/rootfs"
rm -rf "$rootfs" && mkdir -p "$rootfs"
trap 'rm -rf "$rootfs"' EXIT
log "debootstrap --foreign --arch=arm64 --variant=minbase bookworm (first stage only: no emulation)"
debootstrap --foreign --arch=arm64 --variant=minbase --include="$INCLUDE" bookworm "$rootfs" "$MIRROR" \
    >"$WORK/debootstrap.log" 2>&1 || die "debootstrap failed; see $WORK/debootstrap.log"

log "unpacking the downloaded packages with the host's dpkg-deb"
shopt -s nullglob
debs=("$rootfs"/var/cache/apt/archives/*.deb)
(( ${#debs[@]} )) || die "debootstrap left no .deb in $rootfs/var/cache/apt/archives"
for deb in "${debs[@]}"; do
    dpkg-deb -x "$deb" "$rootfs"
done
rm -f "$rootfs"/var/cache/apt/archives/*.deb
rm -rf "$rootfs/debootstrap"

# What the maintainer scripts would have made.
cp "$rootfs/usr/share/base-passwd/passwd.master" "$rootfs/etc/passwd"
cp "$rootfs/usr/share/base-passwd/group.master" "$rootfs/etc/group"
mkdir -p "$rootfs/etc/ssl/certs" "$rootfs/var/lib/dpkg"
cat "$rootfs"/usr/share/ca-certificates/mozilla/*.crt >"$rootfs/etc/ssl/certs/ca-certificates.crt"
touch "$rootfs/var/lib/dpkg/status"
[ -e "$rootfs/usr/bin/awk" ] || ln -s mawk "$rootfs/usr/bin/awk"
[ -e "$rootfs/usr/bin/sh" ] || ln -s dash "$rootfs/usr/bin/sh"
[ -x "$rootfs/usr/bin/python3" ] || die "the rootfs has no /usr/bin/python3"
cat >"$rootfs/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
EOF

log "vkbench's dependencies as aarch64 wheels for Python 3.11 (host pip, --platform)"
mapfile -t requirements < <("$PYTHON" - "$REPO/pyproject.toml" <<'EOF'
import sys, tomllib
print("\n".join(tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]))
EOF
)
platforms=()
for tag in manylinux2014_aarch64 manylinux_2_17_aarch64 manylinux_2_24_aarch64 manylinux_2_27_aarch64 \
           manylinux_2_28_aarch64 manylinux_2_31_aarch64 manylinux_2_34_aarch64 manylinux_2_35_aarch64 \
           manylinux_2_36_aarch64; do
    platforms+=(--platform "$tag")
done
"$PYTHON" -m pip install --quiet --disable-pip-version-check --no-compile --only-binary=:all: \
    "${platforms[@]}" --python-version 3.11.2 --implementation cp --abi cp311 \
    --target "$rootfs/usr/local/lib/python3.11/dist-packages" "${requirements[@]}" \
    >"$WORK/pip.log" 2>&1 || die "pip could not get aarch64 wheels; see $WORK/pip.log"
rm -rf "$rootfs/usr/local/lib/python3.11/dist-packages/bin"
# Byte-code, as python3's postinst and pip would have written it: .pyc files do not depend on the
# architecture, and compiling numpy and scipy under emulation costs about 45 s per container.
# The host's Python is bookworm's 3.11 too (same magic number); checked, not assumed.
host_version=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ "$host_version" = 3.11 ]; then
    "$PYTHON" -m compileall -q -j 0 "$rootfs/usr/lib/python3.11" "$rootfs/usr/lib/python3/dist-packages" \
        "$rootfs/usr/local/lib/python3.11/dist-packages" >"$WORK/compileall.log" 2>&1 || true
else
    log "the host's Python is $host_version, not 3.11: no byte-code ahead (each container compiles its own)"
fi

log "importing $IMAGE (--arch arm64)"
tar -C "$rootfs" -cf - . | podman import -q --arch arm64 \
    --change 'CMD ["sleep", "infinity"]' \
    --change "LABEL org.opencontainers.image.source=debootstrap:bookworm-minbase-arm64" \
    - "$IMAGE" >/dev/null
rm -rf "$rootfs"; trap - EXIT
podman images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/vkbench-arm64-bookworm:' | grep -vx "$IMAGE" \
    | xargs -r podman rmi -f >/dev/null 2>&1 || true
echo "$IMAGE" >"$VKBENCH_CONTAINERS_STATE/arm64-image"
log "done: $IMAGE in $((SECONDS - began)) s"
