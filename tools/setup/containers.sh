#!/usr/bin/env bash
# Give this Debian bookworm host a Docker-compatible container engine without Docker:
# podman + runc behind a Docker API socket, Docker Compose v2 as a CLI plugin, and a local
# valkey image built from Debian's packages (no registry is reachable here).
#
# Idempotent and quiet: a second run checks everything and changes nothing. Afterwards:
#   . tools/containers-env.sh      # exports DOCKER_HOST, DOCKER_CONFIG, CONTAINERS_CONF, VALKEY_IMAGE
#
# Everything lives under $VKBENCH_CONTAINERS_STATE (default .cache/containers in the repo).
# The system's apt sources are never changed: trixie and bookworm-backports are read through
# a side source list. Podman is confined to the host network namespace (netns=host and
# network_mode: host in every stack) so it never creates bridges, nftables rules or turns on
# ip_forward; the end of this script verifies that and stops the service if it did.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tools/containers-env.sh
. "$REPO/tools/containers-env.sh"
STATE=$VKBENCH_CONTAINERS_STATE
SOCK="$STATE/podman.sock"
# Our own checks talk to our own socket, whatever DOCKER_HOST the caller has.
LOCAL_DOCKER_HOST="unix://$SOCK"

log() { printf 'containers.sh: %s\n' "$*" >&2; }
die() { printf 'containers.sh: ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root (apt-get install and podman's root mode need it)"
command -v apt-get >/dev/null || die "needs a Debian host (apt-get)"
mkdir -p "$STATE"

# --- host network baseline, recorded before podman ever runs --------------------------------
# What podman's bridge network would add: a bridge (podman0, cni-podman0) and ip_forward=1.
# Other links (another test's veth in its own netns setup) are not podman's business.
host_bridges() {
    local dev
    for dev in /sys/class/net/*; do
        if [ -d "$dev/bridge" ] || case "${dev##*/}" in podman*|cni-*) true ;; *) false ;; esac; then
            echo "${dev##*/}"
        fi
    done | sort
}
host_forward() { cat /proc/sys/net/ipv4/ip_forward; }
# -e, not -s: no bridge at all is the usual (empty) baseline.
[ -e "$STATE/host-bridges.baseline" ] || host_bridges >"$STATE/host-bridges.baseline"
[ -s "$STATE/ip-forward.baseline" ] || host_forward >"$STATE/ip-forward.baseline"

# --- podman and runc from bookworm -----------------------------------------------------------
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
need=()
for pkg in podman runc; do installed "$pkg" || need+=("$pkg"); done
if [ "${#need[@]}" -gt 0 ]; then
    log "installing ${need[*]}"
    if ! apt-cache policy podman | grep -q 'Candidate: [0-9]'; then apt-get update -qq; fi
    # No recommends: slirp4netns, fuse-overlayfs, iptables and friends are not wanted here.
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# --- side apt lists: trixie (docker-compose) and bookworm-backports (valkey 8.0.1) ------------
APT_DIR="$STATE/apt"
mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial" "$STATE/debs"
cat >"$APT_DIR/sources.list" <<'EOF'
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-backports main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main
EOF
side_apt() {
    apt-get -qq \
        -o Dir::Etc::SourceList="$APT_DIR/sources.list" \
        -o Dir::Etc::SourceParts=/dev/null \
        -o Dir::State::Lists="$APT_DIR/lists" \
        -o Dir::Cache="$APT_DIR/cache" \
        -o APT::Sandbox::User=root \
        "$@"
}
side_download() {  # side_download PKG/SUITE ... (into $STATE/debs)
    (cd "$STATE/debs" && side_apt download "$@" >/dev/null)
}
side_lists_ready() { compgen -G "$APT_DIR/lists/*trixie*Packages*" >/dev/null; }

PLUGIN="$DOCKER_CONFIG/cli-plugins/docker-compose"
if [ ! -x "$PLUGIN" ] || ! compgen -G "$STATE/debs/valkey-tools_*.deb" >/dev/null; then
    side_lists_ready || { log "reading trixie and bookworm-backports package lists (side list)"; side_apt update; }
fi

# --- Docker Compose v2 from trixie, as a docker CLI plugin (not installed system-wide) --------
mkdir -p "$DOCKER_CONFIG/cli-plugins"
[ -s "$DOCKER_CONFIG/config.json" ] || echo '{}' >"$DOCKER_CONFIG/config.json"  # podman errors without it
if [ ! -x "$PLUGIN" ]; then
    log "fetching docker-compose from trixie"
    side_download docker-compose/trixie
    rm -rf "$STATE/debs/compose" && mkdir -p "$STATE/debs/compose"
    dpkg -x "$STATE"/debs/docker-compose_*.deb "$STATE/debs/compose"
    install -m 0755 "$STATE/debs/compose/usr/libexec/docker/cli-plugins/docker-compose" "$PLUGIN"
fi
command -v docker >/dev/null || die "no docker CLI on PATH (this machine kind ships one in /usr/local/bin)"

# --- valkey 8.0.1 from bookworm-backports, unpacked (host tools + image contents) ------------
ROOT="$STATE/valkey-debs"
if [ ! -x "$ROOT/usr/bin/valkey-server" ]; then
    log "fetching valkey-server and valkey-tools from bookworm-backports"
    side_download valkey-server/bookworm-backports valkey-tools/bookworm-backports
    # liblzf1 and libjemalloc2 come from bookworm itself: the system's own lists are right here.
    (cd "$STATE/debs" && apt-get download -qq -o APT::Sandbox::User=root liblzf1 libjemalloc2 >/dev/null)
    rm -rf "$ROOT" && mkdir -p "$ROOT"
    for deb in "$STATE"/debs/valkey-server_*.deb "$STATE"/debs/valkey-tools_*.deb \
               "$STATE"/debs/liblzf1_*.deb "$STATE"/debs/libjemalloc2_*.deb; do
        dpkg -x "$deb" "$ROOT"
    done
fi
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null || echo "$(uname -m)-linux-gnu")
VALKEY_LIBS="$ROOT/usr/lib/$MULTIARCH"
VALKEY_VERSION=$(LD_LIBRARY_PATH="$VALKEY_LIBS" "$ROOT/usr/bin/valkey-server" --version | sed -n 's/.* v=\([0-9.]*\).*/\1/p')
[ -n "$VALKEY_VERSION" ] || die "could not run the unpacked valkey-server (missing library?)"

# Host wrappers: the client runs outside the containers (see docs/compose.md, 'podman traps').
mkdir -p "$VKBENCH_CONTAINERS_BIN"
for tool in valkey-server valkey-cli valkey-benchmark; do
    wrapper="$VKBENCH_CONTAINERS_BIN/$tool"
    # shellcheck disable=SC2016  # $LD_LIBRARY_PATH and $@ are for the wrapper to expand
    content=$(printf '#!/bin/sh\n# valkey %s from bookworm-backports, unpacked by tools/setup/containers.sh\nLD_LIBRARY_PATH="%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s" "$@"\n' \
        "$VALKEY_VERSION" "$VALKEY_LIBS" "$ROOT/usr/bin/$tool")
    if [ ! -x "$wrapper" ] || [ "$(cat "$wrapper")" != "$content" ]; then
        printf '%s\n' "$content" >"$wrapper" && chmod 0755 "$wrapper"
    fi
done

# --- podman configuration: the four settings without which it fails or hangs here ------------
NOFILE=$(ulimit -Hn)
[ "$NOFILE" = unlimited ] && NOFILE=1048576
NPROC=$(ulimit -Hu)
{ [ "$NPROC" = unlimited ] || [ "$NPROC" -gt 32768 ]; } && NPROC=32768
mkdir -p "$STATE/storage/root" "$STATE/storage/runroot" "$STATE/tmp"
cat >"$CONTAINERS_CONF" <<EOF
# Written by tools/setup/containers.sh; rewritten on every run.
[containers]
# Host network namespace: podman's default bridge would add nftables rules and a bridge to
# the host and turn on ip_forward. Every compose service also says network_mode: host.
netns = "host"
# The VM refuses podman's default rlimits (setrlimit RLIMIT_NOFILE: Operation not permitted).
default_ulimits = ["nofile=$NOFILE:$NOFILE", "nproc=$NPROC:$NPROC"]
# No journald without systemd.
log_driver = "k8s-file"

[engine]
# crun fails on this hybrid cgroup v1/v2 host; there is no systemd for the systemd manager.
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "$STATE/tmp"
EOF
cat >"$CONTAINERS_STORAGE_CONF" <<EOF
# Written by tools/setup/containers.sh: images and containers stay in the work dir.
[storage]
driver = "overlay"
graphroot = "$STATE/storage/root"
runroot = "$STATE/storage/runroot"
EOF

# --- the Docker API socket -------------------------------------------------------------------
engine_answers() { DOCKER_HOST=$LOCAL_DOCKER_HOST timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
if ! engine_answers; then
    if [ -s "$STATE/podman.pid" ] && kill -0 "$(cat "$STATE/podman.pid")" 2>/dev/null; then
        log "podman service $(cat "$STATE/podman.pid") does not answer; restarting it"
        kill "$(cat "$STATE/podman.pid")" || true
        sleep 1
    fi
    rm -f "$SOCK"
    # setsid: the service outlives this script and is not hit by the caller's Ctrl-C.
    setsid podman system service --time=0 "unix://$SOCK" >>"$STATE/podman.log" 2>&1 </dev/null &
    echo $! >"$STATE/podman.pid"
    for _ in $(seq 1 60); do engine_answers && break; sleep 0.5; done
    engine_answers || die "podman system service did not answer on $SOCK (see $STATE/podman.log)"
fi

# --- the valkey image, from the unpacked packages (tar + podman import, no registry) ---------
IMAGE="localhost/vkbench-valkey:$VALKEY_VERSION"
if ! podman image exists "$IMAGE"; then
    log "building $IMAGE"
    rootfs=$(mktemp -d "$STATE/tmp/rootfs.XXXXXX")
    trap 'rm -rf "$rootfs"' EXIT
    mkdir -p "$rootfs/usr/bin" "$rootfs/bin" "$rootfs/data" "$rootfs/tmp" "$rootfs/etc"
    chmod 1777 "$rootfs/tmp"
    cp "$ROOT/usr/bin/valkey-server" "$ROOT/usr/bin/valkey-cli" "$ROOT/usr/bin/valkey-benchmark" "$rootfs/usr/bin/"
    # /bin/sh runs the server's start script, the healthchecks and cluster-init; sleep paces their loops.
    cp -L /bin/sh "$rootfs/bin/sh"
    cp -L "$(command -v sleep)" "$rootfs/bin/sleep"
    # Every shared library ldd lists (the unpacked ones first), at the path the loader expects.
    for bin in "$rootfs"/usr/bin/* "$rootfs"/bin/*; do
        LD_LIBRARY_PATH="$VALKEY_LIBS" ldd "$bin" | grep -o '/[^ ]*' || true
    done | sort -u | while read -r lib; do
        dest="${lib#"$ROOT"}"   # liblzf and jemalloc unpacked under $ROOT go to /usr/lib/<multiarch>
        mkdir -p "$rootfs$(dirname "$dest")"
        cp -L "$lib" "$rootfs$dest"
    done
    printf 'root:x:0:0:root:/data:/bin/sh\n' >"$rootfs/etc/passwd"
    tar -C "$rootfs" -cf - . | podman import -q \
        --change 'WORKDIR /data' --change 'CMD ["valkey-server"]' \
        --change "LABEL org.opencontainers.image.source=debian:bookworm-backports/valkey-server" \
        --change "LABEL org.opencontainers.image.version=$VALKEY_VERSION" \
        - "$IMAGE" >/dev/null
    rm -rf "$rootfs"; trap - EXIT
    # The runtime settings work (runc, rlimits, host netns): podman CLI, not the socket (docker run spins it).
    podman run --rm --network host "$IMAGE" valkey-server --version >/dev/null \
        || die "$IMAGE does not run; see $STATE/podman.log"
fi
echo "$IMAGE" >"$STATE/valkey-image"

# --- verify: podman changed nothing on the host network --------------------------------------
new_links=$(comm -13 "$STATE/host-bridges.baseline" <(host_bridges) || true)
forward_now=$(host_forward)
if [ -n "$new_links" ] || [ "$forward_now" != "$(cat "$STATE/ip-forward.baseline")" ]; then
    {
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        echo "containers.sh: ERROR: the host network changed after starting podman"
        [ -z "$new_links" ] || echo "  new bridges: $(echo "$new_links" | tr '\n' ' ')"
        echo "  net.ipv4.ip_forward: was $(cat "$STATE/ip-forward.baseline"), now $forward_now"
        echo "  Stopping the podman service. Check netns=\"host\" in $CONTAINERS_CONF and"
        echo "  network_mode: host on every compose service, then undo the change by hand."
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    } >&2
    [ -s "$STATE/podman.pid" ] && kill "$(cat "$STATE/podman.pid")" 2>/dev/null || true
    exit 1
fi
