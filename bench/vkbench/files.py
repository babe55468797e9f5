"""File primitives every writer shares: atomic writes, staged batches, a directory lock, the UTC clock.

Why one module: the history, detection, bisect, A/B, profile and export writers all promise the
same thing — a reader (or a crash) sees the old file or the new one, never half of one — and they
keep that promise through these few functions rather than each its own copy.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator


def utc_now() -> str:
    """Now, in UTC, as the history and the detection files record times (second precision)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """temp file in the same directory + fsync + rename: a reader (or a crash) sees the old
    file or the new one, never half of one. Appends to shards go through here too: the new
    shard content is written whole and renamed over the old one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(path: Path, data: object, *, indent: int | None = None) -> None:
    """Atomic JSON: compact without ``indent``, else indented; always one trailing newline."""
    text = json.dumps(data, indent=indent, separators=None if indent else (",", ":"))
    write_bytes_atomic(path, (text + "\n").encode("utf-8"))


def read_json_object(path: Path, hint: str) -> dict:
    """A JSON file whose top level is an object; anything else (corrupt JSON, not UTF-8, a
    directory, a list) is a ResultFileError naming the file, with ``hint``."""
    from .errors import ResultFileError

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ResultFileError(f"{path}: corrupt JSON ({exc})", hint=hint) from None
    except IsADirectoryError:
        raise ResultFileError(f"{path}: a directory where a JSON file belongs", hint=hint) from None
    if not isinstance(data, dict):
        raise ResultFileError(f"{path}: top level is not an object", hint=hint)
    return data


def stage_bytes(path: Path, data: bytes) -> Path:
    """First half of an atomic write for batches: the data goes to a temp file beside
    ``path`` (no fsync yet). :func:`commit_staged` makes a whole batch durable with one
    ``sync`` and then renames: hundreds of files cost one flush instead of hundreds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    except BaseException:       # disk full, file-size limit: no temp file left beside the target
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return Path(tmp)


def commit_staged(staged: list[tuple[Path, Path]]) -> None:
    """Make every staged temp file durable, then rename each over its target."""
    if not staged:
        return
    os.sync()
    for tmp, path in staged:
        os.replace(tmp, path)


def discard_staged(staged: list[tuple[Path, Path]]) -> None:
    """Remove the temp files of a batch that will not be committed."""
    for tmp, _ in staged:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


@contextlib.contextmanager
def directory_lock(path: Path) -> Iterator[None]:
    """Exclusive lock for writers on this machine: flock on the directory itself (created if
    missing), so no lock file ends up in what is committed (gh-pages)."""
    path.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
