#!/usr/bin/env python3
"""How small a step of a counted metric (instructions per operation) detection finds on the night
it lands, at a given run-to-run noise (docs/detection.md, "Counted metrics").

Synthetic series, fixed seed: ``--nights`` nights at a level with Gaussian noise of CV ``--cv``,
then one night moved by the step; detection (the count rule, as ``vkbench detect`` applies it) runs
on that prefix: the nightly's view on the first bad night. Per step: the share of ``--series``
placements found as a regression at that night. Then A/A: ``--aa-nights`` nights without a step,
detection on every prefix (every night), false alarms counted.

    .venv/bin/python tools/count_detection.py --cv 0.0002 0.0005 0.001
"""

from __future__ import annotations

import argparse

import numpy as np

from vkbench.detect.params import DetectionParams
from vkbench.detect.segmented import detect_segmented

STEPS = (0.0005, 0.001, 0.0015, 0.002, 0.003, 0.004, 0.005, 0.0075, 0.01)


def first_night_rate(cv: float, step: float, *, series: int, nights: int, params: DetectionParams, seed: int) -> float:
    rng = np.random.default_rng(seed)
    found = 0
    for _ in range(series):
        values = list(10_000.0 * (1 + rng.normal(0, cv, nights))) + [10_000.0 * (1 + step) * (1 + rng.normal(0, cv))]
        changes = detect_segmented(values, bigger_is_better=False, params=params).changes
        found += any(c.index == nights and c.direction == "regression" for c in changes)
    return found / series


def aa_false_alarms(cv: float, *, series: int, nights: int, params: DetectionParams, seed: int) -> tuple[int, int]:
    rng = np.random.default_rng(seed + 1)
    alarms = scored = 0
    for _ in range(series):
        values = list(10_000.0 * (1 + rng.normal(0, cv, nights)))
        reported: set[int] = set()
        for n in range(params.min_before + 1, nights + 1):
            scored += 1
            for c in detect_segmented(values[:n], bigger_is_better=False, params=params).changes:
                if c.index not in reported:
                    reported.add(c.index)
                    alarms += 1
    return alarms, scored


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cv", type=float, nargs="+", default=[0.0002, 0.0005, 0.001])
    ap.add_argument("--series", type=int, default=100, help="placements per (cv, step)")
    ap.add_argument("--nights", type=int, default=20, help="nights before the step")
    ap.add_argument("--aa-series", type=int, default=50)
    ap.add_argument("--aa-nights", type=int, default=30)
    ap.add_argument("--seed", type=int, default=20261128)
    args = ap.parse_args()
    params = DetectionParams().for_metric("instructions_per_op")
    print(f"count rule: min effect max({params.min_magnitude:.2%}, {params.noise_factor:g} x CV), "
          f"{params.min_after} night after, alpha {params.alpha}")
    print("| CV | min effect | " + " | ".join(f"{s:.2%}" for s in STEPS) + " | smallest step found >= 95 % | A/A false alarms |")
    print("|---|---|" + "---|" * len(STEPS) + "---|---|")
    for cv in args.cv:
        rates = [first_night_rate(cv, s, series=args.series, nights=args.nights, params=params, seed=args.seed) for s in STEPS]
        smallest = next((f"{s:.2%}" for s, r in zip(STEPS, rates) if r >= 0.95), "-")
        alarms, scored = aa_false_alarms(cv, series=args.aa_series, nights=args.aa_nights, params=params, seed=args.seed)
        print(f"| {cv:.2%} | {params.min_effect(cv):.2%} | " + " | ".join(f"{r:.2f}" for r in rates)
              + f" | {smallest} | {alarms} in {scored} nights |")


if __name__ == "__main__":
    main()
