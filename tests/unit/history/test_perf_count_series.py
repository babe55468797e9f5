"""Counts by perf (hardware counters, issue 19) in the history: a result whose method counts the
total (``counted: "total"``: perf has no per-function costs, so no code count) is valid without
code_per_op, its series' instructions_per_op is the total, a switch between callgrind and perf is a
segment boundary (the method ids differ, perf's start with "perf-"), never a step, and compare
never sets one tool's count against the other's."""

from __future__ import annotations

import copy

import numpy as np
from factory import make_result, write_result

from vkbench.compare import compare_dirs
from vkbench.detect import run_detection
from vkbench.history import HistoryStore
from vkbench.history.ingest import ingest
from vkbench.history.series import point_from_result, segment_key
from vkbench.instruments.method import InstructionsMethod, perf_method
from vkbench.results.io import validate_result
from vkbench.runner.session import _instruction_summary

CALLGRIND = InstructionsMethod(servers=3).to_dict()
PERF = perf_method(servers=3).to_dict()
SEEDS = (0.0, 0.0011, -0.0007)


def with_counts(result: dict, *, tool: str, total: float, code: float | None = None, rng=None, cv: float = 0.0) -> dict:
    out = copy.deepcopy(result)
    noise = (lambda: 1 + rng.normal(0, cv)) if rng is not None else (lambda: 1.0)
    per_server = [total * (1 + off) * noise() for off in SEEDS]
    entry = {"per_op": float(np.median(per_server)), "values": per_server, "cv_pct": 0.2, "cv_servers_pct": 0.1,
             "per_server": per_server, "top_functions": []}
    if tool == "callgrind":
        code_per_server = [code * (1 + off / 10) * noise() for off in SEEDS]
        entry.update(code_per_op=float(np.median(code_per_server)), code_cv_pct=0.01, code_cv_servers_pct=0.005,
                     code_per_server=code_per_server)
    counter = {"tool": "perf" if tool == "perf" else "valgrind", "requested": "auto",
               "reason": "hardware counters: perf stat counts instructions:u" if tool == "perf"
               else "no hardware counters: perf stat reports instructions:u <not supported>"}
    out["instructions"] = {"method": dict(PERF if tool == "perf" else CALLGRIND), "commands": {"get": entry},
                           "servers": [{"seed": s} for s in (1, 2, 3)], "counter": counter}
    return validate_result(out, source="test")


def test_a_perf_result_is_valid_without_a_code_count_and_its_series_is_the_total():
    result = with_counts(make_result(), tool="perf", total=9100.0)
    assert "code_per_op" not in result["instructions"]["commands"]["get"]
    point = point_from_result(result, "GET")
    assert point["metrics"]["instructions_per_op"]["median"] == 9100.0
    assert point["metrics"]["instructions_per_op_total"]["median"] == 9100.0
    assert point["instructions_method"] == PERF["id"] and PERF["id"].startswith("perf-")
    assert _instruction_summary(result["instructions"]) == {"instructions_per_op": {"get": 9100.0}}


def test_perf_and_callgrind_points_are_different_segments():
    perf = point_from_result(with_counts(make_result(), tool="perf", total=9100.0), "GET")
    grind = point_from_result(with_counts(make_result(), tool="callgrind", total=7880.0, code=7656.0), "GET")
    assert segment_key(perf) != segment_key(grind)


def test_the_callgrind_method_ids_are_unchanged_by_perf():
    """Adding perf's parameters must not move existing series to a new segment. (The ids are
    those of the method with the slow log off and the string routines counted outside the
    timer functions, issue 19's drift fixes: that one was a boundary.)"""
    assert InstructionsMethod().method_id() == "callgrind-1562ec0c71"
    assert InstructionsMethod(counted="total").method_id() == "callgrind-2e46ecc566"


def test_a_switch_from_callgrind_to_perf_is_a_segment_boundary_not_a_step(tmp_path):
    """The night the machine gets hardware counters the count jumps 16 % (perf keeps the cron and
    the string routines): a new segment, no change point."""
    rng = np.random.default_rng(5)
    store = HistoryStore(tmp_path / "history")
    for night in range(26):
        base = make_result(run_id=f"run-{night:04d}", timestamp=f"2026-{9 + night // 28:02d}-{night % 28 + 1:02d}T02:17:00Z",
                           commit=f"{night:06x}" + "ab" * 17, rps={"SET": 4e5, "GET": 4.4e5}, spread=0.03)
        if night >= 20:
            result = with_counts(base, tool="perf", total=9100.0, rng=rng, cv=0.001)
        else:
            result = with_counts(base, tool="callgrind", total=7880.0, code=7656.0, rng=rng, cv=0.0001)
        write_result(tmp_path / "res" / f"n{night}", result)
        ingest(store, [tmp_path / "res" / f"n{night}"])
    doc = run_detection(store.path, write=False)
    assert [cp for cp in doc["change_points"] if cp["metric"].startswith("instructions_per_op")] == []
    assert [[s["start_index"] for s in segs] for segs in doc["segments"].values() if len(segs) > 1] == [[0, 20]]


def test_compare_never_sets_a_perf_count_against_a_callgrind_count(tmp_path):
    write_result(tmp_path / "b", with_counts(make_result(run_id="b"), tool="callgrind", total=7880.0, code=7656.0))
    write_result(tmp_path / "c", with_counts(make_result(run_id="c"), tool="perf", total=9100.0))
    rows, _ = compare_dirs(tmp_path / "b", tmp_path / "c")
    assert not [r for r in rows if r.metric.startswith("instructions")]
    write_result(tmp_path / "c2", with_counts(make_result(run_id="c2"), tool="perf", total=9100.0 * 1.01))
    rows, _ = compare_dirs(tmp_path / "c", tmp_path / "c2")
    by = {r.metric: r for r in rows if r.command == "GET" and r.metric.startswith("instructions")}
    assert set(by) == {"instructions_per_op"} and 0.009 < by["instructions_per_op"].change < 0.011
