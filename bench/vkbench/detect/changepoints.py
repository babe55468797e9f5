"""Change points in one series (one metric, one environment segment).

Method, in three steps (the reasoning is in docs/detection.md):

1. **Candidates** - ruptures' KernelCPD with the linear kernel (the L2 cost, PELT search, in
   C) on the log values in units of the series' own robust noise, after clipping points far
   from a rolling median. The penalty is ``penalty * log(n)``: BIC-like, scale-free.
2. **Significance** - each candidate is tested on the runs between its neighbouring
   candidates (at most ``window`` each side): a t-test of the run medians (log scale, each
   window winsorized around its own median) with the larger of the series' robust noise and
   the windows' own spread, and, when repetitions are known, Welch's t-test on the
   repetitions of those runs. Both must pass ``alpha``; the reported p-value is the larger.
3. **Magnitude and persistence** - the change of the window medians must be at least
   ``max(min_magnitude, noise_factor * CV)``, there must be ``min_after`` runs at the new
   level (or ``strong_min_after`` with overwhelming evidence), and with few runs after, every
   one of them must be past the midpoint between the two levels: one outlier never alarms.

Candidates that fail are removed weakest first and the rest re-tested with the wider windows
their removal gives (backward elimination), so an over-segmenting search is harmless.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np
import ruptures as rpt
from scipy import stats as st

from .noise import robust_cv
from .params import DetectionParams


@dataclass
class Change:
    index: int                 # first point at the new level (0-based in the input)
    magnitude: float           # relative change of the window medians: -0.08 = 8 % lower
    p_value: float
    p_runs: float
    p_samples: float | None
    before: tuple[int, int]    # [start, end) of the runs the test used
    after: tuple[int, int]
    level_before: float        # window medians, in the input's units
    level_after: float
    direction: str = ""        # "regression" | "improvement" (set by detect_changes)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["before"], data["after"] = list(self.before), list(self.after)
        return data


def detect_changes(
    values: Sequence[float],
    samples: Sequence[Sequence[float] | None] | None = None,
    *,
    bigger_is_better: bool = True,
    params: DetectionParams | None = None,
    cv: float | None = None,
    search_from: int = 0,
    n_before: int = 0,
) -> list[Change]:
    """Accepted change points of one homogeneous series (values > 0, in time order).

    Windowed (``search_from`` > 0, docs/detection.md "Windowed detection"): the candidate search
    runs on the points from ``search_from`` on only, with the penalty of a series of its length
    plus ``n_before`` (the points of the stretch before the window, read or not), and only what
    it finds is tested: the change points before the window are settled (the caller keeps them
    as a previous run accepted them). The window starts in a stable stretch well after them, so
    each change found is tested on the same runs as in a full run."""
    params = params or DetectionParams()
    y_all = np.log(np.asarray(values, dtype=float))
    if len(y_all) < params.min_before + params.strong_min_after:
        return []
    sigma = cv if cv is not None else robust_cv(y_all, params.noise_floor)
    sigma = max(sigma, params.noise_floor)
    # isolated spikes (one disturbed night) are set aside: they can neither create a change
    # nor, inside a window, hide one
    kept = np.flatnonzero(~spikes(y_all, sigma, params.spike_sigmas))
    y = y_all[kept]
    n = len(y)
    if n < params.min_before + params.strong_min_after:
        return []
    use_samples = samples is not None and params.sample_test
    log_samples = _log_samples([samples[i] for i in kept] if use_samples else None, n)

    if search_from > 0:
        start = int(np.searchsorted(kept, search_from))
        candidates = [start + c for c in _candidates(y[start:], sigma, params, n=n - start + n_before)] if n - start >= 2 else []
    else:
        candidates = _candidates(y, sigma, params)
    cps = sorted(candidates)
    while True:
        evaluated = [_evaluate(y, log_samples, cps, k, sigma, params) for k in range(len(cps))]
        # A candidate whose window before is too short (a neighbouring candidate too close: only
        # possible with a one-run minimum after, counted metrics) is judged last: the search can
        # cut an outlier off just before a real step, and it is that weaker neighbour that must go
        # first, which widens the step's window before.
        failing = [(not _blocked(change, params), score, k)
                   for k, (ok, score, change) in enumerate(evaluated) if not ok]
        if not failing:
            break
        *_, worst = max(failing)
        del cps[worst]
    out = []
    for _, _, change in evaluated:
        improved = change.magnitude > 0 if bigger_is_better else change.magnitude < 0
        change.direction = "improvement" if improved else "regression"
        # back to the caller's indices
        change.index = int(kept[change.index])
        change.before = (int(kept[change.before[0]]), int(kept[change.before[1] - 1]) + 1)
        change.after = (int(kept[change.after[0]]), int(kept[change.after[1] - 1]) + 1)
        out.append(change)
    return out


def spikes(y: np.ndarray, sigma: float, k: float) -> np.ndarray:
    """Points that differ from *both* neighbours, in the same direction, by more than k sigma.
    A step never looks like this (its first point agrees with the next one); the last point
    has one neighbour only and is never a spike - the persistence rule covers it."""
    out = np.zeros(len(y), dtype=bool)
    if len(y) < 3 or k <= 0:
        return out
    left = y[1:-1] - y[:-2]
    right = y[1:-1] - y[2:]
    out[1:-1] = (np.sign(left) == np.sign(right)) & (np.minimum(np.abs(left), np.abs(right)) > k * sigma)
    return out


def _candidates(y: np.ndarray, sigma: float, params: DetectionParams, n: int | None = None) -> list[int]:
    """Candidate breakpoints of ``y``; ``n``: the length of the whole series ``y`` is the end of
    (the penalty's, so a window is searched as strictly as the whole). The L2 cost and the
    clipping around a rolling median do not depend on the level subtracted."""
    z = (y - np.median(y)) / sigma
    local = _rolling_median(z, 5)
    z = np.clip(z, local - params.clip_sigmas, local + params.clip_sigmas)
    m = len(z)
    n = m if n is None else n
    algo = rpt.KernelCPD(kernel="linear", min_size=params.strong_min_after).fit(z.reshape(-1, 1))
    breakpoints = algo.predict(pen=params.penalty * math.log(max(n, 2)))
    return [int(b) for b in breakpoints if 0 < b < m]


def _rolling_median(z: np.ndarray, width: int) -> np.ndarray:
    half = width // 2
    padded = np.pad(z, half, mode="edge")
    windows = np.lib.stride_tricks.sliding_window_view(padded, width)
    return np.median(windows, axis=1)


def _evaluate(y, log_samples, cps: list[int], k: int, sigma: float, params: DetectionParams):
    """(accepted, badness score for elimination order, Change)."""
    cp = cps[k]
    lo = cps[k - 1] if k > 0 else 0
    hi = cps[k + 1] if k + 1 < len(cps) else len(y)
    b0, a1 = max(lo, cp - params.window), min(hi, cp + params.window)
    before, after = y[b0:cp], y[cp:a1]
    nb, na = len(before), len(after)
    med_b, med_a = float(np.median(before)), float(np.median(after))
    delta = med_a - med_b
    magnitude = math.expm1(delta)

    p_runs = _run_test(before, after, sigma)
    p_samples = _sample_test(log_samples, b0, cp, a1)
    p_value = max(p_runs, p_samples) if p_samples is not None else p_runs
    change = Change(cp, magnitude, p_value, p_runs, p_samples, (b0, cp), (cp, a1), math.exp(med_b), math.exp(med_a))

    min_effect = params.min_effect(sigma)
    strong = na >= params.strong_min_after and p_value < params.strong_alpha and abs(magnitude) >= params.strong_factor * min_effect
    enough_runs = nb >= params.min_before and (na >= params.min_after or strong)
    persistent = _persistent(after, med_b, delta, min_effect)
    ok = enough_runs and p_value < params.alpha and abs(magnitude) >= min_effect and persistent
    # elimination order: the least significant (relative to alpha) and smallest first
    score = math.log10(max(p_value, 1e-300) / params.alpha) - abs(magnitude) / min_effect
    if na < params.strong_min_after:
        score += 1000.0            # cannot stand at all: remove these first
    return ok, score, change


def _blocked(change: Change, params: DetectionParams) -> bool:
    return change.before[1] - change.before[0] < params.min_before


def _persistent(after: np.ndarray, med_b: float, delta: float, min_effect: float) -> bool:
    """With few runs after, each must be past the midpoint; later, a clear majority."""
    if delta == 0:
        return False
    midpoint = med_b + delta / 2
    beyond = (after - midpoint) * np.sign(delta) > 0
    needed = len(after) if len(after) <= 3 else math.ceil(0.6 * len(after))
    return int(beyond.sum()) >= needed


def _winsorize(x: np.ndarray, sigma: float, k: float = 3.0) -> np.ndarray:
    med = np.median(x)
    return np.clip(x, med - k * sigma, med + k * sigma)


def _run_test(before: np.ndarray, after: np.ndarray, sigma: float) -> float:
    """t-test of the run medians with a pooled noise that is never below the series' robust
    noise: tiny windows that happen to be tight must not look precise."""
    nb, na = len(before), len(after)
    if nb < 1 or na < 1:
        return 1.0
    wb, wa = _winsorize(before, sigma), _winsorize(after, sigma)
    spread = 0.0
    if nb + na > 2:
        ss = float(((wb - wb.mean()) ** 2).sum() + ((wa - wa.mean()) ** 2).sum())
        spread = math.sqrt(ss / (nb + na - 2))
    s = max(sigma, spread)
    t = (wa.mean() - wb.mean()) / (s * math.sqrt(1 / nb + 1 / na))
    df = max(nb + na - 2, 1)
    return float(2 * st.t.sf(abs(t), df))


def _log_samples(samples, n: int) -> "_LogSamples | None":
    if samples is None or len(samples) != n:
        return None
    if not any(v and v > 0 for s in samples for v in (s or [])):
        return None
    return _LogSamples(samples)


class _LogSamples:
    """The log repetitions of each run, taken when a test first reads them: a windowed run
    tests a few windows of a long series and should not convert all of it."""

    def __init__(self, samples):
        self._samples = samples
        self._logs: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self._samples)

    def __getitem__(self, window: slice) -> list[np.ndarray]:
        return [self._log(i) for i in range(*window.indices(len(self._samples)))]

    def _log(self, i: int) -> np.ndarray:
        log = self._logs.get(i)
        if log is None:
            arr = np.asarray([v for v in (self._samples[i] or []) if v and v > 0], dtype=float)
            log = self._logs[i] = np.log(arr) if len(arr) else np.empty(0)
        return log


def _sample_test(log_samples, b0: int, cp: int, a1: int) -> float | None:
    """Welch's t-test on the repetitions of the runs in both windows (None without them)."""
    if log_samples is None:
        return None
    before = np.concatenate(log_samples[b0:cp]) if cp > b0 else np.empty(0)
    after = np.concatenate(log_samples[cp:a1]) if a1 > cp else np.empty(0)
    if len(before) < 2 or len(after) < 2:
        return None
    if np.std(before) == 0 and np.std(after) == 0:
        return 0.0 if before.mean() != after.mean() else 1.0
    return float(st.ttest_ind(after, before, equal_var=False).pvalue)
