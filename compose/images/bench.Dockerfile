# syntax=docker/dockerfile:1
# The benchmark client image (the `bench` service of the stacks in compose/):
# memtier_benchmark built from source, plus valkey-benchmark and valkey-cli from the official
# valkey image of the same architecture. Multi-arch, from the repository root:
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#       -f compose/images/bench.Dockerfile -t vkbench/bench:latest --push compose/images
#
# (without --push, load one platform: --platform linux/arm64 --load). The arm64 half builds
# under QEMU on an amd64 machine: a few minutes, memtier is small.

ARG DEBIAN=bookworm-slim
ARG VALKEY_IMAGE=valkey/valkey:8.0.1

# valkey-benchmark: the official image's build (TLS on, jemalloc bundled) for this platform.
FROM ${VALKEY_IMAGE} AS valkey

FROM debian:${DEBIAN} AS memtier
ARG MEMTIER_REPO=https://github.com/RedisLabs/memtier_benchmark.git
ARG MEMTIER_REF=2.1.1
# hadolint ignore=DL3008  # Debian stable only takes fixes; pinned versions would vanish with them
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential autoconf automake pkg-config \
      libevent-dev libpcre3-dev zlib1g-dev libssl-dev git ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Any tag, branch or commit: fetch only that ref.
RUN git init -q . && git remote add origin "$MEMTIER_REPO" \
 && git fetch -q --depth 1 origin "$MEMTIER_REF" && git checkout -q FETCH_HEAD \
 && autoreconf -ivf >/dev/null && ./configure --quiet && make -j"$(nproc)" && make install

FROM debian:${DEBIAN}
# Runtime libraries of both tools only; no compilers in the final image.
# hadolint ignore=DL3008  # Debian stable only takes fixes; pinned versions would vanish with them
RUN apt-get update \
 && apt-get install -y --no-install-recommends libevent-2.1-7 libevent-openssl-2.1-7 libssl3 zlib1g ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=memtier /usr/local/bin/memtier_benchmark /usr/local/bin/
COPY --from=valkey /usr/local/bin/valkey-benchmark /usr/local/bin/valkey-cli /usr/local/bin/
# Fail the build, not the benchmark, when a library is missing.
RUN memtier_benchmark --version && valkey-benchmark --version
CMD ["valkey-benchmark", "--help"]
