"""The instruction-count A/B's statistics, verdicts, refusals and Markdown, on chosen numbers
(no valgrind, no build): what `vkbench ab --instrument instructions` reports per row."""

from __future__ import annotations

import json

import pytest

from vkbench import ab_counts
from vkbench.ab import ABOptions, ABReport, Side, run_ab
from vkbench.ab_counts import (FEWER, MORE, SAME, Paired, count_row, counts_markdown, memory_row,
                               refuse_uncountable)
from vkbench.errors import UsageError
from vkbench.instruments.diff import add_costs, self_cost_diff
from vkbench.matrix.model import Cell

CELL = "standalone io1 P1 c1 d3 k1000"


def test_paired_differences_give_the_mean_change_and_a_t_interval():
    p = Paired.of([7850.0, 7860.0, 7855.0], [7874.0, 7885.0, 7878.0])
    assert p.delta == pytest.approx(24.0)
    assert p.low < 24 < p.high and p.mde > 0
    # identical differences: a zero-width interval, an MDE of zero
    exact = Paired.of([100.0, 200.0], [110.0, 210.0])
    assert (exact.delta, exact.low, exact.high, exact.mde) == (10.0, 10.0, 10.0, 0.0)
    assert Paired.of([1.0], [2.0]).low is None


def test_a_row_states_the_change_per_op_and_relative_and_names_the_metric():
    row = count_row(CELL, "GET", [7850.0, 7860.0, 7855.0], [7874.0, 7885.0, 7878.0], target=0.002, seeds=[1, 2, 3])
    assert row.metric == "instructions_per_op" and row.rounds == 3 and row.seeds == [1, 2, 3]
    assert row.delta == pytest.approx(24.0) and row.change == pytest.approx(24 / 7855, rel=1e-6)
    assert row.ci_low > 0 and row.verdict == MORE and row.regressed and row.badness == row.change
    assert row.mde < 0.002
    fewer = count_row(CELL, "SET", [9000.0, 9001.0, 9002.0], [8950.0, 8951.5, 8952.0], target=0.002, seeds=[1, 2, 3])
    assert fewer.verdict == FEWER and not fewer.regressed
    same = count_row(CELL, "SET", [9000.0, 9001.0, 9002.0], [9000.5, 9000.5, 9002.2], target=0.002, seeds=[1, 2, 3])
    assert same.verdict == SAME


def test_a_row_whose_mde_misses_the_target_is_inconclusive_with_the_pairs_it_would_need():
    row = count_row(CELL, "GET", [7850.0, 7900.0, 7800.0], [7880.0, 7890.0, 7860.0], target=0.001, seeds=[1, 2, 3])
    assert row.verdict.startswith("inconclusive: MDE") and "seed pairs" in row.verdict
    assert not row.adequate and not row.regressed and row.rounds_for_target > 3
    assert count_row(CELL, "GET", [7850.0, 7900.0, 7800.0], [7880.0, 7890.0, 7860.0], target=None,
                     seeds=[1, 2, 3]).adequate


def test_memory_rows_say_no_change_when_every_pair_is_equal():
    assert memory_row(CELL, [60.5, 60.5, 60.5], [60.5, 60.5, 60.5], 1000).verdict == "no change"
    more = memory_row(CELL, [60.5, 60.0, 60.25], [68.5, 68.0, 68.25], 1000)
    assert more.verdict == "more memory" and more.delta == pytest.approx(8.0) and more.metric == "bytes_per_key"
    assert memory_row(CELL, [60.5, 60.0, 60.25], [52.5, 52.0, 52.25], 1000).verdict == "less memory"


def test_function_diff_of_self_costs_names_the_added_function_first():
    before = add_costs({}, {"call": 4000, "lookupKey": 10000})
    add_costs(before, {"call": 4000})
    after = {"call": 8000, "lookupKey": 10000, "vkbenchTestCost": 2400}
    rows = self_cost_diff(before, after, before_ops=100, after_ops=100)
    assert rows == [{"function": "vkbenchTestCost", "before": 0.0, "after": 24.0, "delta": 24.0}]
    with pytest.raises(ValueError):
        self_cost_diff(before, after, before_ops=0, after_ops=1)


@pytest.mark.parametrize("update, word", [({"io_threads": 4}, "io-threads 4"), ({"topology": "cluster:3"}, "topology"),
                                          ({"tool": "memtier_benchmark"}, "tool memtier_benchmark")])
def test_cells_counts_cannot_measure_are_refused_with_the_reason(update, word):
    cell = Cell.model_validate({"server": "valkey:unstable", "requests": 1000, **update})
    with pytest.raises(UsageError, match=word):
        refuse_uncountable([cell])
    if "io_threads" in update:
        with pytest.raises(UsageError, match="spin-poll"):
            refuse_uncountable([cell])


def test_run_ab_refuses_io_threads_before_resolving_or_building_anything(monkeypatch, tmp_path):
    def no_build(*args, **kwargs):
        raise AssertionError("nothing may be resolved or built")
    import vkbench.ab as ab
    monkeypatch.setattr(ab, "resolve_sides", no_build)
    monkeypatch.setattr(ab, "prepare", no_build)
    cell = Cell.model_validate({"server": "valkey:unstable", "requests": 1000, "io_threads": 2})
    options = ABOptions(base="a", candidate="b", url="file:///nowhere", cells=[cell], instrument="instructions",
                        out_dir=tmp_path / "ab")
    with pytest.raises(UsageError, match="io-threads 2"):
        run_ab(options)


def _report(**kwargs) -> ABReport:
    side = Side("base", "unstable", "a" * 40, "base"), Side("candidate", "pr", "b" * 40, "cand")
    return ABReport("file:///r", *side, [], 0, None, 12.0, "/tmp/x", instrument="instructions", **kwargs)


def test_the_report_of_an_instruction_ab_shows_counts_functions_memory_and_the_wall_clock_caveat():
    row = count_row(CELL, "GET", [7850.0, 7860.0, 7855.0], [7874.0, 7885.0, 7878.0], target=0.002, seeds=[1, 2, 3],
                    functions=[{"function": "vkbenchTestCost|<x>", "before": 0.0, "after": 24.0, "delta": 24.0}])
    report = _report(counts=[row], memory=[memory_row(CELL, [60.5] * 3, [60.5] * 3, 1000)], pairs=3,
                     counts_target_mde=0.002)
    assert report.adequate and report.worst is row and report.compared == [row] and report.mde is None
    text = report.markdown()
    assert "base instr/op" in text and "more instructions" in text and "+24.0" in text
    assert "vkbenchTestCost\\|" in text or "vkbenchTestCost|<x>" not in text.replace("`", "")   # escaped
    assert "Memory per key" in text and "no change" in text
    assert "quiet runner" in text
    data = json.loads(json.dumps(report.to_json()))
    assert data["instrument"] == "instructions" and data["rows"] == []
    assert data["counts"][0]["metric"] == "instructions_per_op" and data["counts"][0]["adequate"] is True
    assert data["memory"][0]["metric"] == "bytes_per_key"
    lines = counts_markdown([row], [], pairs=3, target=0.002)
    assert any("seed pairs" in line for line in lines)


def test_an_instruction_ab_needs_two_pairs():
    with pytest.raises(UsageError, match="2 seed pairs"):
        ab_counts.run_pairs([], "a" * 40, "b" * 40, pairs=1)


def test_the_verdict_is_on_the_code_when_the_string_routines_were_measured():
    """The totals of the bisect's real first step: __strcasecmp_sse2 moved by up to 40 per GET
    between servers, the code by exactly 34: the total's interval is wide, the code's is not."""
    base, cand = [6029.958, 6111.899, 6064.835], [6110.197, 6214.571, 6109.43]
    base_str, cand_str = [161.0, 209.0, 197.0], [207.2, 277.5, 208.5]
    row = count_row(CELL, "GET", base, cand, target=0.005, seeds=[1, 2, 3], base_strings=base_str,
                    candidate_strings=cand_str)
    assert row.compared == "code" and row.verdict == MORE
    code = [(c - cs) - (b - bs) for b, c, bs, cs in zip(base, cand, base_str, cand_str)]
    assert row.delta_code == pytest.approx(sum(code) / 3, abs=1e-3)
    assert row.delta_code_low > 0 and row.delta_low < row.delta_code_low
    assert row.change == pytest.approx(row.delta_code / (sum(base) / 3), rel=1e-4)
    assert row.delta == pytest.approx((sum(cand) - sum(base)) / 3, abs=1e-3)      # the total, kept
    assert count_row(CELL, "GET", base, cand, target=None, seeds=[1, 2, 3]).compared == "total"
