"""Read-only access to a history directory, as docs/history-format.md documents it.

The site reads the documented format (index.json lists the shards it draws), with the store's
line reader (:func:`vkbench.history.store.read_jsonl`) so both agree on what a valid series line
is. Every problem is a :class:`ResultFileError` that names the file and says what to do.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ResultFileError
from ..history.store import HistoryStore, parse_jsonl
from ..results.aggregate import command_series


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
    #: One store for every read: it knows the history's format version (shard file names) once.
    store: HistoryStore = field(default=None, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.store is None:
            self.store = HistoryStore(self.root)

    @property
    def series(self) -> dict[str, dict]:
        return self.index.get("series") or {}

    def shard_path(self, sid: str, month: str) -> Path:
        return self.store.shard_path(sid, month)

    def read_shard(self, sid: str, month: str) -> list[dict]:
        """The lines of one shard, checked against the index and parsed by the store (once per store)."""
        return self.store.shard_points(sid, month, self.series[sid])

    def read_appended(self, sid: str, month: str, old_size: int, old_sha256: str) -> tuple[list[dict], bytes] | None:
        """The lines appended to a shard since it was ``old_size`` bytes long with that sha256
        (and the whole shard's bytes), or None when the shard changed otherwise. The new lines
        get the store's checks (line numbers in errors count from the old end)."""
        path = self.shard_path(sid, month)
        data = self.store.verify_shard(sid, month, self.series[sid])  # the whole shard against the index
        head = data[:old_size]
        if len(data) < old_size or (head and not head.endswith(b"\n")) or hashlib.sha256(head).hexdigest() != old_sha256:
            return None
        return parse_jsonl(data[old_size:], path), data

    def read_points(self, sid: str) -> list[dict]:
        """Every line of the series, sorted by (timestamp, run_id) as the format asks readers to.
        Lines are parsed and checked by the store's reader; a shard the index lists but the
        directory lacks is an error here (the site must not silently drop months)."""
        # The store checks each shard against the index (lines, bytes, sha256) and each line.
        return self.store.read_series(sid, self.series[sid])

    def fingerprint(self, fingerprint_id: str) -> dict | None:
        """The environment of a fingerprint; None when the file is absent (older histories)."""
        path = self.root / "fingerprints" / f"{fingerprint_id}.json"
        if not path.is_file():
            return None
        data = _load_json(path)
        return data if isinstance(data, dict) else None

    def detect(self) -> dict:
        """detect.json, its structure checked by the store (exit 7 naming the file and field), or
        an empty detection when `vkbench detect` has not run yet."""
        data = self.store.read_detect()
        if data is None:
            return {"change_points": [], "incidents": [], "segments": {}, "noise": {}}
        return data

    def shard_hashes(self) -> dict[str, dict[str, dict]]:
        """Size and sha256 of every shard, each checked against index.json (exit 7 naming the file)."""
        return self.store.hash_shards(self.index)


def open_history(root: Path, store: HistoryStore | None = None) -> History:
    """``store``: the store of ``root`` a caller read the history through already (publish: the
    ingest's and detection's), so shards it parsed are not parsed again."""
    root = Path(root)
    if not root.is_dir():
        raise ResultFileError(f"{root}: no such history directory", hint="pass the history directory written by `vkbench ingest` (history/ on gh-pages)")
    store = HistoryStore(root) if store is None else store
    if not store.index_path.is_file() and not store.has_shards() and not store.pending_index_path.exists():
        store.check_format()          # a newer history says so first
        raise ResultFileError(
            f"{root}: no index.json; this is not a vkbench history directory",
            hint="pass the directory that `vkbench ingest` writes (it holds index.json and series/), e.g. history/ on gh-pages",
        )
    # The store's reader: format and index version, the journal of an interrupted ingest, a
    # missing index while shards exist (names --rebuild-index), series ids and months that are
    # safe path components (they name shards here and data/series/<sid>.json in the site).
    index = store.index()
    # Every listed shard present, none unlisted; their sizes and sha256 are checked against the
    # index when the build hashes them (History.shard_hashes), before anything is written.
    store.verify(index, names_only=True)
    # The TOTALS series an older ingest added are memtier's aggregate, not a command: not shown.
    return History(root=root, index={**index, "series": command_series(index["series"])}, store=store)
