"""Issue 23: a series that only grew since the previous detect.json is searched for candidates in
a window of its latest points (detect/windowed.py). Night after night - steps of different sizes,
an outlier, an environment (segment) boundary, an annotation added mid-way, a point inserted in
the past - the windowed result equals a full run's, and the cases it cannot take are detected in
full."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from factory import make_result, write_result

from vkbench.detect import run_detection, runner, segmented, windowed
from vkbench.detect.params import DetectionParams
from vkbench.history import HistoryStore
from vkbench.history.ingest import ingest

START = datetime(2026, 1, 1, 2, 0, tzinfo=timezone.utc)
CELLS = (2, 4)                       # io-threads: two cells, SET and GET each: four series
ANNOTATED_NIGHT = 104                # a reset-baseline for io-threads 4 is added on this night...
RESET_AFTER_NIGHT = 108              # ...taking effect after this night's run
LATE_NIGHT = 116                     # a run of an earlier day arrives on this night (io-threads 2)
LAST_NIGHT = 128


def _stamp(night: float) -> str:
    return (START + timedelta(days=night)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _level(night: int, io: int) -> float:
    level = 1.0
    if io == 2 and night >= 48:
        level *= 0.85                # -15 %
    if night >= 62:
        level *= 1.08                # +8 %, every series
    if night >= 80:
        level *= 1.2                 # the new machine (a new fingerprint: a segment boundary)
    if io == 4 and night >= 92:
        level *= 0.94                # -6 %
    if io == 4 and night >= 112:
        level *= 0.9                 # -10 %, after the reset-baseline
    if io == 2 and night == 57:
        level *= 0.7                 # one disturbed night: an outlier, never a change
    return level


def _write(tmp_path, name: str, night: float, io: int, rng, run_id: str | None = None) -> None:
    rps = {cmd: 400_000 * (1 + 0.1 * k) * _level(int(night), io) * (1 + rng.normal(0, 0.01)) for k, cmd in enumerate(("SET", "GET"))}
    write_result(tmp_path / "res" / name, make_result(
        run_id=run_id or f"night-{int(night):03d}", cell_id=f"io{io}", rps=rps, io_threads=io, spread=0.005,
        timestamp=_stamp(night), commit=f"{int(night * 10):06x}" + "ab" * 17,
        fingerprint_id="fp-1" if night < 80 else "fp-2", workflow_run_url=f"https://github.com/o/r/actions/runs/{int(night)}"))


def _night(tmp_path, night: int, rng) -> list:
    for io in CELLS:
        _write(tmp_path, f"{night:03d}", night, io, rng)
    return [tmp_path / "res" / f"{night:03d}"]


def _comparable(doc: dict) -> dict:
    return json.loads(json.dumps({k: v for k, v in doc.items() if k != "generated"}))


#: What a settled change point keeps from the night it was last tested, where a full run tests it
#: again with tonight's noise (docs/detection.md, "Windowed detection").
TESTED_AGAIN = ("p_value", "p_runs")


def _settled_comparable(doc: dict) -> dict:
    out = _comparable(doc)
    for record in out["change_points"] + out["incidents"]:
        for key in TESTED_AGAIN:
            record.pop(key, None)
    return out


def _by_key(doc: dict) -> dict:
    return {(cp["series_id"], cp["metric"], cp["index"]): cp for cp in doc["change_points"]}


@pytest.fixture
def small_windows(monkeypatch):
    """Windows of one test window (20 runs), so a history of a hundred nights is windowed
    (the defaults want a few hundred points before a window pays)."""
    monkeypatch.setattr(windowed, "MIN_WINDOWS", 1)
    monkeypatch.setattr(windowed, "GAP_WINDOWS", 1.0)
    monkeypatch.setattr(windowed, "MAX_WINDOWS", 3)


def _spy(monkeypatch) -> tuple[list, list]:
    """(series offered a window and whether their points continued, windowed searches)."""
    offered, searched = [], []
    detect_one, continues, detect_changes = runner._detect_one, runner._continues, segmented.detect_changes

    def spy_detect_one(store, task):
        offered.append([task[0], task[4] is not None])
        return detect_one(store, task)

    def spy_continues(*args):
        offered[-1][1] = continues(*args)
        return offered[-1][1]

    def spy_detect_changes(*args, **kwargs):
        searched.append(kwargs.get("search_from", 0))
        return detect_changes(*args, **kwargs)

    monkeypatch.setattr(runner, "_detect_one", spy_detect_one)
    monkeypatch.setattr(runner, "_continues", spy_continues)
    monkeypatch.setattr(segmented, "detect_changes", spy_detect_changes)
    return offered, searched


def test_windowed_detection_equals_a_full_run_night_after_night(tmp_path, monkeypatch, small_windows):
    rng = np.random.default_rng(11)
    history = tmp_path / "h"
    ingest(HistoryStore(history), [p for night in range(40) for p in _night(tmp_path, night, rng)])
    run_detection(history)
    offered, searched = _spy(monkeypatch)
    annotations: list[dict] = []
    windowed_nights = incidents_seen = settled = window_searched = 0
    for night in range(40, LAST_NIGHT + 1):
        results = _night(tmp_path, night, rng)
        if night == LATE_NIGHT:         # io-threads 2 reran a night of last week (a later hour)
            _write(tmp_path, "late", night - 5.5, 2, rng, run_id="late-rerun")
            results.append(tmp_path / "res" / "late")
        if night == ANNOTATED_NIGHT:
            annotations = [{"series": {"io_threads": 4}, "after": _stamp(RESET_AFTER_NIGHT)[:10],
                            "action": "reset-baseline", "reason": "the runner image changed"}]
        ingest(HistoryStore(history), results)
        full_copy = tmp_path / "full"
        shutil.copytree(history, full_copy)
        offered.clear()
        searched.clear()
        before = json.loads((history / "detect.json").read_text())
        incremental = run_detection(history, annotations)
        full = run_detection(full_copy, annotations, full=True)
        # the same change points, runs, levels and incidents as a full run...
        assert _settled_comparable(incremental) == _settled_comparable(full), f"night {night}"
        assert _comparable(json.loads((history / "detect.json").read_text())) == _comparable(incremental)
        # ...each tested exactly as in a full run, or settled: before the window searched (or in
        # an older segment), with the p-values of the night it was last tested
        previous, now, full_cps = _by_key(before), _by_key(incremental), _by_key(full)
        for key, cp in now.items():
            if cp != full_cps[key]:
                assert key in previous, f"night {night}: {key}"
                settled += 1
                assert [cp[k] for k in TESTED_AGAIN] == [previous[key][k] for k in TESTED_AGAIN], f"night {night}: {key}"
        went_windowed = {sid for sid, ok in offered if ok}
        if night == ANNOTATED_NIGHT:
            assert went_windowed == set(), "other annotations: every series in full"
        elif night == LATE_NIGHT:
            io2 = {sid for sid in full["series_state"] if HistoryStore(history).index()["series"][sid]["dims"]["io_threads"] == 2}
            assert went_windowed == set(full["series_state"]) - io2, "a point in the past: that series in full"
        elif night >= 60:               # enough points for a window
            assert went_windowed == set(full["series_state"]), f"night {night}"
            windowed_nights += 1
            # a window searched; not in the first 40 nights of a segment (a new machine on night
            # 80): that segment is searched whole, the older one's change points are settled
            window_searched += any(start > 0 for start in searched)
        incidents_seen += len(full["incidents"])
        shutil.rmtree(full_copy)
    assert windowed_nights > 50 and settled > 0 and window_searched >= 20
    changes = {(cp["series_id"][:6], cp["metric"], cp["index"]) for cp in full["change_points"]}
    assert len(changes) >= 8 and incidents_seen > 0     # the steps were found, windowed as in full
    assert any(cp["baseline_reset"] for cp in full["change_points"])


def test_full_forces_every_series_and_an_older_detect_json_means_a_full_run(tmp_path, monkeypatch, small_windows):
    rng = np.random.default_rng(12)
    history = tmp_path / "h"
    ingest(HistoryStore(history), [p for night in range(70) for p in _night(tmp_path, night, rng)])
    run_detection(history)
    offered, _ = _spy(monkeypatch)
    ingest(HistoryStore(history), _night(tmp_path, 70, rng))
    run_detection(history, full=True)
    assert len(offered) == 4 and not any(ok for _, ok in offered)
    ingest(HistoryStore(history), _night(tmp_path, 71, rng))
    doc = json.loads((history / "detect.json").read_text())
    del doc["series_state"]                       # as written before windowed detection
    (history / "detect.json").write_text(json.dumps(doc))
    offered.clear()
    run_detection(history)
    assert len(offered) == 4 and not any(ok for _, ok in offered)
    ingest(HistoryStore(history), _night(tmp_path, 72, rng))
    offered.clear()
    run_detection(history)
    assert len(offered) == 4 and all(ok for _, ok in offered)     # the record is back: windowed again
    ingest(HistoryStore(history), _night(tmp_path, 73, rng))
    offered.clear()
    run_detection(history, params=DetectionParams(alpha=0.002))   # other parameters
    assert len(offered) == 4 and not any(ok for _, ok in offered)


def test_a_rewritten_older_shard_means_a_full_run(tmp_path, monkeypatch, small_windows):
    from vkbench.history.store import shard_digest

    rng = np.random.default_rng(13)
    history = tmp_path / "h"
    ingest(HistoryStore(history), [p for night in range(70) for p in _night(tmp_path, night, rng)])
    run_detection(history)
    offered, _ = _spy(monkeypatch)
    ingest(HistoryStore(history), _night(tmp_path, 70, rng))
    store = HistoryStore(history)
    sid = store.series_ids()[0]
    shard = store.shard_path(sid, "2026-01")
    lines = shard.read_bytes().splitlines(keepends=True)
    shard.write_bytes(b"".join(lines[:3] + [lines[3].replace(b'"median":', b'"median": ', 1)] + lines[4:]))
    index = json.loads((history / "index.json").read_text())
    index["series"][sid]["shard_digests"]["2026-01"] = shard_digest(shard.read_bytes())
    (history / "index.json").write_text(json.dumps(index))
    run_detection(history)
    assert {s: ok for s, ok in offered} == {s: s != sid for s in store.series_ids()}


@pytest.mark.parametrize("m, old_m, prior, start", [
    (10, 10, [], 10),                   # nothing new in this stretch: no search
    (31, 30, [], 0),                    # too short for a window: all of it
    (201, 200, [], 180),
    (201, 200, [185], 165),             # a change close to the start: the window starts before it
    (201, 200, [185, 165], 145),        # ...and before the one before that
    (201, 200, [150], 180),             # far enough before: kept as a candidate, not searched again
    (201, 200, [40 + 20 * k for k in range(8)], 0),    # changes all the way back: over the maximum
])
def test_search_start(small_windows, m, old_m, prior, start):
    assert windowed.search_start(m, old_m, prior, DetectionParams()) == start


def test_windowed_detection_in_worker_processes_equals_a_full_run(tmp_path, monkeypatch, small_windows):
    rng = np.random.default_rng(15)
    history = tmp_path / "h"
    ingest(HistoryStore(history), [p for night in range(70) for p in _night(tmp_path, night, rng)])
    monkeypatch.setattr(runner, "PARALLEL_THRESHOLD", 0)
    run_detection(history, jobs=2)
    searched = []
    monkeypatch.setattr(segmented, "search_start", lambda *a: searched.append(windowed.search_start(*a)) or searched[-1])
    ingest(HistoryStore(history), _night(tmp_path, 70, rng))
    shutil.copytree(history, tmp_path / "full")
    windowed_doc = run_detection(history, jobs=2)
    assert searched == []                     # the series were detected in the workers...
    run_detection(tmp_path / "full", jobs=1, write=False)
    assert searched and all(start > 0 for start in searched)     # ...windowed, as here
    assert _settled_comparable(windowed_doc) == _settled_comparable(run_detection(tmp_path / "full", full=True, jobs=2))


def test_a_grown_series_is_read_from_its_latest_months_only(tmp_path, monkeypatch, small_windows):
    """Issue 23: a night reads the months its detection needs (the noise span, the window and the
    runs its tests look back on), not the series' past, and finds what a full run finds."""
    params = DetectionParams(noise_points=30, window=10)     # a tail of 42 points: two months of the four
    rng = np.random.default_rng(5)
    history = tmp_path / "h"
    ingest(HistoryStore(history), [p for night in range(100) for p in _night(tmp_path, night, rng)])
    run_detection(history, params=params)
    offsets: dict[str, int] = {}        # series -> index of the first point its detection read
    detect_points = runner._detect_points

    def spy(sid, entry, points, offset, *args):
        found = detect_points(sid, entry, points, offset, *args)
        offsets[sid] = offset
        return found

    monkeypatch.setattr(runner, "_detect_points", spy)
    bounded_nights = 0
    for night in range(100, 135):
        ingest(HistoryStore(history), _night(tmp_path, night, rng))
        shutil.copytree(history, tmp_path / "full")
        offsets.clear()
        incremental = run_detection(history, params=params, jobs=1)
        assert len(offsets) == 4
        bounded_nights += all(offset > 0 for offset in offsets.values())
        full = run_detection(tmp_path / "full", params=params, full=True, jobs=1)
        assert _settled_comparable(incremental) == _settled_comparable(full), f"night {night}"
        shutil.rmtree(tmp_path / "full")
    assert bounded_nights >= 30
    # the -10 % step of night 112 was found in the months read
    assert any(cp["index"] >= 112 and cp["direction"] == "regression" for cp in incremental["change_points"])
