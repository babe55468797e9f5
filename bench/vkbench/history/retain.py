"""Retention: what the history keeps, and for how long (docs/history-format.md, "Retention").

Series points (``series/``), the index, fingerprints and detect.json are kept forever: they
are the history. What grows without bound and is read by nobody after a while is pruned:

- raw outputs (``runs/<month>/<run_id>/<cell_id>.raw/``) older than ``keep_raw_days``, except
  the CPU profile (``profile.folded``) of a run an incident of detect.json names as its last
  good or first bad run (the profile diff of that incident needs it);
- full result copies (``runs/<month>/<run_id>/<cell_id>.json``) older than ``keep_results_days``.

A run's age is its result's ``run.timestamp`` (a run whose result copy is gone: the end of its
month). What was removed is appended to ``runs/<month>/<run_id>/retention.log`` (one JSON line
per pruning: when, the policy, the paths), so nothing disappears silently and the run folder
stays (it is what the index's run count counts).
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ..errors import ResultFileError
from .store import HistoryStore

RETENTION_LOG = "retention.log"
PROFILE_FILE = "profile.folded"
_MONTH = re.compile(r"^\d{4}-\d{2}$")


@dataclass
class RetainReport:
    raw_pruned: int = 0
    results_pruned: int = 0
    profiles_kept: int = 0
    bytes_freed: int = 0
    removed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def summary(self) -> str:
        return (f"pruned {self.raw_pruned} raw output folder(s) and {self.results_pruned} result copy(ies), "
                f"{self.bytes_freed / 1e6:.2f} MB; kept {self.profiles_kept} incident profile(s)")


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _parse_time(text: str) -> datetime | None:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _month_end(month: str) -> datetime:
    year, mon = (int(x) for x in month.split("-"))
    first_next = datetime(year + mon // 12, mon % 12 + 1, 1, tzinfo=timezone.utc)
    return first_next - timedelta(seconds=1)


def incident_runs(store: HistoryStore) -> set[str]:
    """Run ids an incident names as its last good or first bad run (their profiles are kept)."""
    detect = store.read_detect()
    runs: set[str] = set()
    for incident in (detect or {}).get("incidents", []):
        for side in ("good", "bad"):
            run_id = (incident.get(side) or {}).get("run_id")
            if isinstance(run_id, str):
                runs.add(run_id)
    return runs


def retain(history: str | Path, *, keep_raw_days: int | None = None, keep_results_days: int | None = None,
           now: datetime | None = None, dry_run: bool = False) -> RetainReport:
    """Prune raw outputs and result copies past their retention (None: keep forever)."""
    for name, days in (("keep_raw_days", keep_raw_days), ("keep_results_days", keep_results_days)):
        if days is not None and days < 0:
            raise ResultFileError(f"{name} must be >= 0, not {days}", hint="a number of days; leave it out to keep forever")
    store = HistoryStore(history)
    store.verify(names_only=True)          # a damaged history is refused before anything is removed
    now = now or datetime.now(timezone.utc)
    report = RetainReport()
    runs_dir = store.path / "runs"
    if not runs_dir.is_dir() or (keep_raw_days is None and keep_results_days is None):
        return report
    keep = incident_runs(store)
    _check_out_prunable(store, now, keep_raw_days, keep_results_days, keep)
    policy = {"keep_raw_days": keep_raw_days, "keep_results_days": keep_results_days}
    with store.lock():
        for month_dir in sorted(p for p in runs_dir.iterdir() if p.is_dir() and _MONTH.match(p.name)):
            for run_dir in sorted(p for p in month_dir.iterdir() if p.is_dir()):
                removed = _prune_run(run_dir, month_dir.name, now, keep_raw_days, keep_results_days, run_dir.name in keep, report, dry_run)
                if removed and not dry_run:
                    entry = {"pruned": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "policy": policy, "removed": removed}
                    with (run_dir / RETENTION_LOG).open("a", encoding="utf-8") as fh:
                        fh.write(json.dumps(entry, sort_keys=True) + "\n")
                report.removed.extend(str((run_dir / r).relative_to(store.path)) for r in removed)
    return report


def _check_out_prunable(store: HistoryStore, now: datetime, keep_raw_days: int | None, keep_results_days: int | None,
                        incident: set[str]) -> None:
    """In a partial checkout (history/partial.py), what retention prunes tonight in months it
    did not check out (the night's own are): the raw outputs of months wholly past
    ``keep_raw_days`` (but an incident run's profile, which stays) and the result copies of
    months wholly past ``keep_results_days``, with their runs' logs. Once pruned, a month holds
    none of them and nothing of it is checked out again: only the first pruning of an old
    history costs its past, and a kind kept forever is never checked out."""
    co = store.checkout
    if co is None:
        return
    runs = (co.relative(store.path / "runs") or "") + "/"
    raw_cutoff = None if keep_raw_days is None else now - timedelta(days=keep_raw_days)
    copy_cutoff = None if keep_results_days is None else now - timedelta(days=keep_results_days)
    wanted, folders = [], set()
    for rel in co.absent():
        parts = rel[len(runs):].split("/") if rel.startswith(runs) else []
        if len(parts) < 3 or not _MONTH.match(parts[0]):
            continue
        month_end = _month_end(parts[0])
        raw = len(parts) > 3 and parts[2].endswith(".raw")
        copy = len(parts) == 3 and parts[2].endswith(".json")
        if raw and raw_cutoff is not None and month_end < raw_cutoff and not (parts[-1] == PROFILE_FILE and parts[1] in incident):
            wanted.append(rel)
        elif copy and copy_cutoff is not None and month_end < copy_cutoff:
            wanted.append(rel)
        else:
            continue
        folders.add("/".join(parts[:2]))
    wanted += [rel for rel in co.absent() if rel.startswith(runs) and rel.endswith("/" + RETENTION_LOG)
               and "/".join(rel[len(runs):].split("/")[:2]) in folders]
    store.materialize(co.root / rel for rel in wanted)


def _prune_run(run_dir: Path, month: str, now: datetime, keep_raw_days, keep_results_days, incident: bool,
               report: RetainReport, dry_run: bool) -> list[str]:
    ages: dict[str, datetime] = {}
    for result in run_dir.glob("*.json"):
        try:
            stamp = _parse_time(json.loads(result.read_text(encoding="utf-8"))["run"]["timestamp"])
        except (OSError, ValueError, KeyError, TypeError):
            stamp = None
        ages[result.stem] = stamp or _month_end(month)
    removed: list[str] = []
    for raw in sorted(p for p in run_dir.glob("*.raw") if p.is_dir()):
        cell = raw.name[: -len(".raw")]
        when = ages.get(cell, _month_end(month))
        if keep_raw_days is None or now - when <= timedelta(days=keep_raw_days):
            continue
        victims = [p for p in raw.rglob("*") if p.is_file() and not (incident and p.name == PROFILE_FILE)]
        if not victims:
            continue
        if incident and (raw / PROFILE_FILE).exists():
            report.profiles_kept += 1
        report.raw_pruned += 1
        for victim in victims:
            report.bytes_freed += victim.stat().st_size
            removed.append(str(victim.relative_to(run_dir)))
            if not dry_run:
                victim.unlink()
        if not dry_run:
            for folder in sorted((p for p in raw.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
                if not any(folder.iterdir()):
                    folder.rmdir()
            if not any(raw.iterdir()):
                raw.rmdir()
    for cell, when in sorted(ages.items()):
        if keep_results_days is None or now - when <= timedelta(days=keep_results_days):
            continue
        path = run_dir / f"{cell}.json"
        report.results_pruned += 1
        report.bytes_freed += _size(path)
        removed.append(path.name)
        if not dry_run:
            path.unlink()
    return removed
