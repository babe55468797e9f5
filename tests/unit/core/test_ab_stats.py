"""The A/B's paired statistics and its MDE, on synthetic rounds (no build, no server)."""

from __future__ import annotations

import math

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
