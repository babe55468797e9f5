"""The A/B's paired statistics and its MDE, on synthetic rounds (no build, no server)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from vkbench.ab import ABReport, Row, Side, paired, pr_ref, rounds_needed, verdict
from vkbench.errors import UsageError


def _rounds(n: int, effect: float, noise: float, seed: int = 1) -> tuple[list[float], list[float]]:
    rng = np.random.default_rng(seed)
    drift = rng.normal(0, 0.10, n)                     # the machine's slow drift, shared by A and B
    base = 100_000 * np.exp(drift + rng.normal(0, noise, n))
    cand = 100_000 * (1 + effect) * np.exp(drift + rng.normal(0, noise, n))
    return base.tolist(), cand.tolist()


def test_pairing_cancels_the_shared_drift():
    base, cand = _rounds(12, -0.05, 0.005)
    change, low, high, mde = paired(base, cand)
    assert low < change < high < 0                       # a 5% slowdown, seen through a 10% drift
    assert change == pytest.approx(-0.05, abs=0.01)
    assert 0 < mde < 0.02
    assert verdict(change, low, high) == "slower"


def test_no_effect_is_no_significant_change_and_mde_shrinks_with_rounds():
    base, cand = _rounds(30, 0.0, 0.02, seed=3)
    few = paired(base[:4], cand[:4])
    many = paired(base, cand)
    assert verdict(*many[:3]) == "no significant change"
    assert many[3] < few[3]


def test_rounds_needed_for_the_target_mde():
    base, cand = _rounds(6, 0.0, 0.02, seed=5)
    sd = float(np.log(np.asarray(cand) / np.asarray(base)).std(ddof=1))
    expected = math.ceil((2.8016 * sd / math.log1p(0.02)) ** 2)
    assert abs(rounds_needed(base, cand, 0.02) - max(6, expected)) <= 1
    assert rounds_needed(base[:1], cand[:1], 0.02) == 1


def test_single_round_has_no_interval():
    change, low, high, mde = paired([100.0], [90.0])
    assert change == pytest.approx(-0.1) and low is None and mde is None
    assert verdict(change, low, high) == "no significant change"


def test_pr_refs_and_markdown_links():
    assert pr_ref("https://github.com/valkey-io/valkey", 7) == "refs/pull/7/head"
    assert pr_ref("https://gitlab.com/o/valkey.git", 7) == "refs/merge-requests/7/head"
    with pytest.raises(UsageError):
        pr_ref("https://github.com/o/r", 0)
    report = ABReport("https://github.com/valkey-io/valkey", Side("base", "unstable", "a" * 40, "x"),
                      Side("candidate", "refs/pull/7/head", "b" * 40, "y"),
                      [Row("standalone io1 P16 c50 d3", "SET", 100.0, 90.0, -0.1, -0.12, -0.08, 0.015, 8, "slower")],
                      8, 0.02, 1.0, "out", ["build configurations differ: malloc"])
    text = report.markdown()
    assert "https://github.com/valkey-io/valkey/commit/" + "b" * 40 in text
    assert "| SET |" in text and "-10.0%" in text and "1.5%" in text and "warning" in text
    plain = ABReport("file:///srv/valkey.git", report.base, report.candidate, report.rows, 8, 0.02, 1.0, "out").markdown()
    assert "](" not in plain.split("\n")[2]               # no guessed link for a local mirror


# -- which samples pair, and which cells stay apart --------------------------------------------

BASE, CAND = "a" * 40, "b" * 40


def _result(commit: str, rounds: dict[int, float], rounds_total: int = 4, **cell) -> dict:
    """A result of one A/B side as run_session returns it: one repetition per round (a failed
    repetition is missing from ``repetitions`` and keeps its index)."""
    from vkbench.matrix.model import Cell

    spec = {"server": f"valkey:{commit}", "requests": 1000, "pipeline": 16, "tests": ["set"],
            "repetitions": rounds_total, **cell}
    return {"subject": {"version": commit}, "dimensions": Cell.model_validate(spec).dimensions(),
            "repetitions": [{"index": i, "records": [{"command": "SET", "rps": rps}]} for i, rps in rounds.items()]}


def test_a_failed_repetition_drops_its_round_on_both_sides():
    """Round 1 of the candidate failed: rounds 0, 2, 3 pair with their own base rounds. Pairing
    the first three of each side instead would compare round 2's candidate with round 1's base."""
    from vkbench.ab import _samples, cell_labels, rows_of

    # A machine drifting by round; the candidate is 10 % slower in every round.
    base = {0: 100.0, 1: 200.0, 2: 300.0, 3: 400.0}
    cand = {0: 90.0, 2: 270.0, 3: 360.0}
    results = [_result(BASE, base), _result(CAND, cand)]
    labels = cell_labels(results)
    (row,) = rows_of(_samples(results, BASE, labels), _samples(results, CAND, labels))
    assert row.rounds == 3
    assert row.change == pytest.approx(-0.10)
    assert row.ci_low == pytest.approx(-0.10) and row.ci_high == pytest.approx(-0.10)


def test_later_rounds_continue_the_numbering():
    from vkbench.ab import _samples, cell_labels

    pilot, more = [_result(BASE, {0: 1.0, 1: 2.0})], [_result(BASE, {0: 3.0}, rounds_total=1)]
    labels = cell_labels(pilot + more)
    samples = _samples(pilot, BASE, labels)
    for key, rounds in _samples(more, BASE, labels, first_round=2).items():
        samples[key].update(rounds)
    assert list(samples.values()) == [{0: 1.0, 1: 2.0, 2: 3.0}]
    assert cell_labels(pilot) == cell_labels(more)      # the repetition count is not part of the cell


@pytest.mark.parametrize("other", [{"tool_args": ["--threads", "2"]}, {"cpu": {"server": "0", "client": "1"}},
                                   {"tool": "memtier_benchmark", "requests": 1000}])
def test_cells_that_differ_beyond_the_short_name_stay_apart(other):
    from vkbench.ab import _samples, cell_labels, rows_of

    results = [_result(BASE, {0: 100.0, 1: 100.0}), _result(CAND, {0: 100.0, 1: 100.0}),
               _result(BASE, {0: 50.0, 1: 50.0}, **other), _result(CAND, {0: 40.0, 1: 40.0}, **other)]
    labels = cell_labels(results)
    rows = rows_of(_samples(results, BASE, labels), _samples(results, CAND, labels))
    assert len(rows) == 2 and len({r.cell for r in rows}) == 2
    assert sorted(round(r.change, 3) for r in rows) == [-0.2, 0.0]
    assert all(r.rounds == 2 for r in rows)


def test_ab_markdown_escapes_what_the_repository_and_caller_wrote():
    hostile = "x](https://evil.example)<img src=x onerror=alert(1)>|`"
    report = ABReport("https://github.com/o/r", Side("base", hostile, "a" * 40, hostile),
                      Side("candidate", "refs/pull/7/head", "b" * 40, "y"),
                      [Row(hostile, hostile, 100.0, 90.0, -0.1, -0.12, -0.08, 0.015, 8, "slower")],
                      8, 0.02, 1.0, "out", [hostile])
    text = report.markdown()
    assert not re.search(r"(?<!\\)\]\(https://evil", text) and not re.search(r"(?<!\\)<img", text)
    assert "| x\\](https://evil.example)\\<img" in text                # the cell, escaped, in its own column
    assert all(line.count("|") - line.count("\\|") == 9 for line in text.splitlines() if line.startswith("| x"))
    # A forge URL that would break out of the link is no link at all.
    sides = Side("base", "unstable", "a" * 40, "x"), report.candidate
    odd = ABReport("https://github.com/o/r)(javascript:x", *sides, [], 8, 0.02, 1.0, "out").markdown()
    assert "](" not in odd and "`aaaaaaaaaa`" in odd
