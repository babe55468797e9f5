"""Percentiles read off a cumulative latency distribution.

Old outputs (redis-benchmark <= 6.0 ``58.50% <= 0 milliseconds``, memtier 1.x
``<=msec``/``percent``) print no percentiles, only a cumulative distribution.
Reading a percentile off it gives the upper bound of the bucket the percentile
falls into: exact to the tool's bucket resolution, never interpolated.
"""

from __future__ import annotations

#: Levels we derive, and the record keys they fill. p99.9 is left out on purpose:
#: these tools print percents with two decimals, too coarse to place 99.9 reliably.
DERIVED_LEVELS = {"p50": 50.0, "p95": 95.0, "p99": 99.0}


def percentiles_from_cdf(points: list[tuple[float, float]]) -> dict[str, float]:
    """``points`` are ``(latency_ms, cumulative_percent)`` in output order.

    Returns the keys of :data:`DERIVED_LEVELS` whose level the distribution reaches;
    an empty dict if the points are not a cumulative distribution (percent or latency decreasing).
    """
    if not points:
        return {}
    for (lat_a, pct_a), (lat_b, pct_b) in zip(points, points[1:]):
        if lat_b < lat_a or pct_b < pct_a:
            return {}
    derived = {}
    for key, level in DERIVED_LEVELS.items():
        # Percents are printed rounded to 2 decimals, so compare with a small tolerance.
        bound = next((lat for lat, pct in points if pct >= level - 1e-9), None)
        if bound is not None:
            derived[key] = bound
    return derived


def derived_warning(what: str, note: str = "") -> str:
    """The warning a record carries when its percentiles come from :func:`percentiles_from_cdf`."""
    detail = f" ({note})" if note else ""
    return (f"p50/p95/p99 derived from {what}: each is the upper bound of the bucket the "
            f"percentile falls in, not a value the tool printed{detail}")
