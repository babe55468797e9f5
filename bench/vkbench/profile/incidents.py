"""Profiles of an incident's two sides: the last good and the first bad run of one of its
series, when both were recorded with ``--profile`` (folded stacks beside the result, copied
into the history's ``runs/`` by ingest). Detection attaches the top of the diff to the
incident, so the issue and the job summary show which functions grew."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from ..history.series import month_of
from ..results.io import load_result
from . import folded
from .diff import profile_diff, stacks_path

#: Rows of the "which functions changed" table kept in detect.json per incident.
INCIDENT_ROWS = 10

#: ``points_of(series id, runs)``: points of the series that include those runs (``{"run_id",
#: "timestamp"}``), e.g. :meth:`HistoryStore.points_of_runs`: the months they fall in, not the past.
PointsOf = Callable[[str, Sequence[dict]], list[dict]]


def _profile_of(history_dir: Path, point: dict) -> tuple[dict[str, int], dict] | None:
    path = Path(history_dir) / "runs" / month_of(point["timestamp"]) / point["run_id"] / f"{point['cell_id']}.json"
    if not path.is_file():
        return None
    profile = load_result(path).get("profile") or {}
    if profile.get("status") != "recorded" or not profile.get("file"):
        return None
    stacks = stacks_path(path, profile["file"])
    return (folded.read(stacks), profile) if stacks.is_file() else None


def incident_profiles(history_dir: Path, incident: dict, points_of: PointsOf, series_ids) -> dict | None:
    """``{"series_id", "before": (stacks, profile), "after": (stacks, profile)}`` for the first
    series of the incident with a profile on both sides, else None."""
    good, bad = incident.get("good") or {}, incident.get("bad") or {}
    for sid in incident.get("series_ids") or []:
        if sid not in series_ids:
            continue
        by_run = {p.get("run_id"): p for p in points_of(sid, (good, bad))}
        before_point, after_point = by_run.get(good.get("run_id")), by_run.get(bad.get("run_id"))
        if not before_point or not after_point:
            continue
        before, after = _profile_of(history_dir, before_point), _profile_of(history_dir, after_point)
        if before and after:
            return {"series_id": sid, "before": before, "after": after}
    return None


def attach_profile_diffs(history_dir: Path, incidents: list[dict], points_of: PointsOf, series_ids) -> None:
    """Add ``profile_diff: {series_id, rows}`` to every incident with profiles on both sides."""
    for incident in incidents:
        found = incident_profiles(history_dir, incident, points_of, series_ids)
        if found:
            rows = profile_diff(found["before"][0], found["after"][0], limit=INCIDENT_ROWS)
            incident["profile_diff"] = {"series_id": found["series_id"], "rows": [r.to_dict() for r in rows]}


__all__ = ["attach_profile_diffs", "incident_profiles"]
