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
# The same build as tools/setup/memtier.sh (bench/vkbench/servers/memtier_build.py): the 2.3.0
# source release, its sha256 checked, vkbench's patches applied (copies in memtier-patches/,
# kept identical by tests/unit/servers/test_memtier_build.py).
ARG MEMTIER_SOURCE=https://github.com/RedisLabs/memtier_benchmark/archive/refs/tags/2.3.0.tar.gz
ARG MEMTIER_SHA256=c093d85573e9d143e92a2d107f516caf2f09cf716eeb178047a03165fdde05b8
# hadolint ignore=DL3008  # Debian stable only takes fixes; pinned versions would vanish with them
RUN apt-get update \
 && apt-get install -y --no-install-recommends g++ make autoconf automake pkg-config patch \
      libevent-dev libpcre3-dev zlib1g-dev libssl-dev curl ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY memtier-patches/ /patches/
RUN curl -fsSL -o memtier.tar.gz "$MEMTIER_SOURCE" \
 && echo "$MEMTIER_SHA256  memtier.tar.gz" | sha256sum -c - \
 && tar xzf memtier.tar.gz --strip-components=1 \
 && for p in /patches/*.patch; do patch -p1 --forward --batch < "$p"; done \
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
