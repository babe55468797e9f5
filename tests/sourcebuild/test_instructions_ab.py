"""Instruction-count A/B and bisect on real builds under valgrind: a local clone where the test
adds a commit costing a few tens of instructions per command (conftest.counted_cost_repo, about
0.3-0.5 % of a command at -c 1 -P 1), far below what the wall clock can see here.

Deterministic by design: the injected cost is what callgrind counts in ``vkbenchTestCost`` itself
(its self instructions per operation in the candidate, exact), and the A/B's estimate of the
change in the server's code (``delta_code``: libc's alignment-sensitive string routines left out,
whose counts move with the binary's layout, see ab_counts) must be within 10 % of it. Nothing
here depends on timing: seed pairs, fixed request counts."""

from __future__ import annotations

import pytest

from vkbench.ab import ABOptions, run_ab
from vkbench.bisect import run_bisect
from vkbench.matrix.model import Cell

pytestmark = pytest.mark.sourcebuild

#: Small: 4 windows of 2,000 requests, 1,000 keys, one client, no pipeline (the code's change per
#: operation has an SD of 0.2-0.5 instructions between pairs: 2,000 requests are plenty).
COUNTED = {"server": "valkey:unstable", "requests": 2000, "keyspace": 1000, "pipeline": 1, "clients": 1,
           "repetitions": 1}


def test_instruction_ab_sees_a_small_fixed_cost_and_names_its_function(counted_cost_repo, tmp_path):
    cell = Cell.model_validate({**COUNTED, "tests": ["set", "get"]})
    options = ABOptions(base=counted_cost_repo.good, candidate=counted_cost_repo.culprit, url=counted_cost_repo.url,
                        cells=[cell], out_dir=tmp_path / "ab", instrument="instructions", pairs=3,
                        counts_target_mde=None)
    report = run_ab(options)
    shown = report.markdown()
    assert report.rows == [] and report.instrument == "instructions" and report.pairs == 3
    assert {r.command for r in report.counts} == {"SET", "GET"}
    for row in report.counts:
        assert row.metric == "instructions_per_op" and row.rounds == 3 and row.seeds == [1, 2, 3]
        injected = next(f["after"] for f in row.functions if f["function"] == counted_cost_repo.function)
        assert injected > 0 and row.functions[0]["function"] in (counted_cost_repo.function, "__strcasecmp_sse2")
        assert row.delta_code_low is not None and row.delta_code_low > 0, shown
        assert abs(row.delta_code - injected) <= 0.1 * injected, (row.delta_code, injected, row.functions)
    assert any(row.ci_low is not None and row.ci_low > 0 and row.verdict == "more instructions"
               for row in report.counts), [(r.base_values, r.candidate_values, r.verdict) for r in report.counts]
    assert report.memory and all(m.metric == "bytes_per_key" and m.base > 0 for m in report.memory)
    text = (tmp_path / "ab" / "ab.md").read_text()
    assert "instr/op" in text and counted_cost_repo.function in text and "quiet runner" in text


def test_instruction_bisect_names_the_commit_of_the_small_cost(counted_cost_repo, tmp_path):
    cell = Cell.model_validate({**COUNTED, "tests": ["get"]})
    # 2 pairs per step (t interval with 1 degree of freedom, +-2 instructions here) keep the module short.
    template = ABOptions(base="", candidate="", cells=[cell], trigger="bisect", instrument="instructions", pairs=2,
                         counts_target_mde=None)
    report = run_bisect(counted_cost_repo.url, counted_cost_repo.good, counted_cost_repo.bad, template,
                        tmp_path / "bisect")
    assert report.reproduced and report.metric == "instructions_per_op"
    assert report.culprit == counted_cost_repo.culprit, report.markdown()
    assert report.effect is not None and report.effect > 0
    assert report.range_size == 3 and len(report.steps) <= 3
    assert any(f["function"] == counted_cost_repo.function for f in report.functions)
    text = (tmp_path / "bisect" / "bisect.md").read_text()
    assert counted_cost_repo.culprit[:10] in text and "Culprit" in text and "instructions per operation" in text
