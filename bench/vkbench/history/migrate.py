"""``vkbench history migrate``: bring a history to this code's format, every point accounted for.

The next ``ingest`` (so the next publish) migrates too; this command does it alone, checks it and
says what it did: every shard read and checked before (digests, every line), the (series, run,
cell) of every point counted, the migration (:meth:`HistoryStore.migrate`: renames only, the
bytes of every shard unchanged), and everything read and counted again after. Idempotent: a
history already at this version is only checked. Resumable: an interrupted migration (some
shards under their new names) is finished.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

from ..errors import ResultFileError
from .store import HISTORY_VERSION, HistoryStore


@dataclass
class MigrateReport:
    from_version: int
    to_version: int
    series: int
    shards: int
    points: int
    dry_run: bool

    def to_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        what = f"{self.series} series, {self.shards} shards, {self.points} points"
        if self.from_version == self.to_version:
            return f"history already at format {self.to_version} ({what}, all checked)"
        verb = "would migrate" if self.dry_run else "migrated"
        return f"{verb} history format {self.from_version} -> {self.to_version} ({what}; every point kept)"


def _point_keys(store: HistoryStore, index: dict) -> set[tuple[str, str, str]]:
    keys: set[tuple[str, str, str]] = set()
    for sid, entry in index["series"].items():
        points = store.read_series(sid, entry)          # each shard against the index, each line checked
        if len(points) != entry.get("points"):
            raise ResultFileError(f"{store.series_dir(sid)}: {len(points)} points where index.json records {entry.get('points')}",
                                  hint="vkbench ingest --history DIR --rebuild-index")
        keys.update((sid, p["run_id"], p["cell_id"]) for p in points)
    return keys


def _resumable_index(store: HistoryStore) -> dict:
    """The index, also when a migration was interrupted (shards partly renamed): only the
    migration's own renames are tolerated, and :meth:`HistoryStore.migrate` checks every shard."""
    index = store.index()
    if index.get("history_version", HISTORY_VERSION) >= HISTORY_VERSION:
        store.verify(index, deep=True)
    return index


def migrate_history(path: str | os.PathLike, *, dry_run: bool = False) -> MigrateReport:
    store = HistoryStore(path)
    with store.lock():
        if not dry_run:
            store.recover()
        index = _resumable_index(store)
        old = index.get("history_version", HISTORY_VERSION)
        shards = sum(len(e.get("shards") or []) for e in index["series"].values())
        if old >= HISTORY_VERSION:
            keys = _point_keys(store, index)
            return MigrateReport(old, old, len(index["series"]), shards, len(keys), dry_run)
        if dry_run:
            points = sum(int(e.get("points") or 0) for e in index["series"].values())
            return MigrateReport(old, HISTORY_VERSION, len(index["series"]), shards, points, True)
        expected = sum(int(e.get("points") or 0) for e in index["series"].values())
        migrated = store.migrate(index)
        after_store = HistoryStore(path)                 # read back as a fresh reader would
        after = after_store.verify(after_store.index(), deep=True)
        keys = _point_keys(after_store, after)
        if len(keys) != expected or set(after["series"]) != set(migrated["series"]):
            raise ResultFileError(
                f"{store.index_path}: {len(keys)} points after the migration where the index recorded {expected} before",
                hint="restore history/ from the branch (git checkout -- history/) and report this",
            )
        return MigrateReport(old, HISTORY_VERSION, len(after["series"]), shards, len(keys), False)
