"""Detection over a whole history: every series, every detected metric, then incidents.

``run_detection(history_dir)`` is what ``vkbench detect --history`` and the publish workflow
call; it returns (and by default writes) the ``detect.json`` document described in
docs/history-format.md.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import ResultFileError
from ..history.series import bigger_is_better, describe, segment_key, segments as fingerprint_segments
from ..files import utc_now, write_json
from ..history.store import HistoryStore
from ..results.aggregate import command_series
from ..profile.incidents import attach_profile_diffs
from .annotations import first_index_after, load_annotations, matches_series, validate_annotations
from .incidents import build_incidents
from .params import DetectionParams
from .segmented import TailTooShort, detect_segmented
from . import windowed

#: Above this many series detection fans out to worker processes.
PARALLEL_THRESHOLD = 64


def run_detection(
    history_dir: str | os.PathLike,
    annotations: str | os.PathLike | list[dict] | None = None,
    *,
    params: DetectionParams | None = None,
    write: bool = True,
    jobs: int | None = None,
    store: HistoryStore | None = None,
    full: bool = False,
) -> dict:
    """``store``: the :class:`HistoryStore` of ``history_dir`` to read through (publish hands over
    the ingest's, whose parsed shards are then not parsed again; it goes on to the site build).

    Incremental unless ``full``: a series whose inputs are those the previous detect.json was
    computed from (``series_inputs``: its shards' digests, points, dimensions, the annotations,
    the parameters and this detection code) keeps that run's change points, segments and noise;
    the others are detected again. Incidents, confirmations and diffs are always rebuilt from
    all change points. The result equals a full run (tests/unit/detect/test_detect_incremental.py)."""
    params = params or DetectionParams()
    store = HistoryStore(history_dir) if store is None else store
    if not store.path.is_dir():
        raise ResultFileError(f"{store.path}: no such history directory", hint="run `vkbench ingest RESULTS --history DIR` first")
    index = store.index()
    if isinstance(annotations, (str, os.PathLike)):
        entries = load_annotations(annotations)
    else:
        entries = validate_annotations(annotations or [])
    store.verify(index)        # every shard present with its recorded size (digests: per series below)
    series_index = command_series(index["series"])   # not the TOTALS series an older ingest added
    store.layout_version()    # shard file names: read once, not once per series (nor per worker)
    inputs = {sid: _series_inputs(series_index[sid], entries, params) for sid in sorted(series_index)}
    states = {sid: windowed.series_state(windowed.state_key(_detection_code(), series_index[sid], entries, params),
                                         series_index[sid]) for sid in sorted(series_index)}
    kept, grown = ({}, {}) if full else _previous_results(store, inputs, series_index, states)
    # A kept series is not parsed, but its bytes are still checked against the index (size and
    # sha256, exit 7 naming the shard): an edit that also fixed the index changes its inputs, so
    # it is detected (and line-checked) again; any other edit is refused here.
    store.hash_shards({"series": {sid: series_index[sid] for sid in kept}})
    tasks = [(sid, series_index[sid], entries, params, grown.get(sid)) for sid in sorted(series_index) if sid not in kept]
    _prefetch(store, tasks, params)
    jobs = jobs or os.cpu_count() or 1
    if jobs > 1 and len(tasks) > PARALLEL_THRESHOLD:
        # forked workers inherit the store (with what it has parsed already) without pickling it
        with mp.get_context("fork").Pool(jobs, initializer=_adopt_store, initargs=(store,)) as pool:
            detected = pool.map(_detect_in_worker, tasks, chunksize=max(1, len(tasks) // (jobs * 8)))
    else:
        detected = [_detect_one(store, task) for task in tasks]
    by_sid = {**kept, **{found[0]: found for found in detected}}
    per_series = [by_sid[sid] for sid in sorted(series_index)]

    change_points: list[dict] = []
    segments: dict[str, list[dict]] = {}
    noise: dict[str, dict] = {}
    points_total = 0
    for sid, cps, segs, sid_noise, npoints in per_series:
        change_points.extend(cps)
        segments[sid] = segs
        noise[sid] = sid_noise
        points_total += npoints
    incidents = build_incidents(change_points, series_index, entries)
    # Same-night confirmation: candidates too new for the persistence rule wait for an A/B;
    # a confirmed one is an incident now, a rejected one never alerts (detect/confirmations.py).
    from . import confirmations

    requests = confirmations.confirmation_requests(store, change_points, params)
    # Read even without requests: a change confirmed nights ago keeps its incident id now that
    # the persistence rule reports it.
    recorded = confirmations.load(store)["confirmations"]
    incidents, waiting = confirmations.apply(incidents, requests, recorded, change_points=change_points,
                                             annotations=entries)
    # An incident bisected since (bisect.yml) carries its culprit (detect/bisects.py).
    from . import bisects

    bisects.attach(incidents, bisects.load(store)["bisects"])
    # what an incident's profile and instruction diffs read, in one batch (a partial checkout's past)
    store.materialize_runs(
        [(incident.get("series_ids") or [], side) for incident in incidents for side in (incident.get("good"), incident.get("bad"))]
        + [([cp["series_id"]], side) for cp in change_points if cp.get("incident_id") for side in (cp.get("good"), cp.get("bad"))],
        series_index)
    attach_profile_diffs(store.path, incidents, lambda sid, runs: store.points_of_runs(sid, series_index[sid], runs),
                         series_index)
    # An incident of instruction counts: which functions' instructions per op changed.
    from ..instruments.diff import attach_instruction_diffs

    attach_instruction_diffs(store, incidents, change_points, series_index)
    return_doc: dict[str, Any] = {
        "generated": utc_now(),
        "parameters": params.to_dict(),
        "series": len(series_index),
        "runs": index.get("runs", 0),
        "points": points_total,
        "change_points": change_points,
        "segments": segments,
        "noise": noise,
        "incidents": incidents,
        "series_inputs": {sid: key for sid, key in inputs.items() if key is not None},
        "series_state": {sid: state for sid, state in states.items() if state is not None},
    }
    if requests:
        return_doc["confirmation"] = {
            "waiting": waiting,
            "rejected": sorted(r["id"] for r in requests if recorded.get(r["id"], {}).get("status") == "rejected"),
        }
        inconclusive = sorted(r["id"] for r in requests if recorded.get(r["id"], {}).get("status") == "inconclusive")
        if inconclusive:
            return_doc["confirmation"]["inconclusive"] = inconclusive
    if write and not _same_detection(store, return_doc):
        write_json(store.detect_path, return_doc, indent=1)
    return return_doc


@lru_cache(maxsize=1)
def _detection_code() -> str:
    """Changes whenever the code that detects one series changes: results of older code are not
    kept (a constant of the installed package, like the site's builder id)."""
    from ..history import series as series_module

    digest = hashlib.sha256()
    here = Path(__file__).parent
    for name in ("runner.py", "segmented.py", "changepoints.py", "noise.py", "params.py", "annotations.py", "windowed.py"):
        digest.update((here / name).read_bytes())
    digest.update(Path(series_module.__file__).read_bytes())
    return digest.hexdigest()


def _series_inputs(entry: dict, entries: list[dict], params: DetectionParams) -> str | None:
    """What one series' detection depends on, as a digest; None when the index records no shard
    digests (a version-1 history: its shards cannot be told apart by the index)."""
    if not entry.get("shard_digests"):
        return None
    key = [_detection_code(), entry.get("shard_digests"), entry.get("points"), entry.get("dims"), entries, params.to_dict()]
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _previous_results(store: HistoryStore, inputs: dict[str, str | None], series_index: dict,
                      states: dict[str, dict | None]) -> tuple[dict[str, tuple], dict[str, dict]]:
    """From the previous detect.json (none when it is missing or damaged): the per-series results
    (``_detect_one``'s tuples) of the series whose inputs it was computed from are the same,
    and, for the series that only grew since (detect/windowed.py), what windowed detection
    starts from: ``{"detected": points before, "last": their newest, "segments", "changes":
    {metric: [index, ...]}}``."""
    try:
        old = store.read_detect()
    except ResultFileError:
        return {}, {}
    if not old or not isinstance(old.get("series_inputs"), dict):
        return {}, {}
    recorded, segments, noise = old["series_inputs"], old.get("segments") or {}, old.get("noise") or {}
    same = {sid for sid, key in inputs.items()
            if key is not None and recorded.get(sid) == key and sid in segments and sid in noise}
    old_states = old.get("series_state") if isinstance(old.get("series_state"), dict) else {}
    grown = {}
    for sid, state in states.items():
        was = old_states.get(sid)
        if sid in same or state is None or not isinstance(was, dict) or not isinstance(segments.get(sid), list):
            continue
        if windowed.appended_only(was, state, series_index[sid], lambda month, size, sid=sid: _prefix(store, sid, month, size)):
            grown[sid] = {"detected": was["points"], "last": was["last"], "segments": segments[sid], "changes": {},
                          "records": {}}
    cps: dict[str, list[dict]] = {sid: [] for sid in same}
    for cp in old.get("change_points") or []:
        sid = cp.get("series_id")
        if sid in same:
            cps[sid].append({**cp, "incident_id": None})    # incidents are formed again
        elif sid in grown and isinstance(cp.get("index"), int):
            grown[sid]["changes"].setdefault(cp.get("metric"), []).append(cp["index"])
            grown[sid]["records"].setdefault(cp.get("metric"), []).append(cp)
    kept = {sid: (sid, cps[sid], segments[sid], noise[sid], series_index[sid]["points"]) for sid in same}
    return kept, grown


def _prefetch(store: HistoryStore, tasks: list[tuple], params: DetectionParams) -> None:
    """In a partial checkout (history/partial.py): the months the detections will read, in one
    batch: the tail of a grown series (the confirmations' tail is shorter), all of any other."""
    if store.checkout is None:
        return
    wanted = {}
    for sid, entry, _entries, _params, grown in tasks:
        if grown is not None and isinstance(entry.get("points"), int):
            wanted[sid] = store.tail_months(entry, entry["points"] - grown["detected"] + windowed.tail_points(params))
        else:
            wanted[sid] = entry.get("shards") or []
    store.materialize_months(wanted)


def _prefix(store: HistoryStore, sid: str, month: str, size: int) -> bytes | None:
    """The first ``size`` bytes of a shard (None: it is not there)."""
    store.materialize([store.shard_path(sid, month)])
    try:
        with open(store.shard_path(sid, month), "rb") as f:
            return f.read(size)
    except OSError:
        return None


def _same_detection(store: HistoryStore, doc: dict) -> bool:
    """Nothing but the timestamp would change: keep the file (no churn on gh-pages)."""
    try:
        old = store.read_detect()
    except ResultFileError:
        return False
    if old is None:
        return False
    strip = lambda d: {k: v for k, v in d.items() if k != "generated"}  # noqa: E731
    return json.loads(json.dumps(strip(doc))) == strip(old)


#: A detection worker's store: set by the pool's initializer in the forked worker process only
#: (and gone with it); the parent never sets it.
_worker_store: HistoryStore | None = None


def _adopt_store(store: HistoryStore) -> None:
    global _worker_store
    _worker_store = store


def _detect_in_worker(task) -> tuple[str, list[dict], list[dict], dict, int]:
    assert _worker_store is not None, "a detection worker without its store"
    return _detect_one(_worker_store, task)


class _WholeSeries(Exception):
    """A bounded read cannot serve this series' detection: read all of it."""


def _detect_one(store: HistoryStore, task) -> tuple[str, list[dict], list[dict], dict, int]:
    """One series. A series that only grew (windowed, detect/windowed.py) is read from its latest
    months only, as many as its noise span and search window need (:func:`windowed.tail_points`,
    more when they reach further: :class:`TailTooShort`): a night costs the night's months, not
    the history's. Anything else reads the whole series."""
    sid, entry, entries, params, grown = task
    matched = [(k, e) for k, e in enumerate(entries) if matches_series(e, sid, entry["dims"])]
    # an annotation that starts after a run, a commit or a date may fall anywhere in the past
    bounded = grown is not None and not any("after" in e for _, e in matched)
    if bounded and isinstance(entry.get("points"), int) and entry["points"] > grown["detected"]:
        need = entry["points"] - grown["detected"] + windowed.tail_points(params)
        while True:
            offset, points = store.read_series_tail(sid, entry, need)
            try:
                return _detect_points(sid, entry, points, offset, matched, params, grown)
            except TailTooShort:
                if offset == 0:
                    raise AssertionError("a whole series is never too short") from None
                need *= 2
            except _WholeSeries:
                break
    return _detect_points(sid, entry, store.read_series(sid, entry), 0, matched, params, grown)


def _detect_points(sid: str, entry: dict, points: list[dict], offset: int, matched: list[tuple[int, dict]],
                   params: DetectionParams, grown: dict | None) -> tuple[str, list[dict], list[dict], dict, int]:
    """Detection of one series from ``points``, its points from index ``offset`` on (0: all).
    Indices in what it returns are the whole series'."""
    dims = entry["dims"]
    resets, silences = [], []
    for k, ann in matched:
        at = first_index_after(ann, points)      # offset 0 whenever an annotation has "after"
        if ann["action"] == "reset-baseline" and at is not None:
            resets.append(at)
        elif ann["action"] == "silence" and (at is not None or "after" not in ann):
            silences.append((at or 0, k))
    segs = _segments(points, offset, grown)
    for at in sorted(set(resets)):
        if 0 < at < len(points) and all(s["start_index"] != at for s in segs):
            segs.append({"start_index": at, "fingerprint_id": points[at].get("fingerprint_id"), "reset_baseline": True})
    segs.sort(key=lambda s: s["start_index"])
    if grown is not None and not _continues(grown, points, segs, offset):
        grown = None              # not what the previous run saw, plus newer points: detect in full
    if grown is None and offset:
        raise _WholeSeries
    # the stretch the first given point lies in: how many of its points come before them
    head = None if not offset else offset - max(seg["start_index"] for seg in segs if seg["start_index"] <= offset)
    n_all = offset + len(points)

    valid = [bool(p.get("valid", True)) for p in points]
    fps = [segment_key(p) for p in points]     # fingerprint (+ instruction method id)
    cps: list[dict] = []
    noise: dict[str, dict] = {}
    for metric in params.metrics:
        stats = [p.get("metrics", {}).get(metric) for p in points]
        if not any(stats):
            continue
        values = [s.get("median") if s else None for s in stats]
        samples = [s.get("samples") if s else None for s in stats]
        metric_params = params.for_metric(metric)     # counted metrics: their own rule
        windowed_args = {} if grown is None else {
            "prior": [i - offset for i in grown["changes"].get(metric, []) if i >= offset],
            "detected": grown["detected"] - offset, "head": head}
        found = detect_segmented(
            values, samples=samples, valid=valid, fingerprints=fps, resets=resets,
            bigger_is_better=bigger_is_better(metric), params=metric_params, **windowed_args)
        noise[metric] = {"cv": round(float(found.cv), 7 if params.is_count(metric) else 5)}
        if grown is not None:
            settled = offset + found.settled_before
            last_start = max(seg["start_index"] for seg in segs) - offset
            for record in grown["records"].get(metric, []):
                if record["index"] < settled:
                    cps.append(_settled(record, values, valid, last_start, resets, offset))
        for change in found.changes:
            record = _record(sid, metric, change, points, valid, values, found.cv, metric_params, resets)
            record["index"] += offset
            record["series_name"] = describe(dims)
            record["silenced_by"] = next((k for at, k in silences if change.index >= at), None)
            cps.append(record)
    return sid, cps, segs, noise, n_all


def _segments(points: list[dict], offset: int, grown: dict | None) -> list[dict]:
    """The series' segments (whole-series indices). From a bounded read: the previous run's up
    to the first point read, then those that start among the points read."""
    found = fingerprint_segments(points)
    if not offset:
        return found
    before = [dict(seg) for seg in grown["segments"] if seg["start_index"] <= offset]
    return before + [{**seg, "start_index": seg["start_index"] + offset} for seg in found if seg["start_index"] > 0]


def _settled(record: dict, values: list, valid: list[bool], last_start: int, resets: list[int], offset: int) -> dict:
    """A change point before the search window, as the previous run recorded it. Only whether
    its series is back at the old level follows the newest runs (``recovered``, with the
    minimum effect it was accepted with); incidents are formed again."""
    out = {**record, "incident_id": None}
    local = record["index"] - offset
    if local >= last_start:          # in the newest stretch: its latest runs are among those read
        latest = [values[i] for i in range(max(local, last_start, 0), len(values)) if valid[i] and values[i]]
        if len(latest) >= 3:
            level = sorted(latest[-3:])[1]
            out["recovered"] = bool(abs(level / record["level_before"] - 1) < record["min_effect"])
    if not offset:                   # a whole read: the annotations' resets are all known
        out["baseline_reset"] = any(r > local for r in resets)
    return out


def _continues(grown: dict, points: list[dict], segs: list[dict], offset: int = 0) -> bool:
    """The points a windowed detection starts from are those the previous run detected: the one
    it saw last is still at its place, and the segments (environment, method, reset-baseline)
    that start among them are the same."""
    n = grown["detected"]
    if not offset <= n - 1 < offset + len(points) - 1:
        return False
    last = points[n - 1 - offset]
    if {"timestamp": last["timestamp"], "run_id": last["run_id"]} != grown["last"]:
        return False
    before = [seg for seg in segs if seg["start_index"] < n]
    return json.loads(json.dumps(before)) == [seg for seg in grown["segments"] if seg.get("start_index", n) < n]


def _ref(point: dict) -> dict:
    return {
        "run_id": point["run_id"],
        "version": point.get("version"),
        "server_version": point.get("server_version"),
        "commit": point.get("commit"),
        "timestamp": point["timestamp"],
        "workflow_run_url": point.get("workflow_run_url"),
        **{k: point[k] for k in ("repository", "build_config", "build_id") if point.get(k)},
    }


def _record(sid, metric, change, points, valid, values, cv, params, resets) -> dict:
    good_i = change.before[1] - 1
    while good_i > 0 and not valid[good_i]:
        good_i -= 1
    before_runs = [points[i]["run_id"] for i in range(*change.before) if valid[i]]
    after_runs = [points[i]["run_id"] for i in range(*change.after) if valid[i]]
    min_effect = float(params.min_effect(cv))
    return {
        "series_id": sid,
        "metric": metric,
        "index": change.index,
        "run_id": points[change.index]["run_id"],
        "timestamp": points[change.index]["timestamp"],
        "direction": change.direction,
        "magnitude": round(change.magnitude, 5),
        "p_value": float(f"{change.p_value:.3g}"),
        "p_runs": float(f"{change.p_runs:.3g}"),
        "p_samples": None if change.p_samples is None else float(f"{change.p_samples:.3g}"),
        "level_before": change.level_before,
        "level_after": change.level_after,
        "min_effect": round(min_effect, 6),
        "good": _ref(points[good_i]),
        "bad": _ref(points[change.index]),
        "runs": {"before": before_runs, "after": after_runs},
        "recovered": _recovered(change, values, valid, points, min_effect, resets),
        "baseline_reset": any(r > change.index for r in resets),
        "incident_id": None,
    }


def _recovered(change, values, valid, points, min_effect, resets) -> bool:
    """Back at the old level: the latest runs of the same environment segment (up to 3, after
    the change's own runs) are within the minimum effect of the good level."""
    end = len(points)
    fp = segment_key(points[change.index])
    for i in range(change.index + 1, len(points)):
        if segment_key(points[i]) != fp or i in resets:
            end = i
            break
    tail = [values[i] for i in range(change.after[1], end) if valid[i] and values[i]]
    if len(tail) < 3:
        return False
    tail = sorted(tail[-3:])
    return bool(abs(tail[1] / change.level_before - 1) < min_effect)
