"""The history directory (layout: docs/history-format.md), read side and low-level writes.

Reading never guesses: a corrupt ``index.json``, a corrupt series line, a shard that does not
match what the index records for it (line count, size, sha256), or a history newer than this
code is a :class:`ResultFileError` (exit 7) naming the file. A *missing* index is an empty
history only when there are no shards either; otherwise it is an error that names
``vkbench ingest --rebuild-index``.

Writers journal the new index first (``index.pending.json``), then rename the shards into
place, then the index: an ingest that dies in between is completed (or discarded) by the next
writer, never guessed at by a reader.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import operator
import os
import re
from pathlib import Path
from typing import Iterable

import orjson

from ..errors import ResultFileError
from ..files import directory_lock, read_json_object, utc_now, write_json
from ..results.checks import check_point, is_safe_id
from .checked import closed_shards_digest, read_ledger, write_ledger
from .partial import PartialCheckout, find as find_partial
from .detect_file import check_detection
from .series import month_of, sort_key

#: 2: index entries record ``shard_digests`` (lines, bytes, sha256 per month shard).
#: 3: shard files are named ``<YYYY-MM>.<sid>.jsonl`` (were ``<YYYY-MM>.jsonl``): git pairs a blob
#:    with its previous version for delta compression by a hash of the path's last ~16
#:    characters, so every series' shards of one month used to look alike to it and the pack grew
#:    ~4.4 kB a point; ending the name in the series id makes it pair each shard with its own
#:    previous version (~0.5 kB a point, docs/history-format.md).
#: Older histories are read (layout of their version; v1: point totals checked per series) and
#: migrated by the next ingest or by ``vkbench history migrate``.
HISTORY_VERSION = 3
#: HistoryStore(checkout=...) default: find the partial checkout the history lies in, if any.
_FIND = object()
OLDEST_READABLE_VERSION = 1
#: The first version whose shard files end in the series id.
SID_NAMED_SHARDS = 3


def shard_file_name(sid: str, month: str, version: int = HISTORY_VERSION) -> str:
    """A month shard's file name in a history of ``version``."""
    return f"{month}.{sid}.jsonl" if version >= SID_NAMED_SHARDS else f"{month}.jsonl"


def shard_file_month(name: str) -> str | None:
    """The month of a shard file name of either layout (None: not a shard file)."""
    if not name.endswith(".jsonl") or name.startswith("."):
        return None
    return name[: -len(".jsonl")].split(".", 1)[0]

#: A month shard's name (``<YYYY-MM>.jsonl``): index.json's months become file names.
MONTH = re.compile(r"^[0-9]{4}-(0[1-9]|1[0-2])$")

REBUILD_HINT = (
    "restore history/ from the gh-pages branch history (git log -- history/), or rebuild the index whole "
    "from the shards: vkbench ingest --history DIR --rebuild-index"
)


def empty_index() -> dict:
    return {"history_version": HISTORY_VERSION, "updated": None, "runs": 0, "series": {}}


def shard_digest(data: bytes) -> dict:
    """What the index records of one shard, to notice a truncated or edited one."""
    return {"lines": sum(1 for line in data.splitlines() if line.strip()), "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest()}


def series_entry(dims: dict, arch: str | None, points: list[dict], shards: Iterable[str],
                 digests: dict[str, dict] | None = None) -> dict:
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
        "shard_digests": dict(sorted((digests or {}).items())),
    }


class _ParsedShard:
    """One shard as this store read it: the file's identity when read, its digest, its points."""

    __slots__ = ("identity", "digest", "points")

    def __init__(self, identity: tuple, digest: dict, points: list[dict]):
        self.identity, self.digest, self.points = identity, digest, points


def _identity(st: os.stat_result) -> tuple:
    """What changes when a file is replaced or written (ctime: even when mtime is set back)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class HistoryStore:
    """One history directory. Cheap to construct. Each shard is read from disk, checked against
    the index (lines, bytes, sha256) and line by line, and parsed once per store: a publish
    hands one store to ingest, detection, confirmations and the site build (issue 23: each
    series used to be parsed 3-4 times). A shard is read again when its file changed since (a
    write through this store forgets it; any other write changes its inode, size or ctime) or
    when the index records another digest for it. The points handed out are shared between
    readers of the same store: read them, do not change them."""

    def __init__(self, path: str | os.PathLike, *, version: int | None = None, checkout=_FIND):
        """``version``: the history's format version when the caller has read it already (a
        worker handed one series); otherwise read from the history on first need.
        ``checkout``: the :class:`~.partial.PartialCheckout` the history lies in (publish's),
        None for a complete history; by default found on first need (:func:`.partial.find`)."""
        self.path = Path(path)
        self._checkout = checkout
        self._rel_prefix: str | None = None
        #: Set by :meth:`migrate` when this process upgraded an older history ("1 -> 3").
        self.migrated: str | None = None
        #: The history's format version (its shard file names depend on it): read lazily.
        self._version: int | None = version
        #: shard path -> its parsed points, as read by this store (see the class docstring).
        self._parsed: dict[str, _ParsedShard] = {}
        #: series id -> (the parsed shards it was made of, its points sorted): read_series again.
        self._sorted: dict[str, tuple[list[_ParsedShard], list[dict]]] = {}
        #: checked.json as read (history/checked.py): series -> digest of its line-checked closed shards.
        self._ledger: dict[str, str] | None = None

    # -- a history on disk in part (history/partial.py) ---------------------------------------
    @property
    def checkout(self) -> PartialCheckout | None:
        if self._checkout is _FIND:
            self._checkout = find_partial(self.path) if self.path.is_dir() else None
        return self._checkout

    def _absent_shards(self, sid: str) -> frozenset[str] | set[str]:
        """File names of the series' shards a partial checkout holds but not on disk."""
        co = self.checkout
        if co is None:
            return frozenset()
        if self._rel_prefix is None:
            self._rel_prefix = co.relative(self.path) or ""
        return set(co.absent_in(f"{self._rel_prefix}/series/{sid[:2]}/{sid}"))

    def _is_absent(self, path: str | os.PathLike) -> bool:
        """Tracked by the partial checkout but not on disk (a path under this history)."""
        co = self.checkout
        if co is None:
            return False
        if self._rel_prefix is None:
            self._rel_prefix = co.relative(self.path) or ""
        text = str(path)
        base = str(self.path)
        if not text.startswith(base):
            return co.is_absent(path)
        rel = (self._rel_prefix + text[len(base):].replace(os.sep, "/")).lstrip("/")
        return rel in co.absent()

    def materialize(self, paths: Iterable[str | os.PathLike]) -> int:
        """Check out those of ``paths`` a partial checkout holds but not on disk (one batch);
        nothing for a complete history. Returns how many."""
        co = self.checkout
        if co is None:
            return 0
        wanted = [p for p in paths if self._is_absent(p)]
        return co.materialize(wanted) if wanted else 0

    def materialize_months(self, wanted: dict[str, Iterable[str]]) -> int:
        """``{sid: months}``: their shards on disk (one batch for all series)."""
        if self.checkout is None:
            return 0
        return self.materialize(self.shard_path(sid, m) for sid, months in wanted.items() for m in months)

    def tail_months(self, entry: dict, at_least: int) -> list[str]:
        """The months :meth:`read_series_tail` reads for ``at_least`` points (all of them for a
        series whose index records no line counts)."""
        digests = entry.get("shard_digests") or {}
        months = sorted(entry.get("shards") or [])
        if any(not isinstance((digests.get(m) or {}).get("lines"), int) for m in months):
            return months
        count, first = 0, len(months)
        while first > 0 and count < at_least:
            first -= 1
            count += digests[months[first]]["lines"]
        return months[first:]

    def materialize_runs(self, runs: Iterable[tuple[Iterable[str], dict]], series: dict) -> int:
        """``[(series ids, {"run_id", "timestamp"})]``: those runs' folders (result copies, raw
        outputs, profiles) and the shards of those series in those months, on disk in one batch:
        what the profile and instruction diffs of incidents read. ``series``: index.json's."""
        co = self.checkout
        if co is None:
            return 0
        paths: list[Path] = []
        folders: set[str] = set()
        for sids, ref in runs:
            stamp, run_id = (ref or {}).get("timestamp"), (ref or {}).get("run_id")
            if not isinstance(stamp, str) or not isinstance(run_id, str) or not is_safe_id(run_id):
                continue
            month = month_of(stamp)
            folders.add((co.relative(self.run_dir(month, run_id)) or "") + "/")
            paths += [self.shard_path(sid, month) for sid in sids if month in ((series.get(sid) or {}).get("shards") or [])]
        folders.discard("/")
        paths += [co.root / p for p in co.absent() if any(p.startswith(f) for f in folders)] if folders else []
        return self.materialize(paths)

    def run_folders(self) -> set[Path]:
        """Every ``runs/<month>/<run_id>`` folder: on disk, or (a partial checkout) only in git."""
        runs = self.path / "runs"
        found = {run for month in runs.iterdir() if month.is_dir() for run in month.iterdir() if run.is_dir()} if runs.is_dir() else set()
        co = self.checkout
        if co is not None:
            prefix = (co.relative(runs) or "") + "/"
            for rel in co.absent():
                parts = rel[len(prefix):].split("/") if rel.startswith(prefix) else ()
                if len(parts) >= 3:
                    found.add(runs / parts[0] / parts[1])
        return found

    # -- paths ---------------------------------------------------------------------------------
    @property
    def format_path(self) -> Path:
        return self.path / "format.json"

    @property
    def index_path(self) -> Path:
        return self.path / "index.json"

    @property
    def pending_index_path(self) -> Path:
        return self.path / "index.pending.json"

    @property
    def detect_path(self) -> Path:
        return self.path / "detect.json"

    # (one join: readers build tens of thousands of these paths, and each pathlib "/" parses)
    def series_dir(self, sid: str) -> Path:
        return Path(os.path.join(self.path, "series", sid[:2], sid))

    def shard_path(self, sid: str, month: str) -> Path:
        return Path(os.path.join(self.path, "series", sid[:2], sid, shard_file_name(sid, month, self.layout_version())))

    def layout_version(self) -> int:
        """The format version the files on disk follow: index.json's (the manifest), else
        format.json's, else (a new history) this code's. Read once per store."""
        if self._version is None:
            version = HISTORY_VERSION
            for path in (self.index_path, self.pending_index_path, self.format_path):
                if not path.exists():
                    continue
                with contextlib.suppress(ResultFileError, OSError):
                    found = _read_json(path).get("history_version")
                    if isinstance(found, int) and not isinstance(found, bool):
                        version = found
                        break
            self._version = version
        return self._version

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

    def has_shards(self) -> bool:
        return any((self.path / "series").glob("*/*/*.jsonl"))

    def index(self) -> dict:
        """The manifest; an empty one when the history does not exist yet. A missing index with
        shards present, or the journal of an interrupted ingest, is an error (exit 7)."""
        self.check_format()
        if not self.index_path.exists():
            if self.pending_index_path.exists():
                raise ResultFileError(
                    f"{self.pending_index_path}: an ingest was interrupted before it wrote index.json",
                    hint="re-run `vkbench ingest` on this history (it completes or discards the interrupted one), or " + REBUILD_HINT,
                )
            if self.has_shards():
                raise ResultFileError(
                    f"{self.index_path}: missing, but series shards exist under {self.path / 'series'}: "
                    "reading on would silently drop every series the index no longer lists",
                    hint="rebuild the whole index from the shards: vkbench ingest --history DIR --rebuild-index "
                         "(or restore index.json from the gh-pages branch history)",
                )
            return empty_index()
        data = _read_json(self.index_path)
        _check_version(self.index_path, data)
        self._version = data["history_version"]
        if not isinstance(data.get("series"), dict) or not all(isinstance(e, dict) for e in data["series"].values()):
            raise ResultFileError(
                f"{self.index_path}: no 'series' object; not a vkbench history index",
                hint="restore index.json from the gh-pages branch history (git log -- history/index.json)",
            )
        _check_index_paths(self.index_path, data["series"])
        if self.pending_index_path.exists():
            raise ResultFileError(
                f"{self.pending_index_path}: an ingest was interrupted between writing the shards and the index",
                hint="re-run `vkbench ingest` on this history (it completes or discards the interrupted one), or " + REBUILD_HINT,
            )
        return data

    def series_ids(self) -> list[str]:
        return sorted(self.index()["series"])

    def shard_months(self, sid: str) -> list[str]:
        directory = self.series_dir(sid)
        # and those only in git (a series none of whose months is checked out has no folder)
        found = [n for n in self._absent_shards(sid) if n.endswith(".jsonl")]
        if directory.is_dir():
            found += [p.name for p in directory.glob("*.jsonl")]
        names = (shard_file_month(name) for name in set(found))
        return sorted(m for m in names if m is not None)

    def _materialized(self, path: Path) -> None:
        if self._is_absent(path):
            self.materialize([path])

    def read_shard(self, sid: str, month: str) -> list[dict]:
        path = self.shard_path(sid, month)
        self._materialized(path)
        return read_jsonl(path)

    def verify_shard(self, sid: str, month: str, entry: dict, data: bytes | None = None) -> bytes:
        """The shard's bytes, after checking them against what the index records (exit 7 naming
        the file otherwise). Entries of a version-1 index have no digests: checked per series."""
        path = self.shard_path(sid, month)
        if data is None:
            self._materialized(path)
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                raise self._missing(sid, month) from None
        expected = (entry.get("shard_digests") or {}).get(month)
        if expected is not None:
            found = shard_digest(data)
            if found != expected:
                raise _shard_mismatch(path, found, expected)
        return data

    def read_checked_shard(self, sid: str, month: str, entry: dict) -> list[dict]:
        """The points of one shard the index entry lists, checked against it (lines, bytes,
        sha256) and line by line: what a reader of a single month uses."""
        if month not in (entry.get("shards") or []):
            raise ResultFileError(f"{self.index_path}: series {sid} has no shard {month}", hint=REBUILD_HINT)
        return self.shard_points(sid, month, entry)

    def shard_points(self, sid: str, month: str, entry: dict) -> list[dict]:
        """The points of one shard, checked against the index entry (lines, bytes, sha256) and
        line by line: read and parsed once per store while the file stays as it was read."""
        return self._parsed_shard(sid, month, entry, lines_checked=month in self.lines_checked_months(sid, entry))[1]

    def ledger(self) -> dict[str, str]:
        """checked.json (history/checked.py), read once per store."""
        if self._ledger is None:
            self._ledger = read_ledger(self.path)
        return self._ledger

    def record_lines_checked(self, index: dict) -> bool:
        """Write checked.json for ``index`` (history/checked.py). Only for a caller that has
        line-checked, or found in the ledger, every shard the index lists: the ingest, after
        its deep verify and the shards it wrote. Returns whether the file changed."""
        changed = write_ledger(self.path, index, self.ledger())
        self._ledger = None
        return changed

    def lines_checked_months(self, sid: str, entry: dict) -> frozenset[str]:
        """The months of the series whose lines an earlier ingest checked (their bytes are still
        checked against the index): every month but the newest when checked.json records the
        digest of exactly the closed shards the entry lists; else none."""
        recorded = self.ledger().get(sid)
        if recorded is None or recorded != closed_shards_digest(entry):
            return frozenset()
        return frozenset(sorted(entry.get("shards") or [])[:-1])

    def _parsed_shard(self, sid: str, month: str, entry: dict, *, lines_checked: bool = False
                      ) -> tuple[_ParsedShard | None, list[dict]]:
        """:meth:`shard_points`, and what the store keeps of the shard (None: not kept).
        ``lines_checked``: the ledger says these bytes passed the line check (they are still
        checked against the index's sha256 first)."""
        path = self.shard_path(sid, month)
        key = str(path)
        expected = (entry.get("shard_digests") or {}).get(month)
        known = self._parsed.get(key)
        self._materialized(path)
        try:
            before = os.stat(key)
        except FileNotFoundError:
            raise self._missing(sid, month) from None
        if known is not None and known.identity == _identity(before) and (expected is None or known.digest == expected):
            return known, known.points
        data = self.verify_shard(sid, month, entry)
        points = parse_jsonl(data, path, lines_checked=lines_checked and expected is not None)
        kept = None
        with contextlib.suppress(OSError):
            after = os.stat(key)
            # kept only when the file did not change while it was read (and is the bytes checked)
            if _identity(after) == _identity(before) and after.st_size == len(data):
                kept = self._parsed[key] = _ParsedShard(_identity(after), expected or shard_digest(data), points)
        return kept, points

    def forget(self, paths: Iterable[str | os.PathLike] | None = None) -> None:
        """Drop what this store read of ``paths`` (every shard when None): a writer calls it
        for the shards it replaces."""
        if paths is None:
            self._parsed.clear()
            self._sorted.clear()
            return
        for path in paths:
            self._parsed.pop(str(path), None)

    def hash_shards(self, index: dict) -> dict[str, dict[str, dict]]:
        """``{sid: {month: {"bytes", "sha256"}}}`` of every shard the index lists, each checked against the
        size and sha256 index.json records for it (exit 7 naming the file): a shard truncated
        or edited in place, even to the same size, is found without parsing a line. Entries of
        a version-1 index have no digests: their hashes are returned unchecked (a caller
        compares them with the ones it saw before). One thread: shards are small (tens of kB),
        and with threads the GIL hand-offs cost more than the hashing (measured: 1,000 series x
        1,000 runs, 917 MB in 33,000 shards, hash in 1.0-1.8 s on a 2-core machine)."""
        out: dict[str, dict[str, dict]] = {}
        for sid, entry in index["series"].items():
            digests = entry.get("shard_digests") or {}
            found = out[sid] = {}
            directory = os.path.join(self.path, "series", sid[:2], sid)
            version = self.layout_version()
            absent = self._absent_shards(sid)
            for month in entry.get("shards") or []:
                name = shard_file_name(sid, month, version)
                path = os.path.join(directory, name)
                if name in absent and digests.get(month) is not None:
                    # in git, not on disk: what the tree holds (checked when read, partial.py)
                    found[month] = {"bytes": digests[month]["bytes"], "sha256": digests[month]["sha256"]}
                    continue
                known = self._parsed.get(path)
                if known is not None and "sha256" in known.digest:
                    try:
                        same = known.identity == _identity(os.stat(path))
                    except FileNotFoundError:
                        raise self._missing(sid, month) from None
                    if same:     # read and hashed by this store, unchanged since
                        digest = found[month] = {"bytes": known.digest["bytes"], "sha256": known.digest["sha256"]}
                        expected = digests.get(month)
                        if expected is not None and (digest["sha256"] != expected.get("sha256") or digest["bytes"] != expected.get("bytes")):
                            raise _shard_mismatch(Path(path), digest, expected)
                        continue
                try:
                    with open(path, "rb") as fh:
                        data = fh.read()
                except FileNotFoundError:
                    raise self._missing(sid, month) from None
                digest = found[month] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
                expected = digests.get(month)
                if expected is not None and (digest["sha256"] != expected.get("sha256") or digest["bytes"] != expected.get("bytes")):
                    raise _shard_mismatch(Path(path), digest, expected)
        return out

    def check_shard_names(self, sid: str, entry: dict) -> None:
        """The series' shards on disk are exactly the ones the index lists (one directory listing;
        a listed one missing or an unlisted one is exit 7 naming it)."""
        listed = set(entry.get("shards") or [])
        on_disk = set(self.shard_months(sid))
        missing = sorted(listed - on_disk)
        if missing:
            raise self._missing(sid, missing[0])
        self._check_unlisted(sid, listed)

    def check_series_files(self, sid: str, entry: dict, *, deep: bool = False) -> None:
        """Every shard the entry lists exists with the recorded size (and digest when ``deep``);
        no shard on disk is unlisted."""
        listed = set(entry.get("shards") or [])
        checked = self.lines_checked_months(sid, entry) if deep else frozenset()
        absent = self._absent_shards(sid)
        version = self.layout_version()
        for month in sorted(listed):
            if absent and shard_file_name(sid, month, version) in absent:
                continue        # in git, not on disk: checked when read (partial.py)
            path = self.shard_path(sid, month)
            expected = (entry.get("shard_digests") or {}).get(month)
            if deep and month in checked and expected is not None:
                self.verify_shard(sid, month, entry)   # the bytes the ledger's line check saw; not parsed
                continue
            if deep:
                self.shard_points(sid, month, entry)   # against the index, and every line valid
                continue
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                raise self._missing(sid, month) from None
            if expected is not None and size != expected.get("bytes"):
                raise ResultFileError(
                    f"{path}: {size} bytes where index.json records {expected.get('bytes')}: the shard was truncated or edited",
                    hint=REBUILD_HINT,
                )
        self._check_unlisted(sid, listed)

    def _check_unlisted(self, sid: str, listed: set[str]) -> None:
        """No shard file in the series' folder but the listed months' (under this version's names)."""
        directory = self.series_dir(sid)
        if not directory.is_dir():
            return
        version = self.layout_version()
        expected = {shard_file_name(sid, month, version) for month in listed}
        extra = sorted(p.name for p in directory.glob("*.jsonl") if p.name not in expected and shard_file_month(p.name))
        if extra:
            raise ResultFileError(f"{directory / extra[0]}: a shard index.json does not list", hint=REBUILD_HINT)

    def verify(self, index: dict | None = None, *, deep: bool = False, names_only: bool = False) -> dict:
        """Check every series of the index against its files (size; or, when ``deep``, lines,
        bytes and sha256 plus every line's content; or, ``names_only``, just which shards exist,
        for a caller that hashes them all next: :meth:`hash_shards`), and that no series
        directory is unknown to the index. Returns the index."""
        index = self.index() if index is None else index
        series = index["series"]
        with _collector_paused():       # deep: every shard parsed, and kept
            for sid, entry in series.items():
                if names_only:
                    self.check_shard_names(sid, entry)
                else:
                    self.check_series_files(sid, entry, deep=deep)
        for directory in (self.path / "series").glob("*/*"):
            if directory.name not in series and any(directory.glob("*.jsonl")):
                raise ResultFileError(f"{directory}: a series index.json does not list", hint=REBUILD_HINT)
        return index

    def read_series(self, sid: str, entry: dict | None = None) -> list[dict]:
        """Every point of the series, sorted by (timestamp, run_id), each shard checked against
        the index entry (pass it to save reading index.json again)."""
        if entry is None:
            entry = self.index()["series"].get(sid)
            if entry is None:
                raise ResultFileError(f"{self.index_path}: no series {sid}", hint="list the series with the site or index.json")
        self.check_series_files(sid, entry)
        self.materialize_months({sid: entry.get("shards") or []})
        points: list[dict] = []
        shards = []
        checked = self.lines_checked_months(sid, entry)
        with _collector_paused():
            for month in sorted(entry.get("shards") or []):
                kept, part = self._parsed_shard(sid, month, entry, lines_checked=month in checked)
                shards.append(kept)
                points.extend(part)
        if not entry.get("shard_digests") and len(points) != entry.get("points"):
            raise ResultFileError(
                f"{self.series_dir(sid)}: {len(points)} points in the shards where index.json records {entry.get('points')}",
                hint=REBUILD_HINT,
            )
        sorted_before = self._sorted.get(sid)
        if sorted_before is not None and None not in shards and len(shards) == len(sorted_before[0]) \
                and all(a is b for a, b in zip(shards, sorted_before[0])):
            return list(sorted_before[1])        # the same shards as read before: sorted already
        points.sort(key=_SORT_KEY)
        if None not in shards:
            self._sorted[sid] = (shards, points)
            return list(points)
        return points

    def read_series_tail(self, sid: str, entry: dict, at_least: int) -> tuple[int, list[dict]]:
        """``(offset, points)``: the newest points of the series, at least ``at_least`` of them
        (whole month shards, newest first, as many as it takes), sorted, and ``offset``, the
        index of the first of them in :meth:`read_series`'s list (the line counts index.json
        records of the shards before them). A series whose index has no line counts (version 1)
        is read whole. Shards are partitioned by month, so the tail is the end of the whole list.
        Every shard is still checked against the index by size; the tail's by sha256 and lines."""
        digests = entry.get("shard_digests") or {}
        months = sorted(entry.get("shards") or [])
        if not months or any(not isinstance((digests.get(m) or {}).get("lines"), int) for m in months):
            return 0, self.read_series(sid, entry)
        self.check_series_files(sid, entry)
        count, first = 0, len(months)
        while first > 0 and count < at_least:
            first -= 1
            count += digests[months[first]]["lines"]
        if first == 0:
            return 0, self.read_series(sid, entry)
        self.materialize_months({sid: months[first:]})
        checked = self.lines_checked_months(sid, entry)
        points: list[dict] = []
        with _collector_paused():
            for month in months[first:]:
                points.extend(self._parsed_shard(sid, month, entry, lines_checked=month in checked)[1])
        points.sort(key=sort_key)
        return sum(digests[m]["lines"] for m in months[:first]), points

    def points_of_runs(self, sid: str, entry: dict, refs: Iterable[dict]) -> list[dict]:
        """The points of the months the runs ``refs`` (``{"run_id", "timestamp"}``, as change
        points and incidents name them) fall in, each shard checked as :meth:`shard_points` does:
        a reader of a few named runs (the last good and first bad run of an incident) reads those
        months, not the series' past. A ref without a timestamp: the whole series."""
        months = set()
        for ref in refs:
            stamp = (ref or {}).get("timestamp")
            if not isinstance(stamp, str):
                return self.read_series(sid, entry)
            months.add(month_of(stamp))
        listed = set(entry.get("shards") or [])
        return [p for month in sorted(months & listed) for p in self.read_checked_shard(sid, month, entry)]

    def _missing(self, sid: str, month: str) -> ResultFileError:
        """A listed shard that is not there; when it is there under the other layout's name, a
        layout migration was interrupted: say how to finish it."""
        path = self.shard_path(sid, month)
        other = [shard_file_name(sid, month, v) for v in (SID_NAMED_SHARDS - 1, SID_NAMED_SHARDS)]
        if any(name != path.name and (path.parent / name).exists() for name in other):
            return ResultFileError(
                f"{path}: listed in index.json but missing, and the shard is there under the other format's name: "
                "a format migration was interrupted",
                hint="finish it: vkbench history migrate --history DIR",
            )
        return ResultFileError(f"{path}: listed in index.json but missing", hint=REBUILD_HINT)

    def _points_on_disk(self, sid: str) -> tuple[list[dict], dict[str, dict]]:
        """All points of a series from whatever shards exist (rebuild and migration only)."""
        points: list[dict] = []
        digests: dict[str, dict] = {}
        self.materialize_months({sid: self.shard_months(sid)})
        for month in self.shard_months(sid):
            path = self.shard_path(sid, month)
            data = path.read_bytes()
            points.extend(parse_jsonl(data, path))
            digests[month] = shard_digest(data)
        points.sort(key=sort_key)
        return points, digests

    def fingerprints(self) -> dict[str, dict]:
        out: dict[str, dict] = {}
        directory = self.path / "fingerprints"
        if directory.is_dir():
            for path in sorted(directory.glob("*.json")):
                out[path.stem] = _read_json(path)
        return out

    def read_detect(self, *, for_alerts: bool = False) -> dict | None:
        """detect.json, its structure checked (exit 7 naming the file), or None when detection
        has not run. ``for_alerts``: also every field the issue bodies and job summaries use."""
        if not self.detect_path.exists():
            return None
        return check_detection(_read_json(self.detect_path), self.detect_path, for_alerts=for_alerts)

    # -- writing -------------------------------------------------------------------------------
    def recover(self) -> str | None:
        """Writers only, under :meth:`lock`: finish or discard the journal of an interrupted
        ingest. Promoted when every shard matches the journal, discarded when every shard still
        matches the old index; anything else needs ``--rebuild-index`` (exit 7)."""
        pending = self.pending_index_path
        if not pending.exists():
            return None
        journal = _read_json(pending)
        _check_version(pending, journal)
        if _all_shards_match(self, journal):
            os.replace(pending, self.index_path)
            return "completed an interrupted ingest (its shards were all written)"
        old = None
        if self.index_path.exists():
            old = _read_json(self.index_path)
            _check_version(self.index_path, old)
        if _all_shards_match(self, old or empty_index()):
            pending.unlink()
            return "discarded an interrupted ingest (none of its shards was written)"
        raise ResultFileError(
            f"{pending}: an interrupted ingest left shards that match neither index.json nor its journal",
            hint="vkbench ingest --history DIR --rebuild-index (rebuilds the index whole from the shards)",
        )

    def migrate(self, index: dict) -> dict:
        """Writers only, under :meth:`lock`: upgrade an older history to the current version and
        write it (index.json, format.json). Version 1 (no shard digests): each series' point
        count checked, digests added. Before version 3: every shard checked against its digest,
        then renamed to its series-named file (``<month>.<sid>.jsonl``, same bytes). Resumable:
        a shard already under its new name (an interrupted migration) is checked there."""
        if index.get("history_version", HISTORY_VERSION) >= HISTORY_VERSION:
            return index
        self.forget()           # shards are renamed: read them again under their new names
        old = index.get("history_version")
        if old < 2:
            for sid, entry in index["series"].items():
                self.check_series_files(sid, entry)
                points, digests = self._points_on_disk(sid)
                if len(points) != entry.get("points"):
                    raise ResultFileError(
                        f"{self.series_dir(sid)}: {len(points)} points in the shards where index.json records {entry.get('points')}",
                        hint=REBUILD_HINT,
                    )
                entry["shard_digests"] = digests
        renames: list[tuple[Path, Path]] = []
        for sid, entry in index["series"].items():
            directory = self.series_dir(sid)
            for month in entry.get("shards") or []:
                before = directory / shard_file_name(sid, month, SID_NAMED_SHARDS - 1)
                after = directory / shard_file_name(sid, month, HISTORY_VERSION)
                source = before if before.exists() else after
                try:
                    data = source.read_bytes()
                except FileNotFoundError:
                    raise ResultFileError(f"{before}: listed in index.json but missing", hint=REBUILD_HINT) from None
                found = shard_digest(data)
                expected = (entry.get("shard_digests") or {}).get(month)
                if found != expected:
                    raise _shard_mismatch(source, found, expected or {})
                if source == before:
                    renames.append((before, after))
        for before, after in renames:           # all checked first: nothing renamed in a broken history
            os.replace(before, after)
        index["history_version"] = HISTORY_VERSION
        self._version = HISTORY_VERSION
        self.write_index(index)
        self.write_format(force=True)
        self.migrated = f"{old} -> {HISTORY_VERSION}"
        return index

    def rebuild_index(self) -> dict:
        """Recompute every series entry from its shards (repair after a crash or a hand
        edit). Dims come from the current index, or from the result copies under runs/ for
        series the index does not know. A point a result copy under runs/ has and no shard has
        (a deleted or truncated-away shard) is written back into its shard first; what neither
        holds is named in :attr:`rebuild_notes` (a count per series, against the old index)."""
        from ..results.aggregate import AGGREGATE_COMMANDS
        from ..results.io import validate_result
        from .series import month_of as _month, point_from_result, series_commands as _commands, series_key as _key

        self.rebuild_notes: list[str] = []
        self.forget()           # shards may be rewritten from the result copies
        with self.lock():
            try:
                index = self.index()
            except ResultFileError:
                index = empty_index()
                if self.index_path.exists():
                    with contextlib.suppress(ResultFileError):
                        old = _read_json(self.index_path)
                        if isinstance(old.get("series"), dict):
                            _check_version(self.index_path, old)
                            index["series"] = old["series"]
            listed = {sid: e.get("points") for sid, e in index["series"].items() if isinstance(e, dict)}
            known = {sid: (e["dims"], e.get("arch")) for sid, e in index["series"].items() if isinstance(e, dict) and "dims" in e}
            copies: dict[tuple[str, str], dict[tuple[str, str], dict]] = {}     # (sid, month) -> key -> point
            for path in sorted((self.path / "runs").glob("*/*/*.json")):
                result = validate_result(_read_json(path), source=str(path))
                # An older ingest's TOTALS series stays listed (readers leave it out, command_series).
                aggregates = sorted(AGGREGATE_COMMANDS) if result.get("aggregate") else []
                for command in [*_commands(result), *aggregates]:
                    sid, dims = _key(result, command)
                    known.setdefault(sid, (dims, result.get("environment", {}).get("arch")))
                if result.get("environment", {}).get("emulation"):
                    continue       # ingest keeps emulated numbers out of every series; so does this
                month = _month(result["run"]["timestamp"])
                for command in _commands(result):
                    sid, _dims = _key(result, command)
                    point = point_from_result(result, command)
                    copies.setdefault((sid, month), {})[(point["run_id"], point["cell_id"])] = point
            recovered = self._restore_from_copies(copies)
            series = {}
            # shards on disk keep their names: rebuilding does not migrate (the next ingest does)
            # (the rebuilt index has digests: version 2 at least; shards named the old way stay version 2)
            legacy_names = any(p.name.count(".") == 1 for p in (self.path / "series").glob("*/*/*.jsonl"))
            self._version = SID_NAMED_SHARDS - 1 if legacy_names else HISTORY_VERSION
            for directory in sorted((self.path / "series").glob("*/*")):
                sid = directory.name
                if sid not in known:
                    if any(directory.glob("*.jsonl")):
                        raise ResultFileError(
                            f"{directory}: a series whose dimensions are neither in index.json nor in any result under runs/",
                            hint="restore runs/ (or index.json) from the gh-pages branch history, then rebuild again",
                        )
                    continue
                points, digests = self._points_on_disk(sid)
                if points:
                    dims, arch = known[sid]
                    series[sid] = series_entry(dims, arch, points, {_month(p["timestamp"]) for p in points}, digests)
            if recovered:
                self.rebuild_notes.append(f"{recovered} point(s) restored into their shards from the result copies under runs/")
            for sid, count in sorted(listed.items()):
                have = series[sid]["points"] if sid in series else 0
                if isinstance(count, int) and count > have:
                    self.rebuild_notes.append(
                        f"series {sid}: {count - have} of {count} point(s) the old index listed could not be recovered "
                        "(neither a shard line nor a result copy under runs/ holds them: copies removed by retention?)")
            if not listed and series:
                self.rebuild_notes.append("index.json was unreadable: points that are in neither a shard nor a result "
                                          "copy cannot be counted")
            index["series"] = series
            index["history_version"] = self._version
            runs = self.path / "runs"
            index["runs"] = len(self.run_folders())
            self.write_index(index)
            self.pending_index_path.unlink(missing_ok=True)
            self.write_format(force=True)
            return index

    def _restore_from_copies(self, copies: dict[tuple[str, str], dict[tuple[str, str], dict]]) -> int:
        """Append to each shard the points its result copies have and it lacks (a missing shard
        is written new); returns how many. Lines already there are kept as they are."""
        from ..files import write_bytes_atomic
        from ..paths import check_no_symlink

        restored = 0
        for (sid, month), by_key in sorted(copies.items()):
            path = self.shard_path(sid, month)
            old = path.read_bytes() if path.is_file() else b""
            if old and not old.endswith(b"\n"):
                old = old[: old.rfind(b"\n") + 1]      # a truncated last line: its point comes back from its copy
            present = {(p["run_id"], p["cell_id"]) for p in parse_jsonl(old, path)} if old else set()
            missing = sorted((p for key, p in by_key.items() if key not in present), key=sort_key)
            if not missing:
                continue
            check_no_symlink(self.path, path, "series shard")     # a symlinked folder would take the write elsewhere
            lines = "".join(json.dumps(p, separators=(",", ":"), allow_nan=False) + "\n" for p in missing)
            write_bytes_atomic(path, old + lines.encode("utf-8"))
            restored += len(missing)
        return restored

    def write_pending_index(self, index: dict) -> None:
        """The journal: the index as it will be once the staged shards are renamed."""
        index["updated"] = utc_now()
        write_json(self.pending_index_path, index, indent=1)

    def write_index(self, index: dict) -> None:
        index["updated"] = utc_now()
        write_json(self.index_path, index, indent=1)
        self.pending_index_path.unlink(missing_ok=True)

    def write_format(self, *, force: bool = False) -> None:
        """format.json: written when missing or older than this code (after a migration): the
        version the files follow (an old history that was only rebuilt keeps its own)."""
        version = self.layout_version()
        if not force and self.format_path.exists():
            with contextlib.suppress(ResultFileError):
                if _read_json(self.format_path).get("history_version") == version:
                    return
        write_json(self.format_path, {"history_version": version})

    def lock(self):
        """Exclusive lock for writers on this machine (see :func:`vkbench.files.directory_lock`)."""
        return directory_lock(self.path)


def _all_shards_match(store: HistoryStore, index: dict) -> bool:
    series = index.get("series")
    if not isinstance(series, dict):
        return False
    try:
        store.verify(index, deep=True)
    except ResultFileError:
        return False
    return True


def parse_jsonl(data: bytes, path: Path, *, lines_checked: bool = False) -> list[dict]:
    """Series lines, each validated (:func:`vkbench.results.checks.check_point`); any problem is
    a ResultFileError naming ``path:line``. ``lines_checked``: the caller has checked these exact
    bytes' sha256 against a digest whose lines passed the check (history/checked.py): parse only."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultFileError(f"{path}: not UTF-8 (binary data? {exc})", hint=_RESTORE_HINT) from None
    if text and not text.endswith("\n"):
        raise ResultFileError(f"{path}: the last line is cut off (no newline at the end)", hint=_RESTORE_HINT)
    # One publish reads a series several times (detection, confirmations, the site): the line
    # checks are pure functions of the bytes, so bytes already checked in this process are
    # only parsed again (issue 23: check_point was a third of a publish's CPU at ten years).
    digest = hashlib.sha256(data).digest()
    checked = lines_checked or digest in _CHECKED_SHARDS
    out = []
    with _collector_paused():
        for lineno, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                point = orjson.loads(line)
            except (orjson.JSONDecodeError, RecursionError):
                # orjson is stricter (NaN, integers past 64 bits, lone surrogates): the standard
                # parser decides, so a line reads and is refused exactly as it always was
                try:
                    point = json.loads(line)
                except (json.JSONDecodeError, RecursionError) as exc:
                    raise ResultFileError(f"{path}:{lineno}: corrupt series line ({exc})", hint=_RESTORE_HINT) from None
            out.append(point if checked else check_point(point, _Line(path, lineno)))
    if not checked:
        if len(_CHECKED_SHARDS) >= _CHECKED_SHARDS_MAX:   # bounded: a long-lived process forgets, never grows
            _CHECKED_SHARDS.clear()
        _CHECKED_SHARDS.add(digest)
    return out


class _Line:
    """``path:lineno`` for an error message, formatted only when there is one (a shard read
    formats none; at ten years a publish checks hundreds of thousands of lines)."""

    __slots__ = ("path", "lineno")

    def __init__(self, path: Path, lineno: int):
        self.path, self.lineno = path, lineno

    def __str__(self) -> str:
        return f"{self.path}:{self.lineno}"


@contextlib.contextmanager
def _collector_paused():
    """Parsing allocates some sixty containers a line and none of them is garbage: with the
    cyclic collector on, its collections walk every point parsed so far again and again (half
    the parse time at ten years of history, measured). Paused while shards are parsed (one, a
    series, or a whole history's check); nested pauses leave it to the outermost."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


#: :func:`sort_key` in C: a ten-year series has 3,650 points, a publish reads hundreds of series.
_SORT_KEY = operator.itemgetter("timestamp", "run_id")

#: sha256 of shard bytes every line of which passed check_point in this process.
_CHECKED_SHARDS: set[bytes] = set()
_CHECKED_SHARDS_MAX = 100_000


def read_jsonl(path: Path) -> list[dict]:
    """Lines of one shard file, validated (no index check: see :meth:`HistoryStore.read_series`)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    return parse_jsonl(data, path)


_RESTORE_HINT = "the history was edited or truncated; restore it from the gh-pages branch history (git log -- history/)"


def _read_json(path: Path) -> dict:
    return read_json_object(path, _RESTORE_HINT)


def _check_version(path: Path, data: dict) -> None:
    version = data.get("history_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ResultFileError(f"{path}: no integer history_version; not a vkbench history", hint=_RESTORE_HINT)
    if version > HISTORY_VERSION:
        raise ResultFileError(
            f"{path}: history_version {version} is newer than this vkbench understands ({HISTORY_VERSION})",
            hint="upgrade vkbench (pip install -U vkbench, or pull the repository) before reading or writing this history",
        )
    if version < OLDEST_READABLE_VERSION:
        raise ResultFileError(f"{path}: history_version {version} is not a known history format", hint=_RESTORE_HINT)


def _shard_mismatch(path: Path, found: dict, expected: dict) -> ResultFileError:
    lines = f"{found['lines']} lines, " if "lines" in found else ""
    recorded = f"{expected.get('lines')} lines, " if "lines" in found else ""
    return ResultFileError(
        f"{path}: does not match index.json ({lines}{found['bytes']} bytes, sha256 {found['sha256'][:12]} where the "
        f"index records {recorded}{expected.get('bytes')} bytes, sha256 {str(expected.get('sha256'))[:12]}): "
        "the shard was truncated or edited",
        hint=REBUILD_HINT,
    )


def _check_index_paths(path: Path, series: dict) -> None:
    """Series ids and months from index.json become directory and file names (series/<sid[:2]>/
    <sid>/<month>.jsonl, the site's data/series/<sid>.json): each must be a safe path component."""
    for sid, entry in series.items():
        if not is_safe_id(sid):
            raise ResultFileError(f"{path}: series id {_shown(sid)} is not a safe path component", hint=_INDEX_HINT)
        shards = entry.get("shards", [])
        digests = entry.get("shard_digests", {})
        if not isinstance(shards, list) or not isinstance(digests, dict):
            raise ResultFileError(f"{path}: series {sid}: 'shards' is not a list or 'shard_digests' not an object", hint=_INDEX_HINT)
        for month in [*shards, *digests]:
            if not isinstance(month, str) or not MONTH.match(month):
                raise ResultFileError(f"{path}: series {sid}: month {_shown(month)} is not YYYY-MM", hint=_INDEX_HINT)
        for month, digest in digests.items():
            if not isinstance(digest, dict):
                raise ResultFileError(f"{path}: series {sid}: shard_digests/{month} is not an object", hint=_INDEX_HINT)


_INDEX_HINT = ("index.json was edited or damaged: restore it from the gh-pages branch history "
               "(git log -- history/index.json), or rebuild it from the shards: vkbench ingest --history DIR --rebuild-index")


def _shown(value: object) -> str:
    """A value for an error message, cut short (a hostile one may be megabytes)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _safe_name(name: str) -> str:
    """run_id / fingerprint ids become path components: keep them from escaping the tree
    (results are validated with vkbench.results.checks.is_safe_id first; this is the backstop)."""
    cleaned = "".join(c if c.isalnum() or c in "._-+" else "_" for c in name)
    if cleaned in ("", ".", "..") or cleaned.startswith("."):
        cleaned = "_" + cleaned
    return cleaned
