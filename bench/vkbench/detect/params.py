"""Detection parameters: one place, written into detect.json so a finding can be re-derived.

Defaults were tuned with ``tools/bench_detection.py`` (figures in docs/detection.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from ..history.series import COUNT_METRICS, UNDETECTED_METRICS

#: Metrics detection looks at by default: throughput and the median and tail latencies, and the
#: counted metrics (instructions per operation, bytes per key: docs/instructions.md) where a
#: series has them. (avg/min/max/p95/p999 are in the history but mostly restate these, or are
#: too noisy.) ``instructions_per_op_total`` is not detected on: ``instructions_per_op`` is the
#: code count, and the total only adds the string routines' layout noise (up to 1 % CV per GET
#: across fresh servers), which would raise its minimum effect (5 x its CV) far above the 0.3 %
#: the code count sees, and every real change of the code shows in the code count anyway.
DETECTED_COUNT_METRICS = tuple(m for m in COUNT_METRICS if m not in UNDETECTED_METRICS)
DEFAULT_METRICS = ("rps", "p50", "p99") + DETECTED_COUNT_METRICS


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
    noise_points: int = 200         # ...and is estimated from the series' latest this many usable runs
                                    #    (about seven months of nights): the noise a change is judged
                                    #    against is today's, and a night reads a bounded tail
    sample_test: bool = True        # Welch's test on the repetitions must pass too
    metrics: tuple[str, ...] = field(default=DEFAULT_METRICS)
    # Counted metrics (instructions per op, bytes per key) are nearly deterministic: their
    # run-to-run CV is 0.01-0.1 % where wall clock has 3-15 %. The 2 % floor and the three nights
    # of persistence that protect a timed series would hide exactly the 0.3 % steps counts exist
    # to see, so these metrics get their own rule (docs/detection.md, "Counted metrics"):
    count_metrics: tuple[str, ...] = field(default=DETECTED_COUNT_METRICS)
    count_min_magnitude: float = 0.001   # 0.1 %: the method's precision (CV over windows of one
                                         #   server 0.07-0.15 %, docs/instructions.md); never below
    count_noise_factor: float = 5.0      # minimum change = max(0.1 %, 5 x the series' own CV)
    count_noise_floor: float = 0.0001    # a count series' CV is never taken below 0.01 %
    count_min_after: int = 1             # one night at the new level is enough: the first night

    def min_effect(self, cv: float) -> float:
        return max(self.min_magnitude, self.noise_factor * cv)

    def is_count(self, metric: str) -> bool:
        return metric in self.count_metrics

    def for_metric(self, metric: str) -> "DetectionParams":
        """The parameters that apply to one metric: the count rule for a counted metric.

        Counted metrics need no repetition test: their per-run samples are the per-seed values of
        fresh servers, the same seeds every night, so their spread is the seeds' effect, not noise
        between nights."""
        if not self.is_count(metric):
            return self
        return replace(self, min_magnitude=self.count_min_magnitude, noise_factor=self.count_noise_factor,
                       noise_floor=self.count_noise_floor, min_after=self.count_min_after,
                       strong_min_after=min(self.strong_min_after, self.count_min_after), sample_test=False)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["metrics"] = list(self.metrics)
        data["count_metrics"] = list(self.count_metrics)
        data["method"] = "ruptures KernelCPD(linear) PELT candidates + window t-test on run medians and Welch test on repetitions"
        return data
