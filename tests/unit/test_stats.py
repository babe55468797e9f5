import pytest

from vkbench.stats import compare_samples, summarize


def test_summarize_small_sample_uses_t_interval_around_the_mean():
    s = summarize([100, 110, 105])
    assert s["median"] == 105 and s["n"] == 3
    assert s["ci_low"] < 100 < 110 < s["ci_high"]
    assert s["cv"] == pytest.approx(0.0476, abs=1e-3)


def test_summarize_larger_sample_uses_order_statistics():
    s = summarize([1, 2, 3, 4, 5, 6, 7, 8, 9])
    assert s["median"] == 5 and s["ci_low"] in (1, 2, 3) and s["ci_high"] in (7, 8, 9)


def test_single_sample_has_no_interval():
    s = summarize([42])
    assert s["ci_low"] is None and s["cv"] is None


def test_compare_detects_a_clear_regression_and_direction():
    worse = compare_samples([100, 101, 99], [90, 91, 89], bigger_is_better=True)
    assert worse.verdict == "worse" and worse.change == pytest.approx(-0.10)
    assert worse.ci_low < -0.10 < worse.ci_high < 0
    better_latency = compare_samples([1.0, 1.01, 0.99], [0.9, 0.91, 0.89], bigger_is_better=False)
    assert better_latency.verdict == "better"


def test_compare_stays_quiet_on_noise_and_on_tiny_effects():
    assert compare_samples([100, 120, 80], [95, 118, 83], bigger_is_better=True).verdict == "no significant change"
    assert compare_samples([100.0, 100.1, 99.9], [100.5, 100.6, 100.4], bigger_is_better=True, min_effect=0.02).verdict == "no significant change"
