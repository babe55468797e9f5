"""Issue 23: detection re-runs only the series whose inputs changed since the previous
detect.json; the rest keep their change points, segments and noise. Night after night the
incremental result equals a full run."""

from __future__ import annotations

import json
import shutil

import numpy as np
from factory import make_result, write_result

from vkbench.detect import run_detection
from vkbench.detect import runner
from vkbench.history import HistoryStore
from vkbench.history.ingest import ingest


def _night(tmp_path, night: int, io_threads, rng) -> list:
    out = tmp_path / "res" / f"{night:03d}"
    level = 0.85 if night >= 30 else 1.0            # a -15 % step on night 30
    for io in io_threads:
        rps = {cmd: 400_000 * (1 + 0.1 * k) * level * (1 + rng.normal(0, 0.01)) for k, cmd in enumerate(("SET", "GET"))}
        write_result(out, make_result(
            run_id=f"night-{night:03d}", cell_id=f"io{io}", rps=rps, io_threads=io, spread=0.005,
            timestamp=f"2026-{9 + night // 28:02d}-{night % 28 + 1:02d}T02:00:00Z", commit=f"{night:06x}" + "ab" * 17,
            fingerprint_id="fp-1", workflow_run_url=f"https://github.com/o/r/actions/runs/{night}"))
    return [out]


def _comparable(doc: dict) -> dict:
    return json.loads(json.dumps({k: v for k, v in doc.items() if k != "generated"}))


def test_incremental_detection_equals_a_full_run_night_after_night(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    history = tmp_path / "h"
    store = HistoryStore(history)
    ingest(store, [p for night in range(24) for p in _night(tmp_path, night, (2, 4, 8), rng)])
    run_detection(history)
    detected = []
    original = runner._detect_one
    monkeypatch.setattr(runner, "_detect_one", lambda store, task: detected.append(task[0]) or original(store, task))
    incidents_seen = 0
    for night in range(24, 44):
        # io-threads 8 runs every third night only: its series are untouched on the others
        cells = (2, 4, 8) if night % 3 == 0 else (2, 4)
        ingest(HistoryStore(history), _night(tmp_path, night, cells, rng))
        full_copy = tmp_path / f"full-{night}"
        shutil.copytree(history, full_copy)
        detected.clear()
        incremental = run_detection(history)
        touched = set(detected)
        full = run_detection(full_copy, full=True)
        assert _comparable(incremental) == _comparable(full), f"night {night}"
        assert _comparable(json.loads((history / "detect.json").read_text())) == _comparable(full)
        all_series = set(HistoryStore(history).series_ids())
        untouched = {sid for sid in all_series if HistoryStore(history).index()["series"][sid]["dims"]["io_threads"] == 8}
        assert touched == (all_series if night % 3 == 0 else all_series - untouched), f"night {night}"
        incidents_seen += len(full["incidents"])
        shutil.rmtree(full_copy)
    assert incidents_seen > 0          # the step was found: change points were kept and re-formed


def test_changed_parameters_or_a_damaged_detect_json_mean_a_full_run(tmp_path, monkeypatch):
    from vkbench.detect.params import DetectionParams

    rng = np.random.default_rng(4)
    history = tmp_path / "h"
    ingest(HistoryStore(history), [p for night in range(12) for p in _night(tmp_path, night, (2,), rng)])
    run_detection(history)
    detected = []
    original = runner._detect_one
    monkeypatch.setattr(runner, "_detect_one", lambda store, task: detected.append(task[0]) or original(store, task))
    run_detection(history)
    assert detected == []                                   # nothing changed: nothing detected again
    run_detection(history, params=DetectionParams(penalty=DetectionParams().penalty * 2))
    assert len(detected) == 2
    detected.clear()
    (history / "detect.json").write_text("{not json")
    run_detection(history)
    assert len(detected) == 2


def test_a_kept_series_is_still_checked_against_the_index(tmp_path):
    import os

    import pytest

    from vkbench.errors import ResultFileError
    from vkbench.history.store import shard_digest

    rng = np.random.default_rng(5)
    history = tmp_path / "h"
    ingest(HistoryStore(history), [p for night in range(12) for p in _night(tmp_path, night, (2,), rng)])
    run_detection(history)
    store = HistoryStore(history)
    sid = store.series_ids()[0]
    shard = store.shard_path(sid, "2026-09")
    data = shard.read_bytes()
    shard.write_bytes(os.urandom(len(data)))              # same size: only the digest can tell
    with pytest.raises(ResultFileError, match="truncated or edited"):
        run_detection(history)
    # an edit that also fixed the index changes the series' inputs: read again, line by line
    shard.write_bytes(data.replace(b'"median":', b'"median":"x","was":', 1))
    index = json.loads((history / "index.json").read_text())
    index["series"][sid]["shard_digests"]["2026-09"] = shard_digest(shard.read_bytes())
    (history / "index.json").write_text(json.dumps(index))
    with pytest.raises(ResultFileError, match="2026-09.*:1: metrics/.*/median is not a number"):
        run_detection(history)
