"""Add result files to a history directory: validate everything, then write, idempotently.

Order of writes, and why:

1. every input is loaded and validated first; one bad file is a ResultFileError naming it and
   nothing at all is written;
2. result copies (runs/), fingerprints and shards are each written via temp file + rename;
3. ``index.json`` is written last, atomically.

A crash between 2 and 3 leaves points in shards the index does not count yet. Re-running the
same ingest heals it: the points are found in their shards (so nothing is duplicated) and the
entries of those series are recomputed from the shards.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

from ..results.io import load_result, result_files
from .series import month_of, point_from_result, series_key, sort_key
from ..errors import ResultFileError
from .store import HistoryStore, commit_staged, discard_staged, series_entry, stage_bytes


@dataclass
class IngestReport:
    files: int = 0                 # result files read (after de-duplication)
    added: int = 0                 # points appended to series
    skipped: int = 0               # points already in the history (same run_id, cell_id)
    results_copied: int = 0        # result files copied under runs/
    new_series: int = 0
    series: list[str] = field(default_factory=list)   # sids that received a point

    def to_dict(self) -> dict:
        return asdict(self)


def input_files(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Result files named directly or found in directories, minus raw tool outputs
    (``<cell_id>.raw/`` may hold memtier's own JSON, which is not a result)."""
    out = []
    for path in result_files(paths):
        if any(part.endswith(".raw") for part in path.parent.parts):
            continue
        out.append(path)
    return out


#: Above this many files, validation (jsonschema, ~3 ms a file) fans out to all cores.
PARALLEL_VALIDATION = 64


def _load(path: Path):
    try:
        return load_result(path)
    except ResultFileError as exc:          # exceptions with keyword args do not pickle well
        return ("error", exc.message, exc.hint)


def load_all(paths: list[Path]) -> list[dict]:
    """Every file loaded and validated; the first bad one (in path order) is the error."""
    if len(paths) > PARALLEL_VALIDATION and (os.cpu_count() or 1) > 1:
        import concurrent.futures as cf
        import multiprocessing as mp

        with cf.ProcessPoolExecutor(os.cpu_count(), mp_context=mp.get_context("fork")) as pool:
            results = list(pool.map(_load, paths, chunksize=16))
    else:
        results = [_load(p) for p in paths]
    for item in results:
        if isinstance(item, tuple):
            raise ResultFileError(item[1], hint=item[2])
    return results


_KEYS = re.compile(rb'^\{"run_id":"((?:[^"\\]|\\.)*)","cell_id":"((?:[^"\\]|\\.)*)"', re.M)


def shard_keys(data: bytes) -> set[tuple[str, str]]:
    """(run_id, cell_id) of every line of a shard. Lines this module wrote start with those
    two keys, so a regex finds them without parsing every point (a nightly touches a thousand
    shards); anything else falls back to JSON."""
    lines = sum(1 for line in data.splitlines() if line.strip())
    found = _KEYS.findall(data)
    if len(found) == lines:
        return {(json.loads(b'"' + r + b'"'), json.loads(b'"' + c + b'"')) for r, c in found}
    return {(p["run_id"], p["cell_id"]) for p in _parse_lines(data)}


def _parse_lines(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def ingest(store: HistoryStore, result_paths: Iterable[str | os.PathLike]) -> IngestReport:
    paths = input_files(result_paths)
    # 1. validate all inputs before touching the history
    loaded: dict[tuple[str, str], tuple[Path, dict]] = {}
    for path, result in zip(paths, load_all(paths)):
        key = (result["run"]["run_id"], result["run"]["cell_id"])
        loaded.setdefault(key, (path, result))
    report = IngestReport(files=len(loaded))

    with store.lock():
        index = store.index()      # corrupt / newer index -> ResultFileError, nothing written
        series_index = index["series"]

        new_points: dict[tuple[str, str], list[dict]] = {}
        series_meta: dict[str, tuple[dict, str | None]] = {}
        for path, result in loaded.values():
            month = month_of(result["run"]["timestamp"])
            for command in result["summary"]:
                sid, dims = series_key(result, command)
                series_meta.setdefault(sid, (dims, result["environment"].get("arch")))
                new_points.setdefault((sid, month), []).append(point_from_result(result, command))

        # 2a. shards: decide everything in memory first
        shard_writes: list[tuple[Path, bytes]] = []
        added_by_sid: dict[str, list[dict]] = {}
        reconcile: set[str] = set()
        for (sid, month), points in sorted(new_points.items()):
            shard = store.shard_path(sid, month)
            old = shard.read_bytes() if shard.exists() else b""
            seen = shard_keys(old) if old else set()
            if seen and sid not in series_index:
                reconcile.add(sid)     # shard written by an ingest that died before the index
            fresh = []
            entry = series_index.get(sid)
            for point in points:
                key = (point["run_id"], point["cell_id"])
                if key in seen:
                    report.skipped += 1
                    if _index_missed(entry, point, month):
                        reconcile.add(sid)
                    continue
                seen.add(key)
                fresh.append(point)
            if not fresh:
                continue
            if old and not old.endswith(b"\n"):
                old += b"\n"
            lines = "".join(json.dumps(p, separators=(",", ":")) + "\n" for p in fresh)
            shard_writes.append((shard, old + lines.encode("utf-8")))
            added_by_sid.setdefault(sid, []).extend(fresh)
            report.added += len(fresh)

        # 2b. result copies and fingerprints (both write-once), then shards: staged to temp
        # files, made durable with one sync, renamed
        staged: list[tuple[Path, Path]] = []
        try:
            fingerprints_seen: set[str] = set()
            for path, result in loaded.values():
                run = result["run"]
                run_dir = store.run_dir(month_of(run["timestamp"]), run["run_id"])
                dest = run_dir / f"{run['cell_id']}.json"
                if not dest.exists():
                    staged.append((stage_bytes(dest, path.read_bytes()), dest))
                    report.results_copied += 1
                raw = _raw_dir(path, run["cell_id"])
                raw_dest = run_dir / f"{run['cell_id']}.raw"
                if raw is not None and not raw_dest.exists():
                    _copytree_atomic(raw, raw_dest)
                env = result["environment"]
                fp_path = store.fingerprint_path(env["fingerprint_id"])
                if env["fingerprint_id"] not in fingerprints_seen and not fp_path.exists():
                    staged.append((stage_bytes(fp_path, (json.dumps(env, indent=1) + "\n").encode()), fp_path))
                fingerprints_seen.add(env["fingerprint_id"])
            for shard, data in shard_writes:
                staged.append((stage_bytes(shard, data), shard))
            commit_staged(staged)
        except BaseException:
            discard_staged(staged)
            raise

        # 3. the index, last (and only if it changes: a no-op ingest must not make a commit)
        before = json.dumps(index, sort_keys=True)
        for sid in sorted(set(added_by_sid) | reconcile):
            dims, arch = series_meta[sid]
            if sid not in series_index:
                report.new_series += 1
            if sid in reconcile or sid not in series_index:
                series_index[sid] = series_entry(dims, arch, store.read_series(sid), store.shard_months(sid))
            else:
                _update_entry(series_index[sid], added_by_sid[sid])
        report.series = sorted(added_by_sid)
        index["runs"] = _count_runs(store)
        if json.dumps(index, sort_keys=True) != before or not store.index_path.exists():
            store.write_index(index)
        store.write_format()
    return report


def _index_missed(entry: dict | None, point: dict, month: str) -> bool:
    """A point already in its shard but not (visibly) counted by the index: an ingest died
    between the shard rename and the index write. Checked cheaply - series unknown, month not
    listed, or newer than the index's last point - so re-ingesting a whole night into a big
    history does not re-read every series. (A crash while back-filling an *older* run is not
    seen here; ``HistoryStore.rebuild_index()`` repairs any case.)"""
    if entry is None or month not in entry.get("shards", []):
        return True
    last = entry.get("last_point") or {}
    return sort_key(point) > (entry.get("last") or "", last.get("run_id", ""))


def _update_entry(entry: dict, points: list[dict]) -> None:
    """Incremental index update: no need to read a long series to add a night to it."""
    fresh = series_entry(entry["dims"], entry.get("arch"), points, [month_of(p["timestamp"]) for p in points])
    entry["shards"] = sorted(set(entry["shards"]) | set(fresh["shards"]))
    entry["points"] += len(points)
    entry["first"] = min(filter(None, [entry.get("first"), fresh["first"]]))
    last_point = entry.get("last_point")
    newest = max(points, key=sort_key)
    if last_point is None or sort_key(newest) >= (entry.get("last") or "", last_point.get("run_id", "")):
        entry["last"] = fresh["last"]
        entry["last_point"] = fresh["last_point"]


def _count_runs(store: HistoryStore) -> int:
    runs = store.path / "runs"
    if not runs.is_dir():
        return 0
    return sum(1 for month in runs.iterdir() if month.is_dir() for run in month.iterdir() if run.is_dir())


def _raw_dir(result_path: Path, cell_id: str) -> Path | None:
    for candidate in (result_path.parent / f"{cell_id}.raw", result_path.with_suffix(".raw")):
        if candidate.is_dir():
            return candidate
    return None


def _copytree_atomic(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        shutil.copytree(src, tmp / "x")
        os.replace(tmp / "x", dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
