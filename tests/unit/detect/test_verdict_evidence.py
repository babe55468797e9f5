"""Verdicts only when the evidence reached the target MDE, else "inconclusive" with what would reach
it: ``compare`` (Welch MDE), ``ab`` (paired rounds, bounded extra batches) and bisect. Fixtures and
synthetic samples only; nothing here is timed."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from factory import make_result, write_result

from cli_outcome import vk  # tests/cli_outcome.py
from vkbench import ab
from vkbench.evidence import adequate, inconclusive, is_inconclusive
from vkbench.stats import compare_samples, welch_mde

INCONCLUSIVE = re.compile(r"^inconclusive: MDE (\d+\.\d)% > target (\d+\.\d)%; about (\d+) more ([a-z ]+), "
                          r"a quieter runner, or instruction counts$")


def test_the_wording_names_the_mde_the_target_and_what_would_reach_it():
    assert inconclusive(0.8, 0.02, more=120) == (
        "inconclusive: MDE 80.0% > target 2.0%; about 120 more rounds, a quieter runner, or instruction counts")
    assert inconclusive(None, 0.02).startswith("inconclusive: MDE unknown")
    assert adequate(0.02, 0.02) and not adequate(0.021, 0.02) and not adequate(None, 0.02) and adequate(None, None)
    assert is_inconclusive(inconclusive(0.5, 0.02)) and not is_inconclusive("faster")


# -- compare: Welch's MDE on the repetitions ----------------------------------------------------

def test_welch_mde_matches_its_formula():
    base, cand = np.array([100.0, 102.0, 98.0]), np.array([90.0, 93.0, 87.0])
    vb, vc = base.var(ddof=1) / 3, cand.var(ddof=1) / 3
    df = (vb + vc) ** 2 / (vb ** 2 / 2 + vc ** 2 / 2)
    from scipy import stats as st
    expected = (st.t.ppf(0.975, df) + st.t.ppf(0.8, df)) * math.sqrt(vb + vc) / 100.0
    assert welch_mde(base, cand) == pytest.approx(expected)
    assert welch_mde(base[:1], cand) is None


def test_a_large_change_on_noisy_repetitions_is_inconclusive_not_worse():
    noisy = compare_samples([100, 140, 60], [60, 90, 40], bigger_is_better=True, target_mde=0.02)
    match = INCONCLUSIVE.match(noisy.verdict)
    assert match, noisy.verdict
    assert float(match[1]) == pytest.approx(noisy.mde * 100, abs=0.06) and match[2] == "2.0"
    assert match[4] == "repetitions per side" and int(match[3]) == noisy.repetitions_for_target - 3
    # Without a target (advise's use) the old rule stands; a loose target lets the verdict through.
    assert compare_samples([100, 101, 99], [90, 91, 89], bigger_is_better=True).verdict == "worse"
    assert compare_samples([100, 101, 99], [90, 91, 89], bigger_is_better=True, target_mde=0.05).verdict == "worse"


def _dirs(tmp_path, spread: float, factor: float):
    base, cand = tmp_path / "base", tmp_path / "cand"
    write_result(base, make_result(rps={"SET": 400_000.0}, spread=spread, version="9.0.0"))
    write_result(cand, make_result(rps={"SET": 400_000.0 * factor}, spread=spread, version="9.1.2"))
    return base, cand


def _rps_row(output: str) -> dict:
    (row,) = [r for r in json.loads(output)["rows"] if r["metric"] == "rps"]
    return row


def test_compare_gives_a_verdict_only_at_or_below_the_target_mde(tmp_path):
    tight_base, tight_cand = _dirs(tmp_path / "tight", spread=0.001, factor=0.9)
    code, out = vk("compare", tight_base, tight_cand, "--format", "json", "--metrics", "rps")
    assert code == 0, out
    row = _rps_row(out)
    assert row["verdict"] == "worse" and row["mde"] < 0.02

    noisy_base, noisy_cand = _dirs(tmp_path / "noisy", spread=0.02, factor=0.9)
    code, out = vk("compare", noisy_base, noisy_cand, "--format", "json", "--metrics", "rps")
    row = _rps_row(out)
    assert code == 0 and row["mde"] > 0.02
    assert INCONCLUSIVE.match(row["verdict"]), row["verdict"]

    code, out = vk("compare", noisy_base, noisy_cand, "--format", "json", "--metrics", "rps", "--target-mde", "0.5")
    assert _rps_row(out)["verdict"] == "worse"

    code, out = vk("compare", noisy_base, noisy_cand, "--format", "markdown", "--metrics", "rps")
    assert "| MDE | verdict |" in out and "inconclusive: MDE" in out and "of at most 2.0%" in out

    code, out = vk("compare", noisy_base, noisy_cand, "--target-mde", "3")
    assert code != 0 and "--target-mde 3" in out


# -- ab: paired rounds, bounded extra batches ----------------------------------------------------

def _samples(values: list[float]) -> dict:
    return {("standalone io1", "SET"): dict(enumerate(values))}


def test_an_ab_whose_mde_misses_the_target_is_inconclusive_even_when_its_interval_excludes_zero():
    base = [100.0, 80.0, 120.0, 90.0]
    cand = [170.0, 110.0, 200.0, 150.0]                         # "+57 %", 4 noisy rounds
    (row,) = ab.rows_of(_samples(base), _samples(cand), target=0.02)
    assert row.ci_low > 0 and row.mde > 0.02                     # the interval alone would say "faster"
    match = INCONCLUSIVE.match(row.verdict)
    assert match and match[4] == "rounds" and int(match[3]) == row.rounds_for_target - 4
    assert not row.adequate
    (loose,) = ab.rows_of(_samples(base), _samples(cand), target=1.0)
    assert loose.verdict == "faster" and loose.adequate


def test_an_ab_that_reaches_the_target_keeps_its_verdict():
    base = [100.0, 90.0, 110.0, 95.0, 105.0, 100.0]
    cand = [x * 0.9 * (1 + 0.001 * (-1) ** i) for i, x in enumerate(base)]   # pairing cancels the drift
    (row,) = ab.rows_of(_samples(base), _samples(cand), target=0.02)
    assert row.mde <= 0.02 and row.verdict == "slower"


def test_extra_batches_run_while_undecided_and_never_past_the_cap():
    noisy_b, noisy_c = _samples([100.0, 80.0, 120.0, 90.0]), _samples([170.0, 110.0, 200.0, 150.0])
    assert ab.next_batch(noisy_b, noisy_c, 0.02, done=4, max_rounds=20) == 16      # wants far more: up to the cap
    assert ab.next_batch(noisy_b, noisy_c, 0.02, done=20, max_rounds=20) == 0
    tight = [100.0, 90.0, 110.0, 95.0, 105.0, 100.0]
    tight_c = [x * 0.9 * (1 + 0.001 * (-1) ** i) for i, x in enumerate(tight)]
    assert ab.next_batch(_samples(tight), _samples(tight_c), 0.02, done=6, max_rounds=20) == 0
    assert ab.MAX_BATCHES >= 1


def test_run_ab_stops_after_max_batches_and_reports_inconclusive(monkeypatch, tmp_path):
    """The loop of run_ab with the builds and the servers replaced: noise that never shrinks
    gets at most MAX_BATCHES extra batches, and the report says inconclusive."""
    batches = []
    monkeypatch.setattr(ab, "resolve_sides", lambda url, options: ("a" * 40, "b" * 40))
    monkeypatch.setattr(ab, "prepare", lambda url, commit, ref, label, progress=None: ab.Side(label, ref, commit, "x"))
    monkeypatch.setattr(ab, "template_cells", lambda options: ["cell"])
    monkeypatch.setattr(ab, "_for_side", lambda template, commit: commit)
    monkeypatch.setattr(ab, "cell_labels", lambda results: {})

    def run_rounds(cells, rounds, out_dir, options, progress):
        batches.append(rounds)
        return [rounds]

    def samples(results, commit, labels, first_round=0):
        rng = np.random.default_rng(len(batches) * 7 + (commit == "b" * 40))
        count = results[-1]
        return {("standalone io1", "SET"): {first_round + i: float(100 * np.exp(rng.normal(0, 0.4))) for i in range(count)}}

    monkeypatch.setattr(ab, "_run_rounds", run_rounds)
    monkeypatch.setattr(ab, "_samples", samples)
    monkeypatch.setattr(ab.source_build, "config_differences", lambda a, b: [])
    report = ab.run_ab(ab.ABOptions(base="x", candidate="y", url="file:///nowhere", out_dir=tmp_path / "ab",
                                    min_rounds=4, max_rounds=1000))
    assert batches[0] == 4 and 1 <= len(batches) - 1 <= ab.MAX_BATCHES
    assert report.rounds == sum(batches) <= 1000
    assert not report.adequate and is_inconclusive(report.rows[0].verdict)
    saved = json.loads((tmp_path / "ab" / "ab.json").read_text())
    assert saved["adequate"] is False and saved["rows"][0]["adequate"] is False
    assert "Inconclusive where marked" in (tmp_path / "ab" / "ab.md").read_text()
