"""Unconfirmed candidates: the newest runs of a series moved past the minimum effect, but too few
runs after the move exist for detection's persistence rule (``min_after``) to accept it.

A candidate is not an alarm. The nightly's publish job dispatches a confirmation A/B for it
(the last good build against tonight's, interleaved on the same runner class): a confirmed
candidate becomes an incident the same night, with the A/B's effect and interval; a rejected
one is recorded (:mod:`vkbench.detect.confirmations`) and never alerts. What the persistence
rule waits several nights for, the A/B settles in one: a build difference reproduces on demand,
a noisy night does not.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from .noise import robust_cv
from .params import DetectionParams
from .segmented import segment_bounds


@dataclass
class Candidate:
    index: int              # first run at the new level
    after: int              # runs at the new level (fewer than min_after)
    magnitude: float        # relative change of the newest runs vs the window before (+0.05 = +5 %)
    direction: str          # "regression" | "improvement"
    threshold: float        # the minimum effect it passed

    def to_dict(self) -> dict:
        return asdict(self)


def runs_read(params: DetectionParams) -> int:
    """The most valid runs of the last segment :func:`find_candidate` looks at: the ``window``
    before the newest runs, and those (fewer than ``min_after``)."""
    return params.window + max(params.min_after, 2) - 1


def tail_decides(values: Sequence[float | None], *, valid: Sequence[bool] | None, fingerprints: Sequence[str | None] | None,
                 accepted: Sequence[int], params: DetectionParams) -> bool:
    """Whether the end of a series (``values`` and the rest: its last points, not its start)
    gives :func:`find_candidate` what the whole series would: its last segment starts inside
    it, or holds every run the rule looks at."""
    start, end = segment_bounds(len(values), fingerprints, accepted)[-1]
    if start > 0:
        return True
    usable = sum(1 for i in range(start, end) if values[i] is not None and values[i] > 0 and (valid is None or valid[i]))
    return usable >= runs_read(params)


def find_candidate(
    values: Sequence[float | None],
    *,
    valid: Sequence[bool] | None = None,
    fingerprints: Sequence[str | None] | None = None,
    bigger_is_better: bool = True,
    params: DetectionParams | None = None,
    accepted: Sequence[int] = (),
    regressions_only: bool = True,
) -> Candidate | None:
    """The candidate at the end of the series, if any.

    Looked at: the valid runs since the last fingerprint change or accepted change point. For
    k = 1 .. min_after-1 trailing runs, each must differ from the median of the ``window`` runs
    before them by at least the minimum effect (noise-aware, as detection's), in the same
    direction. An accepted change point at or after those runs means detection already reports
    it: no candidate. Nor is the level before an accepted change the baseline of a new one: the
    nights after a reported drop are at the new level, not a second drop.
    """
    params = params or DetectionParams()
    n = len(values)
    if n == 0:
        return None
    start, end = segment_bounds(n, fingerprints, accepted)[-1]
    idx = [i for i in range(start, end)
           if values[i] is not None and values[i] > 0 and (valid is None or valid[i])]
    if len(idx) < params.min_before + 1:
        return None
    y = np.log(np.asarray([values[i] for i in idx], dtype=float))
    if not bigger_is_better:
        y = -y                                   # goodness: lower is worse
    for k in range(max(params.min_after, 2) - 1, 0, -1):      # the longest run of new-level nights first
        if len(idx) < params.min_before + k:
            break
        before = y[max(0, len(y) - k - params.window): len(y) - k]
        after = y[len(y) - k:]
        sigma = max(robust_cv(before, params.noise_floor), params.noise_floor)
        threshold = params.min_effect(sigma)
        shifts = after - float(np.median(before))
        if not (np.all(shifts <= -math.log1p(threshold)) or np.all(shifts >= math.log1p(threshold))):
            continue
        first = idx[len(idx) - k]
        if any(a >= first for a in accepted):
            return None
        magnitude = math.expm1(float(np.median(after)) - float(np.median(before)))
        direction = "regression" if magnitude < 0 else "improvement"
        if regressions_only and direction != "regression":
            continue
        if not bigger_is_better:
            magnitude = math.expm1(-math.log1p(magnitude))   # back to the metric's own scale
        return Candidate(first, k, magnitude, direction, threshold)
    return None
