"""Run-to-run noise of a series, robust to the steps and outliers we are looking for."""

from __future__ import annotations

import numpy as np

# MAD -> standard deviation for normal data
_MAD_TO_SD = 1.4826


def robust_cv(log_values: np.ndarray, floor: float = 0.0) -> float:
    """Run-to-run coefficient of variation from the median absolute first difference.

    On log values a difference is a relative change, so the result is a CV. Differences of
    neighbours are insensitive to level shifts (one step spoils one difference) and the median
    ignores outliers (one outlier spoils two). Divided by sqrt(2): a difference carries the
    noise of two runs."""
    x = np.asarray(log_values, dtype=float)
    if len(x) < 3:
        return floor
    diffs = np.diff(x)
    mad = float(np.median(np.abs(diffs - np.median(diffs))))
    return max(_MAD_TO_SD * mad / np.sqrt(2.0), floor)
