"""Change points on constructed series (seeded noise), through the same path as a history."""

from __future__ import annotations

import numpy as np
import pytest

from vkbench.detect import detect_changes
from vkbench.detect.segmented import detect_segmented


def noisy(levels: list[tuple[float, int]], cv: float, seed: int) -> tuple[list[float], list[list[float]]]:
    """Runs at the given levels with run-to-run noise ``cv``; 3 repetitions around each run."""
    rng = np.random.default_rng(seed)
    values, samples = [], []
    for level, count in levels:
        for _ in range(count):
            run = level * (1 + rng.normal(0, cv))
            reps = sorted(run * (1 + rng.normal(0, cv / 2, 3)))
            samples.append([float(x) for x in reps])
            values.append(float(reps[1]))
    return values, samples


@pytest.mark.parametrize("seed", range(5))
def test_five_percent_step_with_three_percent_noise_is_found(seed):
    values, samples = noisy([(400_000, 40), (380_000, 20)], cv=0.03, seed=seed)
    changes = detect_changes(values, samples, bigger_is_better=True)
    assert len(changes) == 1
    (c,) = changes
    assert abs(c.index - 40) <= 5            # a 1.7-sigma step: the data cannot place it closer
    assert c.direction == "regression"
    assert -0.09 < c.magnitude < -0.02
    assert c.p_value < 0.001
    assert c.before[1] == c.index and c.after[0] == c.index


@pytest.mark.parametrize("seed", range(5))
def test_pure_noise_is_quiet(seed):
    values, samples = noisy([(400_000, 120)], cv=0.03, seed=100 + seed)
    assert detect_changes(values, samples) == []


def test_single_outlier_is_quiet_anywhere():
    values, samples = noisy([(400_000, 60)], cv=0.02, seed=7)
    for where in (20, 45, 58, 59):
        bumped = list(values)
        bumped[where] *= 0.7                         # one disturbed night, -30 %
        assert detect_changes(bumped, samples) == [], where


def test_new_level_must_persist_two_low_nights_at_the_end_are_not_enough():
    values, samples = noisy([(400_000, 40), (300_000, 2)], cv=0.02, seed=8)
    assert detect_changes(values, samples) == []
    values, samples = noisy([(400_000, 40), (300_000, 3)], cv=0.02, seed=8)
    assert [c.index for c in detect_changes(values, samples)] == [40]


def test_improvement_direction():
    values, samples = noisy([(400_000, 30), (460_000, 15)], cv=0.02, seed=9)
    (c,) = detect_changes(values, samples, bigger_is_better=True)
    assert c.direction == "improvement" and c.magnitude > 0.1


def test_latency_direction_smaller_is_better():
    up, _ = noisy([(1.0, 30), (1.12, 15)], cv=0.02, seed=10)
    down, _ = noisy([(1.0, 30), (0.88, 15)], cv=0.02, seed=11)
    assert [c.direction for c in detect_changes(up, bigger_is_better=False)] == ["regression"]
    assert [c.direction for c in detect_changes(down, bigger_is_better=False)] == ["improvement"]


def test_flagged_runs_are_ignored():
    values, samples = noisy([(400_000, 50)], cv=0.02, seed=12)
    valid = [True] * 50
    for i in range(30, 36):                          # six client-bound nights at -40 %
        values[i] *= 0.6
        samples[i] = [x * 0.6 for x in samples[i]]
        valid[i] = False
    assert detect_segmented(values, samples=samples, valid=valid).changes == []
    assert detect_segmented(values, samples=samples).changes != []      # they would alarm


def test_fingerprint_change_is_a_boundary_not_a_regression():
    values, samples = noisy([(400_000, 30), (300_000, 30)], cv=0.02, seed=13)
    fps = ["old-machine"] * 30 + ["new-machine"] * 30
    found = detect_segmented(values, samples=samples, fingerprints=fps)
    assert found.changes == []
    assert found.segments == [(0, 30), (30, 60)]
    # and a real regression inside the new segment is still found, with its own index
    values2, samples2 = noisy([(400_000, 30), (300_000, 25), (270_000, 10)], cv=0.02, seed=14)
    found = detect_segmented(values2, samples=samples2, fingerprints=["a"] * 30 + ["b"] * 35)
    assert [(c.index, c.direction) for c in found.changes] == [(55, "regression")]


def test_reset_baseline_starts_fresh():
    values, samples = noisy([(400_000, 30), (350_000, 20)], cv=0.02, seed=15)
    assert len(detect_segmented(values, samples=samples).changes) == 1
    assert detect_segmented(values, samples=samples, resets=[30]).changes == []


def test_step_then_recovery_gives_two_change_points():
    values, samples = noisy([(400_000, 30), (360_000, 10), (400_000, 10)], cv=0.02, seed=16)
    changes = detect_changes(values, samples)
    assert [(c.index, c.direction) for c in changes] == [(30, "regression"), (40, "improvement")]


def test_short_or_constant_series_do_not_fail():
    assert detect_changes([1.0, 2.0]) == []
    assert detect_changes([5.0] * 30) == []
    (c,) = detect_changes([5.0] * 20 + [4.0] * 10)
    assert c.index == 20 and c.magnitude == pytest.approx(-0.2)
