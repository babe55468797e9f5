"""One series with its real-world complications: invalid runs, environment segments and
reset-baseline annotations. Indices in and out refer to the full point list, so a finding
can name the run it rests on."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .changepoints import Change, detect_changes
from .params import DetectionParams
from .windowed import local_prior, search_start

_MAD_TO_SD = 1.4826


@dataclass
class SeriesDetection:
    changes: list[Change]
    cv: float
    # [start, end) ranges of the full list that were analysed independently
    segments: list[tuple[int, int]] = field(default_factory=list)


def segment_bounds(n: int, fingerprints: Sequence[str | None] | None, resets: Sequence[int] = ()) -> list[tuple[int, int]]:
    """Split [0, n) wherever the fingerprint changes or a reset-baseline starts."""
    starts = {0}
    if fingerprints is not None:
        starts.update(i for i in range(1, n) if fingerprints[i] != fingerprints[i - 1])
    starts.update(i for i in resets if 0 < i < n)
    ordered = sorted(starts)
    return [(s, e) for s, e in zip(ordered, ordered[1:] + [n]) if e > s]


def pooled_cv(log_segments: list[np.ndarray], floor: float) -> float:
    """Robust run-to-run CV over all segments, never differencing across a boundary (an
    environment change is not noise)."""
    diffs = [np.diff(seg) for seg in log_segments if len(seg) >= 2]
    if not diffs:
        return floor
    d = np.concatenate(diffs)
    if len(d) < 2:
        return floor
    mad = float(np.median(np.abs(d - np.median(d))))
    return max(_MAD_TO_SD * mad / np.sqrt(2.0), floor)


def detect_segmented(
    values: Sequence[float | None],
    *,
    samples: Sequence[Sequence[float] | None] | None = None,
    valid: Sequence[bool] | None = None,
    fingerprints: Sequence[str | None] | None = None,
    resets: Sequence[int] = (),
    bigger_is_better: bool = True,
    params: DetectionParams | None = None,
    prior: Sequence[int] = (),
    detected: int | None = None,
) -> SeriesDetection:
    """``detected``: windowed (detect/windowed.py) - the first ``detected`` points were detected
    before, with the accepted change points ``prior`` (indices); the candidate search covers a
    window of the latest points of each stretch only. None: a full detection."""
    params = params or DetectionParams()
    n = len(values)
    bounds = segment_bounds(n, fingerprints, resets)
    usable = [
        i for i in range(n)
        if values[i] is not None and values[i] > 0 and (valid is None or valid[i])
    ]
    usable_set = set(usable)
    pieces = []
    for start, end in bounds:
        idx = [i for i in range(start, end) if i in usable_set]
        pieces.append(idx)
    logs = [np.log(np.asarray([values[i] for i in idx], dtype=float)) for idx in pieces]
    cv = pooled_cv(logs, params.noise_floor)
    changes: list[Change] = []
    for idx in pieces:
        if len(idx) < params.min_before + params.strong_min_after:
            continue
        seg_values = [values[i] for i in idx]
        seg_samples = [samples[i] for i in idx] if samples is not None else None
        window = {}
        if detected is not None:
            local = local_prior(idx, prior)
            start = search_start(len(idx), bisect_left(idx, detected), local, params)
            if start > 0:
                window = {"prior": local, "search_from": start}
        found = detect_changes(seg_values, seg_samples, bigger_is_better=bigger_is_better, params=params, cv=cv,
                               **window)
        for change in found:
            change.index = idx[change.index]
            change.before = (idx[change.before[0]], idx[change.before[1] - 1] + 1)
            change.after = (idx[change.after[0]], idx[change.after[1] - 1] + 1)
            changes.append(change)
    return SeriesDetection(changes, cv, bounds)
