"""The series' ``instructions_per_op`` is the code count (issue 19): where the result's method
counts code it is ``code_per_op``, the total is ``instructions_per_op_total`` beside it; results
from before have another method id, so the switch is a segment boundary, never a step, and every
consumer (detection, compare, counts.json, the run summary, the site) tells the two apart."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from factory import make_result, write_result

from vkbench.compare import compare_dirs
from vkbench.detect import run_detection
from vkbench.detect.params import DetectionParams
from vkbench.errors import ResultFileError
from vkbench.export.gab import build_gab
from vkbench.history import HistoryStore
from vkbench.history.ingest import ingest
from vkbench.history.series import COUNT_METRICS, METRICS, point_from_result, segment_key
from vkbench.instruments.method import InstructionsMethod
from vkbench.results.io import validate_result
from vkbench.runner.session import _instruction_summary
from vkbench.site.series_data import HEADLINE_METRICS
from vkbench.site.series_data import METRICS as SITE_METRICS

NEW_METHOD = InstructionsMethod(servers=3).to_dict()
OLD_METHOD = {"tool": "callgrind", "windows": 4, "window_requests": 20000, "servers": 3, "id": "callgrind-0123456789"}
SEEDS = (0.0, 0.0011, -0.0007)


def with_counts(result: dict, *, total: float, code: float | None, run_id: str | None = None, rng=None,
                cv: float = 0.0) -> dict:
    """``result`` with a GET count of 3 servers: with the code count (the new method) or without (an older result)."""
    out = copy.deepcopy(result)
    noise = (lambda: 1 + rng.normal(0, cv)) if rng is not None else (lambda: 1.0)
    per_server = [total * (1 + off) * noise() for off in SEEDS]
    entry = {"per_op": float(np.median(per_server)), "values": per_server, "cv_pct": 0.02, "cv_servers_pct": 0.1,
             "per_server": per_server}
    if code is not None:
        code_per_server = [code * (1 + off / 10) * noise() for off in SEEDS]
        entry.update(code_per_op=float(np.median(code_per_server)), code_cv_pct=0.01, code_cv_servers_pct=0.005,
                     code_per_server=code_per_server)
    out["instructions"] = {"method": dict(NEW_METHOD if code is not None else OLD_METHOD), "commands": {"get": entry},
                           "servers": [{"seed": s} for s in (1, 2, 3)]}
    return validate_result(out, source="test")       # the schema takes both shapes


def test_a_code_count_result_feeds_the_code_count_and_the_total_beside_it():
    point = point_from_result(with_counts(make_result(), total=7880.0, code=7656.0), "GET")
    assert point["metrics"]["instructions_per_op"]["median"] == 7656.0
    assert point["metrics"]["instructions_per_op_total"]["median"] == 7880.0
    assert point["instructions_method"] == NEW_METHOD["id"]


def test_an_older_result_keeps_its_total_under_its_own_method_id():
    point = point_from_result(with_counts(make_result(), total=7880.0, code=None), "GET")
    assert point["metrics"]["instructions_per_op"]["median"] == 7880.0
    assert point["metrics"]["instructions_per_op_total"]["median"] == 7880.0     # the total's chart runs on
    new = point_from_result(with_counts(make_result(), total=7880.0, code=7656.0), "GET")
    assert segment_key(point) != segment_key(new)


def test_a_result_that_says_code_but_lacks_it_is_refused_not_read_as_the_total():
    result = with_counts(make_result(), total=7880.0, code=7656.0)
    del result["instructions"]["commands"]["get"]["code_per_op"]
    with pytest.raises(ValueError, match="code_per_op"):
        point_from_result(result, "GET")
    # ... and stopped at the boundary first: the result schema requires code_per_op then.
    with pytest.raises(ResultFileError, match="code_per_op"):
        validate_result(result, source="night.json")


def test_the_total_is_recorded_charted_and_not_detected():
    assert "instructions_per_op_total" in METRICS and "instructions_per_op_total" in COUNT_METRICS
    assert "instructions_per_op_total" in SITE_METRICS and "instructions_per_op_total" not in HEADLINE_METRICS
    params = DetectionParams()
    assert "instructions_per_op" in params.metrics and "instructions_per_op_total" not in params.metrics


def _nights(tmp_path, n: int, *, switch_at: int, step_at: int | None = None, step: float = 0.0):
    rng = np.random.default_rng(3)
    store = HistoryStore(tmp_path / "history")
    for night in range(n):
        base = make_result(run_id=f"run-{night:04d}", timestamp=f"2026-{9 + night // 28:02d}-{night % 28 + 1:02d}T02:17:00Z",
                           commit=f"{night:06x}" + "ab" * 17, rps={"SET": 4e5, "GET": 4.4e5}, spread=0.03)
        moved = 1 + (step if step_at is not None and night >= step_at else 0.0)
        result = with_counts(base, total=7880.0 * moved, code=(7656.0 * moved if night >= switch_at else None),
                             rng=rng, cv=0.0001)
        write_result(tmp_path / "res" / f"n{night}", result)
        ingest(store, [tmp_path / "res" / f"n{night}"])
    return store


def test_the_switch_to_the_code_count_is_a_segment_boundary_not_a_step(tmp_path):
    """The series drops by 2.8 % the night the code count arrives (7880 -> 7656): a new segment."""
    doc = run_detection(_nights(tmp_path, 26, switch_at=20).path, write=False)
    assert [cp for cp in doc["change_points"] if cp["metric"].startswith("instructions_per_op")] == []
    get_segments = [segs for segs in doc["segments"].values() if len(segs) > 1]
    assert [[s["start_index"] for s in segs] for segs in get_segments] == [[0, 20]]


def test_a_small_step_of_the_code_count_after_the_switch_is_found(tmp_path):
    doc = run_detection(_nights(tmp_path, 32, switch_at=10, step_at=28, step=0.004).path, write=False)
    found = [cp for cp in doc["change_points"] if cp["metric"] == "instructions_per_op"]
    assert [cp["direction"] for cp in found] == ["regression"]
    assert not [cp for cp in doc["change_points"] if cp["metric"] == "instructions_per_op_total"]


def test_compare_sets_code_against_code_and_shows_the_totals(tmp_path):
    write_result(tmp_path / "b", with_counts(make_result(run_id="b"), total=7880.0, code=7656.0))
    write_result(tmp_path / "c", with_counts(make_result(run_id="c"), total=7860.0, code=7656.0 * 1.005))
    rows, _ = compare_dirs(tmp_path / "b", tmp_path / "c")
    by = {r.metric: r for r in rows if r.command == "GET" and r.metric.startswith("instructions")}
    assert set(by) == {"instructions_per_op", "instructions_per_op_total"}
    assert by["instructions_per_op"].verdict == "worse" and 0.0045 < by["instructions_per_op"].change < 0.0055
    assert by["instructions_per_op_total"].change < 0


def test_compare_never_sets_a_code_count_against_a_total(tmp_path):
    write_result(tmp_path / "b", with_counts(make_result(run_id="b"), total=7880.0, code=None))
    write_result(tmp_path / "c", with_counts(make_result(run_id="c"), total=7880.0, code=7656.0))
    rows, _ = compare_dirs(tmp_path / "b", tmp_path / "c")
    metrics = {r.metric for r in rows if r.command == "GET" and r.metric.startswith("instructions")}
    assert metrics == {"instructions_per_op_total"}


def test_counts_json_has_the_code_count_under_its_own_name_and_the_total_under_the_old_one(tmp_path):
    export = build_gab([write_result(tmp_path / "r", with_counts(make_result(), total=7880.0, code=7656.0))])
    by_name = {e["name"]: e for e in export.counts}
    code = next(e for n, e in by_name.items() if n.endswith(" instructions/op (code)"))
    total = next(e for n, e in by_name.items() if n.endswith(" instructions/op"))
    assert code["value"] == 7656.0 and total["value"] == 7880.0
    assert code["name"].removesuffix(" (code)") == total["name"]
    old = build_gab([write_result(tmp_path / "o", with_counts(make_result(), total=7880.0, code=None))])
    assert not [e for e in old.counts if e["name"].endswith("(code)")]


def test_the_run_summary_reports_what_the_series_record():
    block = with_counts(make_result(), total=7880.0, code=7656.0)["instructions"]
    assert _instruction_summary(block) == {"instructions_per_op": {"get": 7656.0},
                                           "instructions_per_op_total": {"get": 7880.0}}
    old = with_counts(make_result(), total=7880.0, code=None)["instructions"]
    assert _instruction_summary(old) == {"instructions_per_op": {"get": 7880.0}}


def test_the_site_labels_the_code_count():
    from pathlib import Path

    import vkbench.site
    text = (Path(vkbench.site.__file__).parent / "static" / "format.js").read_text()
    assert 'label: "instructions/op (callgrind: code without libc string routines; perf: total)"' in text
    assert "instructions_per_op_total:" in text


def test_the_schema_keeps_results_without_the_code_count_valid():
    old = with_counts(make_result(), total=7880.0, code=None)
    assert "code_per_op" not in old["instructions"]["commands"]["get"]
    json.dumps(old)


def test_an_alert_says_what_the_instruction_count_counts_under_each_tool():
    from vkbench.alerts.summary import _metric_note

    assert _metric_note("instructions_per_op") == " (callgrind: the code, without libc string routines; perf: the total)"
    assert _metric_note("rps") == "" and _metric_note("instructions_per_op_total") == ""


def test_asking_for_instructions_per_op_of_a_mixed_pair_shows_the_totals_under_their_name(tmp_path):
    write_result(tmp_path / "b", with_counts(make_result(run_id="b"), total=7880.0, code=None))
    write_result(tmp_path / "c", with_counts(make_result(run_id="c"), total=7880.0, code=7656.0))
    rows, _ = compare_dirs(tmp_path / "b", tmp_path / "c", metrics=("instructions_per_op",))
    assert {r.metric for r in rows} == {"instructions_per_op_total"}
    rows, _ = compare_dirs(tmp_path / "b", tmp_path / "b", metrics=("instructions_per_op",))
    assert {r.metric for r in rows} == {"instructions_per_op"}              # two older results: the total, as before
