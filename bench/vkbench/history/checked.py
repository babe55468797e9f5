"""``history/checked.json``: which shards have passed the line check already (issue 23).

Every reader checks every shard's bytes against index.json (size and sha256) and every line of
it (``check_point``: safe ids, finite numbers, https URLs). At ten years of the nightly the line
check was 27 s of a publish, spent on months that have not changed since the last publish: a
nightly history only ever appends to a series' newest month.

The ledger records, per series, one digest of the sha256s index.json lists for every shard *but
the newest month* (the *closed* shards). The ingest writes it after it has line-checked all of
them (or found them in the ledger). A reader whose index entry yields the same digest checks
those shards' bytes against the index but not their lines again; the newest month is always
line-checked. The ledger is content-addressed, so it can be stale but never wrong: an edited
shard has another sha256, hence another digest, and is line-checked again even when index.json
was "fixed" to match it (tests/hardening/test_fault_injection.py, the ``*-reindexed`` cases).

Closed months keep their digest from one night to the next, so the file changes about once a
month per series and costs the data branch almost nothing. It is a cache of a check vkbench
made, not a trust boundary: whoever can push the data branch could also change the readers'
code; deleting it only costs one slower publish, which writes it again.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from ..errors import ResultFileError
from ..files import read_json_object, write_json
from . import schemas

#: The ledger format this code reads and writes.
LEDGER_FORMAT = 1
#: Far above any real ledger (~90 bytes a series): a bigger file is not one vkbench wrote.
MAX_LEDGER_BYTES = 32 * 1024 * 1024
LEDGER_NAME = "checked.json"
_HINT = (f"delete history/{LEDGER_NAME}: it is a cache of the line check; the next ingest checks every line "
         "again and writes it anew")


@lru_cache(maxsize=1)
def checks_code() -> str:
    """The line checks' own code (vkbench/results/checks.py, shipped in the wheel): a ledger
    written under other checks vouches for nothing, so stricter checks see every line again."""
    from ..results import checks

    return hashlib.sha256(Path(checks.__file__).read_bytes()).hexdigest()


def closed_shards_digest(entry: dict) -> str | None:
    """One digest of the index's sha256 of every shard of the series but its newest month (None:
    no closed shard, or one without a recorded sha256, as in a version-1 index)."""
    months = sorted(entry.get("shards") or [])[:-1]
    digests = entry.get("shard_digests") or {}
    if not months:
        return None
    h = hashlib.sha256()
    for month in months:
        sha = (digests.get(month) or {}).get("sha256")
        if not isinstance(sha, str):
            return None
        h.update(f"{month}:{sha}\n".encode())
    return h.hexdigest()


def read_ledger(history: Path) -> dict[str, str]:
    """``{sid: digest}`` of ``<history>/checked.json`` (empty when there is none). A damaged,
    oversized or newer ledger is an error naming the file (exit 7), never silently ignored."""
    path = history / LEDGER_NAME
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return {}
    if size > MAX_LEDGER_BYTES:
        raise ResultFileError(f"{path}: {size} bytes, more than a line-check ledger can be ({MAX_LEDGER_BYTES})", hint=_HINT)
    data = read_json_object(path, _HINT)
    version = data.get("format")
    if isinstance(version, int) and not isinstance(version, bool) and version > LEDGER_FORMAT:
        raise ResultFileError(f"{path}: ledger format {version} is newer than this vkbench understands ({LEDGER_FORMAT})",
                              hint="upgrade vkbench (pip install -U vkbench, or pull the repository)")
    schemas.check(data, "checked-v1", path, _HINT)
    if data["checks"] != checks_code():
        return {}               # checked by other line checks: every line is checked again
    return dict(data["closed_shards"])


def write_ledger(history: Path, index: dict, old: dict[str, str] | None) -> bool:
    """Record the closed-shard digest of every series of ``index`` (the caller has line-checked
    every shard it lists, with these line checks); written atomically and only when it changes
    (``old``: what :func:`read_ledger` returned, None to write regardless). Returns whether it did."""
    ledger = {}
    for sid, entry in sorted(index["series"].items()):
        digest = closed_shards_digest(entry)
        if digest is not None:
            ledger[sid] = digest
    if ledger == old:
        return False
    write_json(history / LEDGER_NAME, {"format": LEDGER_FORMAT, "checks": checks_code(), "closed_shards": ledger}, indent=1)
    return True


__all__ = ["LEDGER_FORMAT", "LEDGER_NAME", "MAX_LEDGER_BYTES", "closed_shards_digest", "read_ledger", "write_ledger"]
