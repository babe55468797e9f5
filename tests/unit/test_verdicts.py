"""vkbench.verdicts: every comparison's verdict words, and the one direction each has."""

from __future__ import annotations

import pytest

from vkbench import verdicts as v
from vkbench.ab import verdict as ab_verdict
from vkbench.ab_counts import Paired, count_verdict, memory_row
from vkbench.stats import compare_samples


@pytest.mark.parametrize(("word", "direction"), [
    ("slower", "regression"), ("faster", "improvement"),
    ("worse", "regression"), ("better", "improvement"),
    ("more instructions", "regression"), ("fewer instructions", "improvement"),
    ("more memory", "regression"), ("less memory", "improvement"),
    ("regression", "regression"), ("improvement", "improvement"),
    ("no significant change", None), ("no change", None), ("inconclusive: MDE 9.0% above the target 2.0%", None),
])
def test_each_word_has_one_direction(word, direction):
    assert v.direction(word) == direction
    assert v.regressed(word) is (direction == "regression")


def test_the_producers_speak_the_vocabulary():
    """A worse candidate is a regression whatever the comparison calls it (stored words unchanged)."""
    assert ab_verdict(-0.1, -0.15, -0.05) == "slower" and v.regressed(ab_verdict(-0.1, -0.15, -0.05))
    assert ab_verdict(0.1, 0.05, 0.15) == "faster"
    latency = compare_samples([1.0, 1.01, 0.99, 1.0], [2.0, 2.02, 1.98, 2.0], bigger_is_better=False)
    assert latency.verdict == "worse" and v.regressed(latency.verdict)
    more = Paired.of([100.0, 101.0, 100.5], [110.0, 111.0, 110.5])
    assert count_verdict(more, 0.001, None, None) == "more instructions" and v.regressed("more instructions")
    assert v.direction(memory_row("c", [52.0, 52.5, 52.25], [60.0, 60.5, 60.25], 1000).verdict) == "regression"
