# syntax=docker/dockerfile:1
# Valkey built from any git ref (branch, tag or commit): the nightly benchmarks `unstable`.
#
#   docker build --build-arg VALKEY_REF=unstable \
#       -f compose/images/valkey-source.Dockerfile -t vkbench/valkey:unstable compose/images
#   VALKEY_IMAGE=vkbench/valkey:unstable VALKEY_PASSWORD=... docker compose -f compose/standalone.yaml up -d
#
# Multi-arch: docker buildx build --platform linux/amd64,linux/arm64 --build-arg VALKEY_REF=<ref> ... --push
# The server reports the commit in INFO server (valkey_git_sha1), so results name what ran;
# /VALKEY_COMMIT holds it too. A moving ref (unstable) is resolved at build time: rebuild with
# --no-cache (or pass the commit) to get a newer one.

ARG DEBIAN=bookworm-slim

FROM debian:${DEBIAN} AS build
ARG VALKEY_REPO=https://github.com/valkey-io/valkey.git
ARG VALKEY_REF=unstable
# hadolint ignore=DL3008  # Debian stable only takes fixes; pinned versions would vanish with them
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential pkg-config libssl-dev git ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Fetch only that ref; keeping .git lets the build embed the commit (src/mkreleasehdr.sh).
RUN git init -q . && git remote add origin "$VALKEY_REPO" \
 && git fetch -q --depth 1 origin "$VALKEY_REF" && git checkout -q FETCH_HEAD \
 && git rev-parse HEAD >/VALKEY_COMMIT
# Same build options as the official images: TLS on, bundled jemalloc (the default on Linux).
RUN make -j"$(nproc)" BUILD_TLS=yes USE_SYSTEMD=no >/dev/null \
 && make install PREFIX=/out >/dev/null

FROM debian:${DEBIAN}
# hadolint ignore=DL3008  # Debian stable only takes fixes; pinned versions would vanish with them
RUN apt-get update \
 && apt-get install -y --no-install-recommends libssl3 \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir /data
COPY --from=build /out/bin/ /usr/local/bin/
COPY --from=build /VALKEY_COMMIT /VALKEY_COMMIT
RUN valkey-server --version
WORKDIR /data
# The stacks in compose/ start the server with their own sh command; this is for `docker run`.
CMD ["valkey-server", "--protected-mode", "yes"]
