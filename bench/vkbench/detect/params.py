"""Detection parameters: one place, written into detect.json so a finding can be re-derived.

Defaults were tuned with ``tools/bench_detection.py`` (figures in docs/detection.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

#: Metrics detection looks at by default: throughput and the median and tail latencies.
#: (avg/min/max/p95/p999 are in the history but mostly restate these, or are too noisy.)
DEFAULT_METRICS = ("rps", "p50", "p99")


@dataclass(frozen=True)
class DetectionParams:
    # candidate search (ruptures KernelCPD, linear kernel = L2 cost, PELT search)
    penalty: float = 4.0            # x log(n), on the series in units of its own noise
    clip_sigmas: float = 3.0        # winsorize points this far from a rolling median before the search
    spike_sigmas: float = 4.0       # a point this far from both neighbours (same side) is an outlier
    # significance of each candidate (before vs after, window-limited)
    window: int = 20                # at most this many runs on each side of a candidate
    alpha: float = 0.001            # two-sided p-value a change must beat
    min_before: int = 3             # runs of the old level needed before a change
    min_after: int = 3              # runs of the new level needed (a single outlier never alarms)
    strong_min_after: int = 3       # ...or this many if the evidence is strong (3: off; 2 let two
                                    #    consecutive outliers alarm):
    strong_alpha: float = 1e-6      #    p below this and
    strong_factor: float = 2.0      #    magnitude at least this x the minimum
    # minimum magnitude: max(min_magnitude, noise_factor x robust run-to-run CV)
    min_magnitude: float = 0.02
    noise_factor: float = 1.0
    noise_floor: float = 0.002      # run-to-run CV is never taken below this (identical values)
    metrics: tuple[str, ...] = field(default=DEFAULT_METRICS)

    def min_effect(self, cv: float) -> float:
        return max(self.min_magnitude, self.noise_factor * cv)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["metrics"] = list(self.metrics)
        data["method"] = "ruptures KernelCPD(linear) PELT candidates + window t-test on run medians and Welch test on repetitions"
        return data
