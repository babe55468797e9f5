"""The two workload catalogs, fetched from their real homes at pinned commits, content-checked.

    redis/redis-benchmarks-specification @ 15164ed2   (or $VKBENCH_SPECS_SOURCE: a path or URL)
    valkey-io/valkey-perf-benchmark      @ d565f1c0   (or $VKBENCH_PERF_CONFIGS_SOURCE)

Each source is a .tar.gz of the repository (GitHub's archive of the commit, or a ``git archive``
of it) or a folder holding the repository's files. Only the files vkbench reads are taken (the
spec YAML and the JSON indexes; the perf configs), each bounded in size, and their *content
digest* (sha256 over the sorted paths and each file's sha256) must equal the pinned one: the
archive's bytes, compression and top-level folder name may differ between GitHub and a local
copy, the files may not. A different commit is refused, never used.
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import os
import tarfile
import urllib.request
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import MissingBinaryError

MAX_FILE_BYTES = 1024 * 1024
MAX_TOTAL_BYTES = 64 * 1024 * 1024
DOWNLOAD_TIMEOUT_S = 120


@dataclass(frozen=True)
class CatalogSource:
    name: str
    repository: str
    commit: str
    variable: str
    patterns: tuple[str, ...]          # paths (below the top-level folder) vkbench reads
    content_sha256: str

    @property
    def default_url(self) -> str:
        return f"https://github.com/{self.repository}/archive/{self.commit}.tar.gz"

    def origin(self) -> str:
        return os.environ.get(self.variable) or self.default_url


SPECS = CatalogSource(
    name="redis-benchmarks-specification", repository="redis/redis-benchmarks-specification",
    commit="15164ed290476eb3d4fe1c24571c62083d1250f7", variable="VKBENCH_SPECS_SOURCE",
    patterns=("groups.json", "commands.json", "redis_benchmarks_specification/__common__/*.json",
              "redis_benchmarks_specification/test-suites/*.yml"),
    content_sha256="cc6ed78752959bb1f7af0cff9015a32e79e4138b6ebf37ac5f3ea13bbdbc6c54",
)
PERF_CONFIGS = CatalogSource(
    name="valkey-perf-benchmark", repository="valkey-io/valkey-perf-benchmark",
    commit="d565f1c0702e95df9ff399a11aad9c9f9ea2025b", variable="VKBENCH_PERF_CONFIGS_SOURCE",
    patterns=("configs/*.json",),
    content_sha256="842d398dbc55ea0039488a968c36ff6e447bbb2a210379a6ccb9d1dfc49ecec5",
)


@dataclass(frozen=True)
class Catalog:
    source: CatalogSource
    origin: str
    files: dict[str, bytes]            # path below the top-level folder -> content

    def text(self, path: str) -> str:
        return self.files[path].decode("utf-8", errors="replace")

    def matching(self, pattern: str) -> list[str]:
        return sorted(p for p in self.files if fnmatch.fnmatchcase(p, pattern))


def content_digest(files: dict[str, bytes]) -> str:
    outer = hashlib.sha256()
    for path in sorted(files):
        outer.update(f"{path}\0{hashlib.sha256(files[path]).hexdigest()}\n".encode())
    return outer.hexdigest()


def _wanted(path: str, source: CatalogSource) -> bool:
    # fnmatch's * crosses "/": require the same number of components as the pattern.
    return any(fnmatch.fnmatchcase(path, p) and path.count("/") == p.count("/") for p in source.patterns)


def _read_archive(data: bytes, source: CatalogSource, origin: str) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            for member in tar:
                if not member.isfile():
                    continue          # links, devices, folders: never followed nor created
                parts = member.name.split("/", 1)
                if len(parts) != 2 or not _wanted(parts[1], source):
                    continue
                if member.size > MAX_FILE_BYTES or total + member.size > MAX_TOTAL_BYTES:
                    raise MissingBinaryError(f"{origin}: {member.name} is too large for a catalog file",
                                             hint=f"point {source.variable} at the {source.name} archive")
                handle = tar.extractfile(member)
                files[parts[1]] = handle.read() if handle else b""
                total += member.size
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise MissingBinaryError(f"{origin} is not a readable .tar.gz: {exc}",
                                 hint=f"point {source.variable} at the {source.name} archive or folder") from None
    return files


def _read_folder(folder: Path, source: CatalogSource) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    total = 0
    for pattern in source.patterns:
        for path in sorted(folder.glob(pattern)):
            if path.is_symlink() or not path.is_file():
                continue
            size = path.stat().st_size
            if size > MAX_FILE_BYTES or total + size > MAX_TOTAL_BYTES:
                raise MissingBinaryError(f"{path} is too large for a catalog file", hint="check the folder")
            files[path.relative_to(folder).as_posix()] = path.read_bytes()
            total += size
    return files


def _download(origin: str, source: CatalogSource) -> bytes:
    try:
        with urllib.request.urlopen(origin, timeout=DOWNLOAD_TIMEOUT_S) as response:
            data = response.read(MAX_TOTAL_BYTES + 1)
    except OSError as exc:
        raise MissingBinaryError(f"cannot download {source.name} from {origin}: {exc}",
                                 hint=f"set {source.variable} to a local copy (a .tar.gz or a folder) or a reachable URL") from None
    if len(data) > MAX_TOTAL_BYTES:
        raise MissingBinaryError(f"{origin} is larger than {MAX_TOTAL_BYTES} bytes", hint="check the URL")
    return data


@lru_cache(maxsize=8)
def _load(source: CatalogSource, origin: str) -> Catalog:
    if "://" in origin:
        files = _read_archive(_download(origin, source), source, origin)
    else:
        path = Path(origin).expanduser()
        if path.is_dir():
            files = _read_folder(path, source)
        elif path.is_file():
            if path.stat().st_size > MAX_TOTAL_BYTES:
                raise MissingBinaryError(f"{path} is larger than {MAX_TOTAL_BYTES} bytes", hint="check the file")
            files = _read_archive(path.read_bytes(), source, origin)
        else:
            raise MissingBinaryError(f"{source.variable}={origin} is neither a file nor a folder",
                                     hint=f"point it at the {source.name} archive, or unset it to download from GitHub")
    if not files:
        raise MissingBinaryError(f"{origin} holds none of {source.name}'s files ({', '.join(source.patterns)})",
                                 hint=f"point {source.variable} at the {source.name} repository archive or folder")
    digest = content_digest(files)
    if digest != source.content_sha256:
        raise MissingBinaryError(
            f"{source.name} from {origin} has content digest {digest[:16]}..., expected {source.content_sha256[:16]}... "
            f"(commit {source.commit[:12]})",
            hint=f"it is another commit or was modified: fetch {source.repository} at {source.commit} (or fix {source.variable})")
    return Catalog(source=source, origin=origin, files=files)


def load_catalog(source: CatalogSource) -> Catalog:
    """The catalog's files, from ``$VARIABLE`` or GitHub at the pinned commit, digest checked."""
    return _load(source, source.origin())
