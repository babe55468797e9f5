"""Read-only access to a history directory, as docs/history-format.md documents it.

The site reads the documented format (index.json lists the shards it draws), with the store's
line reader (:func:`vkbench.history.store.read_jsonl`) so both agree on what a valid series line
is. Every problem is a :class:`ResultFileError` that names the file and says what to do.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ResultFileError
from ..history.store import HISTORY_VERSION, HistoryStore, parse_jsonl


def point_order(point: dict) -> tuple[str, str]:
    """The order of a series' points: (timestamp, run_id)."""
    return (point.get("timestamp") or "", point.get("run_id") or "")


_REBUILD_HINT = "restore the history from the gh-pages branch (history/), or re-ingest the results with `vkbench ingest`"


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultFileError(f"{path}: corrupt JSON ({exc})", hint=_REBUILD_HINT) from None


@dataclass
class History:
    root: Path
    index: dict

    @property
    def series(self) -> dict[str, dict]:
        return self.index.get("series") or {}

    def shard_path(self, sid: str, month: str) -> Path:
        return self.root / "series" / sid[:2] / sid / f"{month}.jsonl"

    def read_shard(self, sid: str, month: str) -> list[dict]:
        """The lines of one shard, checked against the index and parsed by the store."""
        data = HistoryStore(self.root).verify_shard(sid, month, self.series[sid])
        return parse_jsonl(data, self.shard_path(sid, month))

    def read_appended(self, sid: str, month: str, old_size: int, old_sha256: str) -> tuple[list[dict], bytes] | None:
        """The lines appended to a shard since it was ``old_size`` bytes long with that sha256
        (and the whole shard's bytes), or None when the shard changed otherwise. The new lines
        get the store's checks (line numbers in errors count from the old end)."""
        path = self.shard_path(sid, month)
        data = HistoryStore(self.root).verify_shard(sid, month, self.series[sid])  # the whole shard against the index
        head = data[:old_size]
        if len(data) < old_size or (head and not head.endswith(b"\n")) or hashlib.sha256(head).hexdigest() != old_sha256:
            return None
        return parse_jsonl(data[old_size:], path), data

    def read_points(self, sid: str) -> list[dict]:
        """Every line of the series, sorted by (timestamp, run_id) as the format asks readers to.
        Lines are parsed and checked by the store's reader; a shard the index lists but the
        directory lacks is an error here (the site must not silently drop months)."""
        # The store checks each shard against the index (lines, bytes, sha256) and each line.
        return HistoryStore(self.root).read_series(sid, self.series[sid])

    def fingerprint(self, fingerprint_id: str) -> dict | None:
        """The environment of a fingerprint; None when the file is absent (older histories)."""
        path = self.root / "fingerprints" / f"{fingerprint_id}.json"
        if not path.is_file():
            return None
        data = _load_json(path)
        return data if isinstance(data, dict) else None

    def detect(self) -> dict:
        """detect.json, or an empty detection when `vkbench detect` has not run yet."""
        path = self.root / "detect.json"
        if not path.is_file():
            return {"change_points": [], "incidents": [], "segments": {}, "noise": {}}
        data = _load_json(path)
        if not isinstance(data, dict):
            raise ResultFileError(f"{path}: not a detection output (top level is not an object)", hint="re-run `vkbench detect`")
        return data


def open_history(root: Path) -> History:
    root = Path(root)
    if not root.is_dir():
        raise ResultFileError(f"{root}: no such history directory", hint="pass the history directory written by `vkbench ingest` (history/ on gh-pages)")
    fmt = root / "format.json"
    if fmt.is_file():
        version = (_load_json(fmt) or {}).get("history_version")
        if isinstance(version, int) and version > HISTORY_VERSION:
            raise ResultFileError(
                f"{fmt}: history_version {version} is newer than this vkbench reads ({HISTORY_VERSION})",
                hint="upgrade vkbench (pull the repository) before building the site",
            )
    store = HistoryStore(root)
    index_path = root / "index.json"
    if not index_path.is_file() and store.has_shards():
        store.index()     # the error that names --rebuild-index
    if not index_path.is_file():
        raise ResultFileError(
            f"{root}: no index.json; this is not a vkbench history directory",
            hint="pass the directory that `vkbench ingest` writes (it holds index.json and series/), e.g. history/ on gh-pages",
        )
    index = _load_json(index_path)
    if not isinstance(index, dict) or not isinstance(index.get("series", {}), dict):
        raise ResultFileError(f"{index_path}: not a history index (no 'series' object)", hint=_REBUILD_HINT)
    version = index.get("history_version", HISTORY_VERSION)
    if isinstance(version, int) and version > HISTORY_VERSION:
        raise ResultFileError(
            f"{index_path}: history_version {version} is newer than this vkbench reads ({HISTORY_VERSION})",
            hint="upgrade vkbench (pull the repository) before building the site",
        )
    store.index()                     # version, journal of an interrupted ingest
    store.verify(index)               # every shard present with its recorded size
    return History(root=root, index=index)
