"""Instruction counts and memory per key reach the history (issue 19): a counted result feeds
the same kind of series point as a timed one, with ``instructions_per_op`` / ``bytes_per_key``
metrics and the method id of the count (a method change is a segment boundary)."""

from __future__ import annotations

import copy

from factory import make_result, write_result

from vkbench.history import HistoryStore
from vkbench.history.ingest import ingest
from vkbench.history.series import (
    METRICS, bigger_is_better, point_from_result, segment_key, segments, series_commands, series_key,
)
from vkbench.results.io import validate_result


def counted(result: dict, *, method: str = "m-1", per_op: dict | None = None, bytes_per_key: float | None = 60.25,
            wallclock: bool = True) -> dict:
    """``result`` with an instructions block (and memory), optionally without its wall-clock part."""
    out = copy.deepcopy(result)
    per_op = per_op if per_op is not None else {"set": 9875.0, "get": 7852.5}
    out["instructions"] = {
        "method": {"tool": "callgrind", "windows": 4, "window_requests": 20000, "servers": 3, "id": method},
        "commands": {name: {"per_op": v, "values": [v - 1, v, v + 1], "cv_pct": 0.01,
                            "per_server": [v - 0.5, v, v + 0.5]} for name, v in per_op.items()},
    }
    if bytes_per_key is not None:
        out["memory"] = {"keys": 10000, "used_memory_before": 1_000_000, "used_memory_after": 1_602_500,
                         "bytes_per_key": bytes_per_key}
    if not wallclock:
        out["summary"], out["repetitions"] = {}, []
        out["dimensions"]["instrument"] = "instructions"
    return validate_result(out, source="test")


def test_wallclock_point_and_key_unchanged():
    """A wall-clock result's series keys and points are exactly what they were before counts existed."""
    result = make_result()
    assert series_commands(result) == ["SET", "GET"]
    point = point_from_result(result, "SET")
    assert "instructions_method" not in point
    assert set(point["metrics"]) == {"rps", "p50", "p99", "avg"}
    assert point["metrics"]["rps"] == result["summary"]["SET"]["rps"]
    assert segments([point]) == [{"start_index": 0, "fingerprint_id": "fp-aaaa"}]
    assert segment_key(point) == "fp-aaaa"
    assert series_key(result, "SET") == series_key(counted(result), "SET")   # same dims, same sid


def test_instruction_only_result_has_count_metrics():
    result = counted(make_result(), wallclock=False)
    assert series_commands(result) == ["SET", "GET"]
    point = point_from_result(result, "GET")
    assert point["metrics"]["instructions_per_op"]["median"] == 7852.5
    assert point["metrics"]["instructions_per_op"]["samples"] == [7852.0, 7852.5, 7853.0]
    assert point["metrics"]["bytes_per_key"]["median"] == 60.25
    assert point["instructions_method"] == "m-1"
    assert "rps" not in point["metrics"]


def test_both_adds_counts_to_the_wallclock_point():
    base = make_result()
    point = point_from_result(counted(base), "SET")
    assert point["metrics"]["rps"] == base["summary"]["SET"]["rps"]
    assert point["metrics"]["instructions_per_op"]["median"] == 9875.0
    assert {k: v for k, v in point.items() if k not in ("metrics", "instructions_method")} == \
        {k: v for k, v in point_from_result(base, "SET").items() if k != "metrics"}


def test_memory_only_where_present_and_command_without_count():
    result = counted(make_result(), per_op={"set": 9875.0}, bytes_per_key=None)
    get = point_from_result(result, "GET")
    assert "instructions_per_op" not in get["metrics"] and "bytes_per_key" not in get["metrics"]
    assert "instructions_method" not in get


def test_metric_names_and_direction():
    assert "instructions_per_op" in METRICS and "bytes_per_key" in METRICS
    assert not bigger_is_better("instructions_per_op")
    assert not bigger_is_better("bytes_per_key")
    assert bigger_is_better("rps")


def test_method_change_is_a_segment_boundary():
    base = make_result()
    points = [point_from_result(counted(base, method=m), "SET") for m in ("m-1", "m-1", "m-2", "m-2")]
    segs = segments(points)
    assert [s["start_index"] for s in segs] == [0, 2]
    assert [s["instructions_method"] for s in segs] == ["m-1", "m-2"]
    assert all(s["fingerprint_id"] == "fp-aaaa" for s in segs)


def test_ingest_instruction_only_result(tmp_path):
    result = counted(make_result(), wallclock=False)
    write_result(tmp_path / "night", result)
    store = HistoryStore(tmp_path / "history")
    ingest(store, [tmp_path / "night"])
    index = store.index()["series"]
    assert len(index) == 2
    for sid, entry in index.items():
        points = store.read_series(sid, entry)
        assert len(points) == 1
        assert points[0]["metrics"], "an instruction-only result must not add a point without metrics"
        assert "instructions_per_op" in points[0]["metrics"]
        assert points[0]["instructions_method"] == "m-1"
    assert {e["dims"]["command"] for e in index.values()} == {"SET", "GET"}


def _count_nights(tmp_path, values, methods):
    """One instruction-only result per night (GET only), SET's count given by ``values``."""
    store = HistoryStore(tmp_path / "history")
    for i, (value, method) in enumerate(zip(values, methods)):
        result = counted(make_result(run_id=f"run-{i:04d}", timestamp=f"2026-10-{i + 1:02d}T02:00:00Z",
                                     commit=f"{i:04x}" + "c0ffee" * 6),
                         method=method, per_op={"set": value}, bytes_per_key=None, wallclock=False)
        write_result(tmp_path / f"night{i}", result)
        ingest(store, [tmp_path / f"night{i}"])
    return store


def test_detection_reads_more_instructions_as_a_regression(tmp_path):
    from vkbench.detect import run_detection
    from vkbench.detect.params import DetectionParams

    values = [10_000.0 + (i % 3) for i in range(10)] + [10_500.0 + (i % 3) for i in range(8)]   # +5%
    store = _count_nights(tmp_path, values, ["m-1"] * len(values))
    doc = run_detection(store.path, write=False, params=DetectionParams(metrics=("instructions_per_op",)))
    (change,) = doc["change_points"]
    assert change["metric"] == "instructions_per_op"
    assert change["direction"] == "regression"
    assert change["index"] == 10


def test_detection_does_not_flag_a_method_change(tmp_path):
    from vkbench.detect import run_detection
    from vkbench.detect.params import DetectionParams

    values = [10_000.0 + (i % 3) for i in range(10)] + [10_500.0 + (i % 3) for i in range(8)]
    store = _count_nights(tmp_path, values, ["m-1"] * 10 + ["m-2"] * 8)
    doc = run_detection(store.path, write=False, params=DetectionParams(metrics=("instructions_per_op",)))
    assert doc["change_points"] == []
    (segs,) = doc["segments"].values()
    assert [s["start_index"] for s in segs] == [0, 10]
