"""Windowed detection (issue 23): a series that only grew since the previous detect.json is
searched for new candidates in a recent window only.

Every night every series of the nightly gets a point, so the per-series reuse of
``series_inputs`` keeps nothing there. But a series whose new points were all appended after the
ones detected before cannot have moved its earlier change points (in practice: the method is a
search plus window-limited tests, see docs/detection.md "Windowed detection"). Such a series is
read and its noise, spikes and tests are computed on every point as in a full run, but the
candidate search (the costly part: KernelCPD over the whole series) runs on a window of its
latest points; before the window, the change points the previous run accepted are the
candidates. Anything else (a point inserted in the past, a rewritten older shard, other
annotations, parameters or code, a different segment structure) means a full detection of that
series.

``series_state`` in detect.json records, per series, what its state was computed from:

    {"inputs": digest of (detection code, dimensions, annotations, parameters),
     "points": n, "last": {"timestamp", "run_id"} of the last point,
     "sealed": digest of the shard digests of every month before the last one,
     "last_month": "YYYY-MM", "last_shard": that month's shard digest (sha256, bytes, lines)}
"""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_left
from typing import Sequence

from .params import DetectionParams

#: The window: at least this many of the latest points before the new ones are searched again
#: (in multiples of the test window, ``params.window``): a change that may still be waiting for
#: its persistence rule (``min_after`` runs, at most a window of them) lies inside it, with a
#: stable stretch before it for the search to see the old level.
MIN_WINDOWS = 4
#: No accepted change point within this many test windows (plus a half) of the window's start:
#: the window starts in a stable stretch, and a change kept from before the window has all its
#: ``window`` runs after it before the window begins.
GAP_WINDOWS = 1.5
#: At most this many test windows of old points are searched again; a series that would need
#: more (change points close to each other all the way back) is searched in full.
MAX_WINDOWS = 40


def search_start(m: int, old_m: int, prior: Sequence[int], params: DetectionParams) -> int:
    """Where the candidate search starts in one homogeneous stretch of ``m`` usable points of
    which the first ``old_m`` were detected before, with accepted change points ``prior``
    (positions in the stretch). ``m``: nothing new here, no search; 0: search it all."""
    if old_m >= m:
        return m
    gap = int(params.window * GAP_WINDOWS)
    start = old_m - MIN_WINDOWS * params.window
    while True:
        close = [p for p in prior if start - gap < p < start + gap]
        if not close:
            break
        start = min(close) - gap
    if start < gap or old_m - start > MAX_WINDOWS * params.window:
        return 0
    return start


def tail_points(params: DetectionParams) -> int:
    """How many points before the new ones a bounded read of a grown series starts with: the
    noise span and a search window with the runs its first test looks back on (the detection
    asks for more, :class:`~.segmented.TailTooShort`, when change points push the window back)."""
    return max(params.noise_points, int((MIN_WINDOWS + GAP_WINDOWS + 2) * params.window) + 2)


def local_prior(idx: Sequence[int], prior: Sequence[int]) -> list[int]:
    """Positions in ``idx`` (sorted point indices of one stretch) of the change points ``prior``
    (point indices) that lie in the stretch."""
    if not idx:
        return []
    return [bisect_left(idx, p) for p in prior if idx[0] <= p <= idx[-1]]


def state_key(detection_code: str, entry: dict, entries: list[dict], params: DetectionParams) -> str:
    """What a series' detection depends on besides its points."""
    key = [detection_code, entry.get("dims"), entries, params.to_dict()]
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _sealed(digests: dict, before_month: str) -> str:
    older = {m: d for m, d in sorted(digests.items()) if m < before_month}
    return hashlib.sha256(json.dumps(older, sort_keys=True).encode()).hexdigest()[:32]


def series_state(key: str, entry: dict) -> dict | None:
    """The ``series_state`` record of one series (None: its index entry records no shard
    digests or no last point)."""
    digests = entry.get("shard_digests") or {}
    last_point = entry.get("last_point") or {}
    if not digests or not entry.get("last") or not last_point.get("run_id"):
        return None
    last_month = max(digests)
    return {
        "inputs": key, "points": entry.get("points"),
        "last": {"timestamp": entry["last"], "run_id": last_point["run_id"]},
        "sealed": _sealed(digests, last_month), "last_month": last_month, "last_shard": digests[last_month],
    }


def appended_only(old: dict, new_state: dict, entry: dict, read_prefix) -> bool:
    """Whether the series' shards now are those of ``old`` with points appended: the same
    inputs, every month before the old last one unchanged, the old last month's shard
    unchanged or grown at its end (``read_prefix(month, nbytes)``: its first bytes now), any
    other month newer, and more points, the newest after the old newest."""
    try:
        if old["inputs"] != new_state["inputs"] or not isinstance(old["points"], int):
            return False
        if new_state["points"] <= old["points"] or new_state["last"]["timestamp"] < old["last"]["timestamp"]:
            return False
        month, was = old["last_month"], old["last_shard"]
        digests = entry.get("shard_digests") or {}
        if month not in digests or _sealed(digests, month) != old["sealed"]:
            return False
        now = digests[month]
        if now == was:
            return True
        if now["bytes"] <= was["bytes"]:
            return False
        prefix = read_prefix(month, was["bytes"])
        return prefix is not None and hashlib.sha256(prefix).hexdigest() == was["sha256"]
    except (KeyError, TypeError, AttributeError):
        return False           # an older or damaged record: detect in full
