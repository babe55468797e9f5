"""Small-sample statistics for benchmark repetitions (scipy does the maths).

Benchmarks here have 3-10 repetitions, so the methods are chosen for small n:

- point estimate: the median (robust to one disturbed repetition);
- interval for one cell: a distribution-free order-statistic interval for the median when
  n >= 6, otherwise Student's t interval of the mean (honestly wide at n = 3);
- two cells: Welch's t-test on the repetitions and Welch's interval for the difference of means,
  expressed relative to the baseline. Mann-Whitney cannot reach p < 0.05 with 3 vs 3 samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as st

from .verdicts import BETTER, NO_SIGNIFICANT_CHANGE, WORSE

CONFIDENCE = 0.95


def summarize(samples: list[float], confidence: float = CONFIDENCE) -> dict:
    """``{"median", "ci_low", "ci_high", "cv", "n", "samples"}`` as stored in result files."""
    xs = np.asarray([float(x) for x in samples], dtype=float)
    n = len(xs)
    if n == 0:
        raise ValueError("no samples")
    median = float(np.median(xs))
    low = high = None
    cv = None
    if n >= 2:
        mean = float(xs.mean())
        sd = float(xs.std(ddof=1))
        cv = sd / mean if mean else None
        if n >= 6:
            low, high = _median_interval(np.sort(xs), confidence)
        else:
            half = float(st.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
            low, high = mean - half, mean + half
    return {
        "median": median,
        "ci_low": low,
        "ci_high": high,
        "cv": cv,
        "n": n,
        "samples": [float(x) for x in xs],
    }


def _median_interval(sorted_xs: np.ndarray, confidence: float) -> tuple[float, float]:
    """Order statistics (j, k) such that P(x_j <= median <= x_k) >= confidence (binomial)."""
    n = len(sorted_xs)
    alpha = 1 - confidence
    j = int(st.binom.ppf(alpha / 2, n, 0.5))
    k = n - j
    j = max(j - 1, 0)             # 0-based lower index
    k = min(k, n - 1)
    return float(sorted_xs[j]), float(sorted_xs[k])


@dataclass
class Comparison:
    base_median: float
    candidate_median: float
    change: float                 # relative change of the medians: +0.05 = +5 %
    ci_low: float | None          # interval of the relative change of the means
    ci_high: float | None
    p_value: float | None
    verdict: str                  # "better" | "worse" | "no significant change" | "inconclusive: ..."
    mde: float | None = None      # smallest relative change these samples detect (Welch, 5 % two-sided, power 80 %)
    repetitions_for_target: int | None = None   # per side, at this noise, for an MDE at the target


POWER = 0.8


def welch_mde(base: np.ndarray, candidate: np.ndarray, alpha: float = 0.05) -> float | None:
    """The smallest change of the mean, relative to the base mean, that Welch's test on these
    samples detects at ``alpha`` two-sided with 80 % power: (t_crit + t_power) x SE / base mean,
    at the Welch-Satterthwaite degrees of freedom. None with fewer than two samples a side."""
    nb, nc = len(base), len(candidate)
    mean = float(base.mean()) if nb else 0.0
    if nb < 2 or nc < 2 or not mean:
        return None
    vb, vc = float(base.var(ddof=1)) / nb, float(candidate.var(ddof=1)) / nc
    se = math.sqrt(vb + vc)
    if se == 0:
        return 0.0
    df = (vb + vc) ** 2 / ((vb ** 2 / (nb - 1) if vb else 0.0) + (vc ** 2 / (nc - 1) if vc else 0.0))
    return float(st.t.ppf(1 - alpha / 2, df) + st.t.ppf(POWER, df)) * se / abs(mean)


def repetitions_for(base: np.ndarray, candidate: np.ndarray, target: float, alpha: float = 0.05) -> int | None:
    """Repetitions per side for an MDE of ``target`` at these samples' noise (normal approximation)."""
    if len(base) < 2 or len(candidate) < 2 or not float(base.mean()):
        return None
    pooled = (float(base.var(ddof=1)) + float(candidate.var(ddof=1))) / float(base.mean()) ** 2
    z = float(st.norm.ppf(1 - alpha / 2) + st.norm.ppf(POWER))
    return max(len(base), len(candidate), math.ceil(z * z * pooled / target ** 2))


def compare_samples(
    base: list[float],
    candidate: list[float],
    *,
    bigger_is_better: bool,
    alpha: float = 0.05,
    min_effect: float = 0.01,
    target_mde: float | None = None,
) -> Comparison:
    """Welch's t-test plus a minimum effect: a 0.3 % change is never "better" however tight the data.
    With ``target_mde``, a verdict also needs the MDE these samples reach to be at most the target,
    else it is "inconclusive: ..." (:mod:`vkbench.evidence`)."""
    from .evidence import adequate, inconclusive

    b = np.asarray(base, dtype=float)
    c = np.asarray(candidate, dtype=float)
    bm, cm = float(np.median(b)), float(np.median(c))
    change = (cm - bm) / bm if bm else 0.0
    p_value = low = high = None
    if len(b) >= 2 and len(c) >= 2:
        if np.std(b) == 0 and np.std(c) == 0:
            p_value = 0.0 if b.mean() != c.mean() else 1.0
        else:
            res = st.ttest_ind(c, b, equal_var=False)
            p_value = float(res.pvalue)
            ci = res.confidence_interval(confidence_level=1 - alpha)
            base_mean = float(b.mean())
            if base_mean:
                low, high = float(ci.low) / base_mean, float(ci.high) / base_mean
    mde = welch_mde(b, c, alpha)
    needed = repetitions_for(b, c, target_mde, alpha) if target_mde else None
    significant = p_value is not None and p_value < alpha and abs(change) >= min_effect
    if not adequate(mde, target_mde):
        more = needed - min(len(b), len(c)) if needed is not None else None
        verdict = inconclusive(mde, target_mde, more=more, unit="repetitions per side")
    elif not significant:
        verdict = NO_SIGNIFICANT_CHANGE
    else:
        improved = change > 0 if bigger_is_better else change < 0
        verdict = BETTER if improved else WORSE
    return Comparison(bm, cm, change, low, high, p_value, verdict, mde, needed)
