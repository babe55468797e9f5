"""The history directory (layout: docs/history-format.md), read side and low-level writes.

Reading never guesses: a corrupt ``index.json``, a corrupt series line or a history newer
than this code is a :class:`ResultFileError` naming the file. A *missing* index is an empty
history (a new directory, or one whose first ingest died before the index was written: the
next ingest reconciles it from the shards).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import ResultFileError
from .series import sort_key

HISTORY_VERSION = 1


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def empty_index() -> dict:
    return {"history_version": HISTORY_VERSION, "updated": None, "runs": 0, "series": {}}


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """temp file in the same directory + fsync + rename: a reader (or a crash) sees the old
    file or the new one, never half of one. Appends to shards go through here too: the new
    shard content is written whole and renamed over the old one."""
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


def stage_bytes(path: Path, data: bytes) -> Path:
    """First half of an atomic write for batches: the data goes to a temp file beside
    ``path`` (no fsync yet). :func:`commit_staged` makes a whole batch durable with one
    ``sync`` and then renames: hundreds of files cost one flush instead of hundreds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return Path(tmp)


def commit_staged(staged: list[tuple[Path, Path]]) -> None:
    """Make every staged temp file durable, then rename each over its target."""
    if not staged:
        return
    os.sync()
    for tmp, path in staged:
        os.replace(tmp, path)


def discard_staged(staged: list[tuple[Path, Path]]) -> None:
    for tmp, _ in staged:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def write_json(path: Path, data: object, *, indent: int | None = None) -> None:
    text = json.dumps(data, indent=indent, separators=None if indent else (",", ":"))
    write_bytes_atomic(path, (text + "\n").encode("utf-8"))


def series_entry(dims: dict, arch: str | None, points: list[dict], shards: Iterable[str]) -> dict:
    """The index.json entry of one series, from all its points (sorted or not)."""
    ordered = sorted(points, key=sort_key)
    last = ordered[-1] if ordered else None
    last_point = None
    if last is not None:
        metrics = last.get("metrics", {})
        last_point = {
            "rps": metrics.get("rps", {}).get("median"),
            "p50": metrics.get("p50", {}).get("median"),
            "valid": last.get("valid", True),
            "run_id": last["run_id"],
        }
    return {
        "dims": dims,
        "arch": arch,
        "shards": sorted(set(shards)),
        "points": len(ordered),
        "first": ordered[0]["timestamp"] if ordered else None,
        "last": last["timestamp"] if last else None,
        "last_point": last_point,
    }


class HistoryStore:
    """One history directory. Cheap to construct; every read goes to disk."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    # -- paths ---------------------------------------------------------------------------------
    @property
    def format_path(self) -> Path:
        return self.path / "format.json"

    @property
    def index_path(self) -> Path:
        return self.path / "index.json"

    @property
    def detect_path(self) -> Path:
        return self.path / "detect.json"

    def series_dir(self, sid: str) -> Path:
        return self.path / "series" / sid[:2] / sid

    def shard_path(self, sid: str, month: str) -> Path:
        return self.series_dir(sid) / f"{month}.jsonl"

    def run_dir(self, month: str, run_id: str) -> Path:
        return self.path / "runs" / month / _safe_name(run_id)

    def fingerprint_path(self, fingerprint_id: str) -> Path:
        return self.path / "fingerprints" / f"{_safe_name(fingerprint_id)}.json"

    # -- reading -------------------------------------------------------------------------------
    def check_format(self) -> None:
        if not self.format_path.exists():
            return
        data = _read_json(self.format_path)
        _check_version(self.format_path, data)

    def index(self) -> dict:
        """The manifest; an empty one when the history does not exist yet."""
        self.check_format()
        if not self.index_path.exists():
            return empty_index()
        data = _read_json(self.index_path)
        _check_version(self.index_path, data)
        if not isinstance(data.get("series"), dict):
            raise ResultFileError(
                f"{self.index_path}: no 'series' object; not a vkbench history index",
                hint="restore index.json from the gh-pages branch history (git log -- history/index.json)",
            )
        return data

    def series_ids(self) -> list[str]:
        return sorted(self.index()["series"])

    def shard_months(self, sid: str) -> list[str]:
        directory = self.series_dir(sid)
        if not directory.is_dir():
            return []
        return sorted(p.stem for p in directory.glob("*.jsonl"))

    def read_shard(self, sid: str, month: str) -> list[dict]:
        return read_jsonl(self.shard_path(sid, month))

    def read_series(self, sid: str) -> list[dict]:
        """Every point of the series, sorted by (timestamp, run_id). Shards come from the
        directory rather than the index so a stale index never hides points."""
        points: list[dict] = []
        for month in self.shard_months(sid):
            points.extend(self.read_shard(sid, month))
        points.sort(key=sort_key)
        return points

    def fingerprints(self) -> dict[str, dict]:
        out: dict[str, dict] = {}
        directory = self.path / "fingerprints"
        if directory.is_dir():
            for path in sorted(directory.glob("*.json")):
                out[path.stem] = _read_json(path)
        return out

    def read_detect(self) -> dict | None:
        return _read_json(self.detect_path) if self.detect_path.exists() else None

    # -- writing -------------------------------------------------------------------------------
    def ingest(self, result_paths: Iterable[str | os.PathLike]):
        """Validate every input, then add what is new. See :func:`vkbench.history.ingest.ingest`."""
        from .ingest import ingest

        return ingest(self, result_paths)

    def rebuild_index(self) -> dict:
        """Recompute every series entry from its shards (repair after a crash or a hand
        edit). Dims come from the current index, or from the result copies under runs/ for
        series the index does not know."""
        from .series import month_of as _month, series_key as _key

        with self.lock():
            try:
                index = self.index()
            except ResultFileError:
                index = empty_index()
            known = {sid: (e["dims"], e.get("arch")) for sid, e in index["series"].items()}
            for path in sorted((self.path / "runs").glob("*/*/*.json")):
                result = _read_json(path)
                for command in result.get("summary", {}):
                    sid, dims = _key(result, command)
                    known.setdefault(sid, (dims, result.get("environment", {}).get("arch")))
            series = {}
            for directory in sorted((self.path / "series").glob("*/*")):
                sid = directory.name
                if sid not in known:
                    continue
                points = self.read_series(sid)
                if points:
                    dims, arch = known[sid]
                    series[sid] = series_entry(dims, arch, points, {_month(p["timestamp"]) for p in points})
            index["series"] = series
            runs = self.path / "runs"
            index["runs"] = sum(1 for m in runs.iterdir() if m.is_dir() for r in m.iterdir() if r.is_dir()) if runs.is_dir() else 0
            self.write_index(index)
            self.write_format()
            return index

    def write_index(self, index: dict) -> None:
        index["updated"] = utc_now()
        write_json(self.index_path, index, indent=1)

    def write_format(self) -> None:
        if not self.format_path.exists():
            write_json(self.format_path, {"history_version": HISTORY_VERSION})

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Exclusive lock for writers on this machine (flock on the directory itself, so no
        lock file ends up committed to gh-pages)."""
        self.path.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def read_jsonl(path: Path) -> list[dict]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except UnicodeDecodeError as exc:
        raise ResultFileError(f"{path}: not UTF-8 ({exc})", hint=_RESTORE_HINT) from None
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            point = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ResultFileError(f"{path}:{lineno}: corrupt series line ({exc})", hint=_RESTORE_HINT) from None
        if not isinstance(point, dict) or "run_id" not in point or "timestamp" not in point:
            raise ResultFileError(f"{path}:{lineno}: not a series point (no run_id/timestamp)", hint=_RESTORE_HINT)
        out.append(point)
    return out


_RESTORE_HINT = "the history was edited or truncated; restore it from the gh-pages branch history (git log -- history/)"


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultFileError(f"{path}: corrupt JSON ({exc})", hint=_RESTORE_HINT) from None
    if not isinstance(data, dict):
        raise ResultFileError(f"{path}: top level is not an object", hint=_RESTORE_HINT)
    return data


def _check_version(path: Path, data: dict) -> None:
    version = data.get("history_version")
    if not isinstance(version, int):
        raise ResultFileError(f"{path}: no integer history_version; not a vkbench history", hint=_RESTORE_HINT)
    if version > HISTORY_VERSION:
        raise ResultFileError(
            f"{path}: history_version {version} is newer than this vkbench understands ({HISTORY_VERSION})",
            hint="upgrade vkbench (pip install -U vkbench, or pull the repository) before reading or writing this history",
        )


def _safe_name(name: str) -> str:
    """run_id / fingerprint ids become path components: keep them from escaping the tree."""
    cleaned = "".join(c if c.isalnum() or c in "._-+" else "_" for c in name)
    if cleaned in ("", ".", ".."):
        cleaned = "_" + cleaned
    return cleaned
