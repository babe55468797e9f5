"""Add result files to a history directory: validate everything, then write, idempotently.

Order of writes, and why:

1. every input is loaded and validated first (schema with formats, safe ids, finite numbers:
   vkbench.results.checks); the history's index and every shard appended to are checked
   against each other; one problem is a ResultFileError naming the file and nothing at all
   is written;
2. result copies (runs/) and fingerprints are staged, the new index is written as a journal
   (``index.pending.json``), then the shards are renamed into place;
3. ``index.json`` is written last, atomically, and the journal removed.

A crash between 2 and 3 leaves the journal: the next ingest finds every shard matching it and
completes it (or, if no shard was renamed yet, discards it). Readers never guess: they stop
with exit 7 until a writer has done that.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

from ..results.io import load_result, read_result_bytes, result_files
from ..results.checks import check_point
from .series import month_of, point_from_result, series_commands, series_key, sort_key
from ..errors import ConflictingResultError, ResultFileError
from ..files import commit_staged, discard_staged, stage_bytes
from ..paths import check_no_symlink
from .store import HistoryStore, parse_jsonl, series_entry, shard_digest


@dataclass
class IngestReport:
    files: int = 0                 # result files read (after de-duplication)
    added: int = 0                 # points appended to series
    skipped: int = 0               # points already in the history (same run_id, cell_id)
    emulated: int = 0              # result files measured under emulation: kept out of every series
    results_copied: int = 0        # result files copied under runs/
    new_series: int = 0
    series: list[str] = field(default_factory=list)   # sids that received a point
    notes: list[str] = field(default_factory=list)    # recovery / migration done on the way
    conflicts: list[str] = field(default_factory=list)  # same run_id/cell_id, other numbers: kept the history's

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


#: Bounds of a result's raw-output folder copied into the history (GitHub warns at 50 MB a file
#: and refuses 100 MB; every byte stays in the branch's history for good).
MAX_RAW_FILE_BYTES = 40 * 1024 * 1024
MAX_RAW_DIR_BYTES = 64 * 1024 * 1024

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


def ingest(store: HistoryStore, result_paths: Iterable[str | os.PathLike], *, strict: bool = False) -> IngestReport:
    """``strict``: a result whose run_id/cell_id is already present (in the history or in the
    inputs) with other numbers is an error (exit 13) instead of a warning in report.conflicts;
    either way the first numbers are the ones kept, and under strict nothing is written."""
    paths = input_files(result_paths)
    conflicts: list[str] = []
    # 1. validate all inputs before touching the history
    loaded: dict[tuple[str, str], tuple[Path, dict]] = {}
    for path, result in zip(paths, load_all(paths)):
        key = (result["run"]["run_id"], result["run"]["cell_id"])
        if key in loaded:
            first_path, first = loaded[key]
            for command in series_commands(result):
                conflicts.extend(_differences(path, point_from_result(result, command),
                                              f"{first_path}", _point_or_none(first, command)))
        loaded.setdefault(key, (path, result))
    raw_dirs = {key: _checked_raw_dir(path, result["run"]["cell_id"]) for key, (path, result) in loaded.items()}
    report = IngestReport(files=len(loaded))

    destinations = _destinations(store, loaded.values())
    with store.lock():
        # before the first write: no folder on the way to any destination is a symlink (a
        # commit on gh-pages can carry one; it would take the copies outside the history)
        for dest, what in destinations:
            check_no_symlink(store.path, dest, what)
        recovered = store.recover()   # an interrupted ingest: completed or discarded, else exit 7
        if recovered:
            report.notes.append(recovered)
        index = store.index()      # corrupt / newer / missing-with-shards -> ResultFileError, nothing written
        index = store.migrate(index)
        if store.migrated:
            report.notes.append(f"history format migrated {store.migrated}: shards checked and named after their series "
                                "(<month>.<sid>.jsonl; per-shard checksums in index.json)")
        store.verify(index, deep=True)   # every shard matches the index (lines, bytes, sha256); none unlisted
        series_index = index["series"]

        new_points: dict[tuple[str, str], list[dict]] = {}
        series_meta: dict[str, tuple[dict, str | None]] = {}
        for path, result in loaded.values():
            if result["environment"].get("emulation"):
                # Numbers of an emulator (qemu-user on an x86 CI machine) are not the machine's:
                # no series, so neither detection, the advisor's history nor the site sees them.
                report.emulated += 1
                continue
            month = month_of(result["run"]["timestamp"])
            for command in series_commands(result):
                sid, dims = series_key(result, command)
                series_meta.setdefault(sid, (dims, result["environment"].get("arch")))
                new_points.setdefault((sid, month), []).append((path, point_from_result(result, command)))

        if report.emulated:
            report.notes.append(f"{report.emulated} result file(s) measured under emulation were not added to any "
                                "series (environment.emulation; validity flag 'emulated')")
        # 2a. shards: decide everything in memory first; every shard appended to is checked
        # against the index (a truncated shard never gets lines appended after its broken one)
        shard_writes: list[tuple[Path, bytes]] = []
        added_by_sid: dict[str, list[dict]] = {}
        new_digests: dict[str, dict[str, dict]] = {}
        for (sid, month), points in sorted(new_points.items()):
            shard = store.shard_path(sid, month)
            entry = series_index.get(sid)
            old = b""
            if entry is not None and month in (entry.get("shards") or []):
                old = store.verify_shard(sid, month, entry)
                present = {(p["run_id"], p["cell_id"]): p for p in parse_jsonl(old, shard)}
            else:
                present = {}
            seen = set(present)
            fresh = []
            for path, point in points:
                key = (point["run_id"], point["cell_id"])
                if key in seen:
                    report.skipped += 1
                    if key in present:
                        conflicts.extend(_differences(path, point, f"{shard.relative_to(store.path)}", present[key]))
                    continue
                seen.add(key)
                fresh.append(point)
            if not fresh:
                continue
            for point in fresh:     # what the ledger will say of this shard: every line checked
                check_point(point, str(shard))
            lines = "".join(json.dumps(p, separators=(",", ":"), allow_nan=False) + "\n" for p in fresh)
            data = old + lines.encode("utf-8")
            shard_writes.append((shard, data))
            new_digests.setdefault(sid, {})[month] = shard_digest(data)
            added_by_sid.setdefault(sid, []).extend(fresh)
            report.added += len(fresh)

        # 2b. the new index, in memory (written only if it changes: a no-op ingest makes no commit)
        before = json.dumps(index, sort_keys=True)
        for sid in sorted(added_by_sid):
            dims, arch = series_meta[sid]
            if sid not in series_index:
                report.new_series += 1
                points = added_by_sid[sid]
                series_index[sid] = series_entry(dims, arch, points, {month_of(p["timestamp"]) for p in points}, new_digests[sid])
            else:
                _update_entry(series_index[sid], added_by_sid[sid])
                digests = dict(series_index[sid].get("shard_digests") or {}, **new_digests[sid])
                series_index[sid]["shard_digests"] = dict(sorted(digests.items()))
        report.series = sorted(added_by_sid)
        report.conflicts = conflicts
        if conflicts and strict:
            raise ConflictingResultError(
                f"{len(conflicts)} result(s) already present with other numbers (nothing was written): "
                + "; ".join(conflicts[:5]) + (" ..." if len(conflicts) > 5 else ""),
                hint="a run_id/cell_id is written once: give the new run its own --run-id, or drop the stale file; "
                     "without --strict the history keeps its numbers and this is a warning")

        # 2c. result copies and fingerprints (both write-once), then the journal, then shards:
        # staged to temp files, made durable with one sync, renamed
        staged: list[tuple[Path, Path]] = []
        new_runs: set[Path] = set()
        absent = _absent_paths(store.path, [dest for dest, _ in destinations])
        try:
            fingerprints_seen: set[str] = set()
            for key, (path, result) in loaded.items():
                run = result["run"]
                run_dir = store.run_dir(month_of(run["timestamp"]), run["run_id"])
                if not run_dir.exists():
                    new_runs.add(run_dir)
                dest = run_dir / f"{run['cell_id']}.json"
                if not dest.exists():
                    staged.append((stage_bytes(dest, read_result_bytes(path)), dest))
                    report.results_copied += 1
                raw = raw_dirs[key]
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
            store.forget(shard for shard, _ in shard_writes)   # replaced: the store reads them anew
            index["runs"] = _count_runs(store, extra=new_runs)
            changed = bool(recovered) or json.dumps(index, sort_keys=True) != before or not store.index_path.exists()
            if changed and shard_writes:
                store.write_pending_index(index)
            commit_staged(staged)
        except BaseException:
            # disk full, a file-size limit, Ctrl-C: the history as it was, without the folders
            # this ingest made on the way (under the lock, so they are ours)
            discard_staged(staged)
            _remove_new(store.path, absent)
            raise

        # 3. the index, last
        if changed:
            store.write_index(index)
        store.write_format()
        # every shard the index lists has passed the line check now (the deep verify above, or
        # the lines this ingest appended): the next reader need not check the closed months again
        store.record_lines_checked(index)
    return report


#: How many differing values one conflict names (the message stays one readable line).
MAX_NAMED_DIFFERENCES = 4


def _point_or_none(result: dict, command: str) -> dict | None:
    return point_from_result(result, command) if command in series_commands(result) else None


def _flat(value, prefix: str = "") -> dict[str, object]:
    if isinstance(value, dict):
        out: dict[str, object] = {}
        for key, item in value.items():
            out.update(_flat(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def _differences(path: Path, new: dict, where: str, old: dict | None) -> list[str]:
    """One sentence naming the file and the values that differ from what is kept, or []."""
    if old is None:
        return [f"{path}: {new['run_id']}/{new['cell_id']} has a series {where} does not have"]
    flat_new, flat_old = _flat(new), _flat(old)
    # medians first (rps before latency): what an operator compares; spreads and bounds after
    changed = sorted((k for k in set(flat_new) | set(flat_old) if flat_new.get(k) != flat_old.get(k)),
                     key=lambda k: (not k.endswith(".median"), ".rps." not in k, k))
    if not changed:
        return []
    shown = ", ".join(f"{k} {flat_old.get(k)!r} kept, {flat_new.get(k)!r} ignored" for k in changed[:MAX_NAMED_DIFFERENCES])
    more = f" (+{len(changed) - MAX_NAMED_DIFFERENCES} more)" if len(changed) > MAX_NAMED_DIFFERENCES else ""
    return [f"{path}: {new['run_id']}/{new['cell_id']} is already in {where} with other numbers: {shown}{more}"]


def _destinations(store: HistoryStore, loaded) -> list[tuple[Path, str]]:
    """Every file an ingest of ``loaded`` may write, with what it is (for the message)."""
    out: list[tuple[Path, str]] = [(store.path / "series", "series folder"), (store.path / "runs", "runs folder"),
                                   (store.path / "fingerprints", "fingerprints folder")]
    for _path, result in loaded:
        run = result["run"]
        month = month_of(run["timestamp"])
        run_dir = store.run_dir(month, run["run_id"])
        out.append((run_dir / f"{run['cell_id']}.json", "result copy"))
        out.append((run_dir / f"{run['cell_id']}.raw", "raw-output copy"))
        out.append((store.fingerprint_path(result["environment"]["fingerprint_id"]), "fingerprint"))
        for command in series_commands(result):
            sid, _dims = series_key(result, command)
            out.append((store.shard_path(sid, month), "series shard"))
    return out


def _absent_paths(root: Path, destinations: list[Path]) -> list[Path]:
    """The destinations and the folders on their way (inside ``root``) that do not exist yet."""
    absent: set[Path] = set()
    for dest in destinations:
        for path in [dest, *dest.parents]:
            if path == root or root not in path.parents:
                break
            if not os.path.lexists(path):
                absent.add(path)
    return sorted(absent, key=lambda p: len(p.parts), reverse=True)


def _remove_new(root: Path, absent: list[Path]) -> None:
    """After a failed write: new run folders (result and raw copies are not in the journal) go
    whole; other new folders only when empty (a renamed shard belongs to the journal)."""
    runs = root / "runs"
    for path in absent:
        if not os.path.lexists(path):
            continue
        if path.is_dir() and not path.is_symlink():
            if runs in path.parents:
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    path.rmdir()


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


def _count_runs(store: HistoryStore, extra: set[Path] = frozenset()) -> int:
    """Run folders under runs/, plus ``extra`` ones about to be created."""
    return len(store.run_folders() | set(extra))


def _raw_dir(result_path: Path, cell_id: str) -> Path | None:
    for candidate in (result_path.parent / f"{cell_id}.raw", result_path.with_suffix(".raw")):
        if candidate.is_dir():
            return candidate
    return None


def _checked_raw_dir(result_path: Path, cell_id: str) -> Path | None:
    """The raw-output folder of a result, refused when it holds anything but plain files and
    folders: a symlink would copy whatever it points at (a key, /etc) into a public branch."""
    raw = _raw_dir(result_path, cell_id)
    if raw is None:
        return None
    if raw.is_symlink():
        raise ResultFileError(f"{raw}: a symlink; raw-output folders must be real folders", hint="copy the raw output instead of linking it")
    total = 0
    for item in raw.rglob("*"):
        if item.is_symlink() or not (item.is_file() or item.is_dir()):
            raise ResultFileError(
                f"{item}: not a regular file (symlink, fifo, device) in a raw-output folder; refusing to copy it into the history",
                hint="remove it; raw-output folders hold the tool's own output files only",
            )
        if item.is_file():
            size = item.stat().st_size
            total += size
            if size > MAX_RAW_FILE_BYTES:
                raise ResultFileError(f"{item}: {size} bytes; a raw output file is at most {MAX_RAW_FILE_BYTES} bytes (40 MiB)",
                                      hint="GitHub refuses files over 100 MB on the history branch; keep large outputs out of <cell_id>.raw/")
            if total > MAX_RAW_DIR_BYTES:
                raise ResultFileError(f"{raw}: more than {MAX_RAW_DIR_BYTES} bytes (64 MiB) of raw output",
                                      hint="every run's raw output goes into the history branch for good; keep large outputs out of <cell_id>.raw/")
    return raw


def _copytree_atomic(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        # file by file, not shutil.copytree: copytree folds a full disk into shutil.Error (no
        # errno), and the operator would get a traceback instead of "no space left"
        (tmp / "x").mkdir()
        for item in sorted(src.rglob("*")):
            target = tmp / "x" / item.relative_to(src)
            if item.is_dir():
                target.mkdir()
            else:
                shutil.copyfile(item, target)
        os.replace(tmp / "x", dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
