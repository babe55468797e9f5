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
    #: windowed: the change points accepted before this index are settled (kept as the previous
    #: run recorded them, not searched or tested again); 0 for a full detection
    settled_before: int = 0


class TailTooShort(Exception):
    """A windowed detection handed only the latest points of a series needs earlier ones: its
    noise span or its search window reaches before them (the caller reads more)."""


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
    head: int | None = None,
) -> SeriesDetection:
    """``detected``: windowed (detect/windowed.py) - the first ``detected`` points were detected
    before, with the accepted change points ``prior`` (indices); the candidate search covers a
    window of the latest points of each stretch that got new points, and the change points
    before that window are settled (``settled_before``). None: a full detection.

    ``head``: the values are only the series' latest points (a bounded read), and the first
    stretch has ``head`` more points before them. Raises :class:`TailTooShort` when the result
    would need earlier points: fewer than ``noise_points`` usable ones, or a search window that
    does not start well inside the points given. None: the values are the whole series.

    The noise (the CV every threshold is in units of) is pooled over the latest
    ``params.noise_points`` usable points: a full run and a bounded windowed one see the same."""
    params = params or DetectionParams()
    n = len(values)
    bounds = segment_bounds(n, fingerprints, resets)
    usable = [
        i for i in range(n)
        if values[i] is not None and values[i] > 0 and (valid is None or valid[i])
    ]
    if head is not None and len(usable) < params.noise_points:
        raise TailTooShort(f"{len(usable)} usable points, the noise needs {params.noise_points}")
    usable_set = set(usable)
    recent = set(usable[-params.noise_points:]) if params.noise_points > 0 else usable_set
    pieces = []
    for start, end in bounds:
        idx = [i for i in range(start, end) if i in usable_set]
        pieces.append(idx)
    logs = [np.log(np.asarray([values[i] for i in idx if i in recent], dtype=float)) for idx in pieces]
    cv = pooled_cv(logs, params.noise_floor)
    changes: list[Change] = []
    settled_before = 0 if detected is None else n
    for k, ((start, _end), idx) in enumerate(zip(bounds, pieces)):
        window = {}
        if detected is not None:
            old_m = bisect_left(idx, detected)
            if old_m >= len(idx):
                continue          # no new point in this stretch: its change points are settled
            truncated = head is not None and k == 0 and head > 0
            first = search_start(len(idx), old_m, local_prior(idx, prior), params)
            # the tests of a change found at the window's start look back ``window`` kept points
            # (more when spikes are set aside): they and their neighbours must all be given
            if truncated and (first == 0 or first < 2 * params.window + 2):
                raise TailTooShort(f"the search window of the stretch at {start} starts before the points given")
            if first > 0:
                before = idx[first] - start + (head if truncated else 0)
                window = {"search_from": first, "n_before": before}
                settled_before = min(settled_before, idx[first])
            else:
                settled_before = min(settled_before, start)
        if len(idx) < params.min_before + params.strong_min_after:
            continue
        seg_values = [values[i] for i in idx]
        seg_samples = [samples[i] for i in idx] if samples is not None else None
        found = detect_changes(seg_values, seg_samples, bigger_is_better=bigger_is_better, params=params, cv=cv,
                               **window)
        for change in found:
            change.index = idx[change.index]
            change.before = (idx[change.before[0]], idx[change.before[1] - 1] + 1)
            change.after = (idx[change.after[0]], idx[change.after[1] - 1] + 1)
            changes.append(change)
    return SeriesDetection(changes, cv, bounds, settled_before)
