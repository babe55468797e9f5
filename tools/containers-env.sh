# shellcheck shell=bash
# Source me (`. tools/containers-env.sh`) to point docker, docker compose, podman and vkbench at
# the project-local podman service that tools/setup/containers.sh sets up. Nothing here starts
# anything; it only exports paths. An engine you already have (DOCKER_HOST set before sourcing,
# e.g. ssh://pi-server) is left alone.

_vkbench_repo=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)
export VKBENCH_CONTAINERS_STATE="${VKBENCH_CONTAINERS_STATE:-$_vkbench_repo/.cache/containers}"
unset _vkbench_repo

# podman reads these two; the state dir keeps its images and containers out of /var/lib.
export CONTAINERS_CONF="$VKBENCH_CONTAINERS_STATE/containers.conf"
export CONTAINERS_STORAGE_CONF="$VKBENCH_CONTAINERS_STATE/storage.conf"
# docker finds the compose plugin under $DOCKER_CONFIG/cli-plugins; podman wants config.json there.
export DOCKER_CONFIG="$VKBENCH_CONTAINERS_STATE/docker"
export DOCKER_HOST="${DOCKER_HOST:-unix://$VKBENCH_CONTAINERS_STATE/podman.sock}"

# The image built from Debian's valkey packages (its tag carries the packaged version).
if [ -z "${VALKEY_IMAGE:-}" ] && [ -s "$VKBENCH_CONTAINERS_STATE/valkey-image" ]; then
    VALKEY_IMAGE="$(cat "$VKBENCH_CONTAINERS_STATE/valkey-image")"
    export VALKEY_IMAGE
fi
# valkey-cli / valkey-benchmark of the same version, runnable on the host (client outside the containers).
export VKBENCH_CONTAINERS_BIN="$VKBENCH_CONTAINERS_STATE/bin"
