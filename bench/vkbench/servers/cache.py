"""The binary cache: ``$VKBENCH_CACHE`` (default ``~/.cache/vkbench``).

Layout, one directory per release::

    <cache>/<engine>/<version>/bin/<binary>     valkey-server, valkey-benchmark, ...
    <cache>/<engine>/<version>/lib/             shared libraries the binaries need (Debian)
    <cache>/<engine>/<version>/meta.json        source, detail, commit; written last
    <cache>/.locks/                             one flock per entry, so parallel fetches wait
    <cache>/.apt/                               the side apt state (lists, downloaded .debs)
    <cache>/.tmp/                               staging; an entry appears by one rename

An entry counts as cached only when ``meta.json`` is there, so a fetch killed half-way never
leaves something that looks complete.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

META = "meta.json"
OWNER = ".owner"

#: The lock files this thread holds (entry_lock): taking one again nests instead of waiting for
#: itself (flock locks belong to an open file, so a second open would block forever).
_held = threading.local()


def _sweep_orphans(tmp_root: Path) -> None:
    """Remove staging directories whose process died without cleaning up (SIGKILL, power loss)."""
    for path in tmp_root.iterdir():
        try:
            pid = int((path / OWNER).read_text())
        except (OSError, ValueError):
            continue
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except PermissionError:
            pass


def cache_dir() -> Path:
    configured = os.environ.get("VKBENCH_CACHE")
    return Path(configured).expanduser().absolute() if configured else Path.home() / ".cache" / "vkbench"


def entry_dir(engine: str, version: str, root: Path | None = None) -> Path:
    # A git ref may contain "/" (feature/x); keep one directory level per entry.
    return (root or cache_dir()) / engine / version.replace("/", "_")


def read_meta(entry: Path) -> dict | None:
    try:
        return json.loads((entry / META).read_text())
    except (OSError, ValueError):
        return None


def cached_binary(engine: str, version: str, name: str, root: Path | None = None) -> tuple[Path, dict] | None:
    """(path, meta) of ``name`` in a complete cache entry, else None."""
    entry = entry_dir(engine, version, root)
    meta = read_meta(entry)
    path = entry / "bin" / name
    if meta is None or not path.is_file() or not os.access(path, os.X_OK):
        return None
    return path, meta


def library_env(entry: Path) -> dict[str, str]:
    lib = entry / "lib"
    return {"LD_LIBRARY_PATH": str(lib)} if lib.is_dir() and any(lib.iterdir()) else {}


@contextlib.contextmanager
def entry_lock(name: str, root: Path | None = None) -> Iterator[None]:
    """Exclusive lock so two processes never fetch the same thing at once (the second waits).
    Re-entrant within a thread: a caller that holds the lock may call code that takes it."""
    locks = (root or cache_dir()) / ".locks"
    locks.mkdir(parents=True, exist_ok=True)
    path = str((locks / f"{name.replace('/', '_')}.lock").absolute())
    held: set[str] = getattr(_held, "paths", None) or set()
    _held.paths = held
    if path in held:
        yield
        return
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        held.add(path)
        try:
            yield
        finally:
            held.discard(path)
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def staging(root: Path | None = None) -> Iterator[Path]:
    """A scratch directory on the cache's file system (so the final rename is atomic)."""
    tmp_root = (root or cache_dir()) / ".tmp"
    tmp_root.mkdir(parents=True, exist_ok=True)
    _sweep_orphans(tmp_root)
    path = Path(tempfile.mkdtemp(dir=tmp_root))
    (path / OWNER).write_text(str(os.getpid()))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def install_entry(staged: Path, engine: str, version: str, meta: dict, root: Path | None = None) -> Path:
    """Write ``meta.json`` into ``staged`` and move it into place, replacing an older entry."""
    (staged / META).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    final = entry_dir(engine, version, root)
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():
        shutil.rmtree(final)
    staged.chmod(0o755)      # mkdtemp made it 0700; other users of a shared cache may run it
    os.rename(staged, final)
    return final


def update_meta(entry: Path, changes: dict) -> dict:
    """Merge ``changes`` into an entry's ``meta.json`` (atomically: a reader sees old or new)."""
    meta = {**(read_meta(entry) or {}), **changes}
    fd, tmp = tempfile.mkstemp(dir=entry, prefix=".meta-")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, entry / META)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return meta


def list_entries(root: Path | None = None) -> list[tuple[str, str, Path, dict]]:
    """(engine, version, entry dir, meta) of every complete entry."""
    base = root or cache_dir()
    out = []
    for engine_dir in sorted(p for p in base.glob("*") if p.is_dir() and not p.name.startswith(".")):
        for entry in sorted(p for p in engine_dir.iterdir() if p.is_dir()):
            meta = read_meta(entry)
            if meta is not None:
                out.append((engine_dir.name, meta.get("version", entry.name), entry, meta))
    return out
