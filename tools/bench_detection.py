#!/usr/bin/env python3
"""Score vkbench's change-point detection against the rules other projects use.

Generates realistic nightly series with a fixed seed (run-to-run noise CV 1-5 %, outliers,
steps of -2..-20 % and +5..+20 %, slow drifts, environment (fingerprint) changes, flagged
runs), then replays each series night by night - detection on every prefix, as the nightly
workflow sees it - and scores the alarms:

- an *alarm* is a regression reported for a location (vkbench: the change point it names,
  the first time it is reported; rules: the point that fires, consecutive firings merged);
- a *true positive* lies within +-3 points of a true regression step (each step counts once);
- anything else is a *false alarm* - including alarms at environment changes (the other tools
  have no notion of them) and at outliers and flagged runs. Alarms inside a slow drift are
  neither (counted separately): whether a 5 %-over-40-nights drift should alarm is a choice;
- *delay*: nights from the first bad point until the alarm, counting the first bad night as 1
  (1 = reported the night the regression landed: 0 extra nights);
- ``vkbench+AB``: vkbench with same-night confirmation (``vkbench_confirmed``): each night's
  unconfirmed candidate gets a simulated confirmation A/B at a 2 % MDE; ``A/B/1k`` counts the
  A/Bs dispatched per 1,000 nights of one series.

The other tools see only the valid runs (kinder to them than reality; vkbench does this itself).

Usage: .venv/bin/python tools/bench_detection.py [--series 40] [--length 400] [--cv 0.01 0.03 0.05]
       [--every 1] [--jobs 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from vkbench.detect.params import DetectionParams  # noqa: E402
from vkbench.detect.segmented import detect_segmented  # noqa: E402

TOLERANCE = 3       # points between a reported location and the true change
WARMUP = 15         # nights before scoring starts (no tool alarms on an empty history)


@dataclass
class Truth:
    index: int
    magnitude: float          # on the "goodness" scale: negative = regression
    kind: str                 # step | drift | fingerprint


@dataclass
class Series:
    values: np.ndarray
    samples: list[list[float]]
    valid: list[bool]
    fingerprints: list[str]
    bigger_is_better: bool
    cv: float
    truths: list[Truth] = field(default_factory=list)
    drift_zones: list[tuple[int, int]] = field(default_factory=list)
    code_level: np.ndarray | None = None      # the level the code alone sets (steps only): what an A/B sees


def generate(rng: np.random.Generator, length: int, cv: float, bigger_is_better: bool) -> Series:
    """Level on the goodness scale (1.0 = baseline, lower = worse); latency = 1/level."""
    level = np.ones(length)
    code_level = np.ones(length)
    truths: list[Truth] = []
    drifts: list[tuple[int, int]] = []
    fps = ["fp0"] * length
    pos = int(rng.integers(25, 45))
    fp_count = 0
    while pos < length - 25:
        kind = rng.choice(["regression", "improvement", "drift", "fingerprint", "none"], p=[0.4, 0.2, 0.1, 0.1, 0.2])
        if kind == "regression":
            mag = -float(rng.choice([0.02, 0.03, 0.05, 0.08, 0.10, 0.15, 0.20]))
            level[pos:] *= 1 + mag
            code_level[pos:] *= 1 + mag
            truths.append(Truth(pos, mag, "step"))
        elif kind == "improvement":
            mag = float(rng.choice([0.05, 0.08, 0.10, 0.15, 0.20]))
            level[pos:] *= 1 + mag
            code_level[pos:] *= 1 + mag
            truths.append(Truth(pos, mag, "step"))
        elif kind == "drift":
            span = int(rng.integers(30, 60))
            total = float(rng.choice([-0.06, -0.04, 0.04]))
            end = min(pos + span, length)
            ramp = np.ones(length)
            ramp[pos:end] = 1 + total * (np.arange(end - pos) + 1) / span
            ramp[end:] = 1 + total * (end - pos) / span
            level *= ramp
            drifts.append((pos, end + 5))
            truths.append(Truth(pos, total, "drift"))
        elif kind == "fingerprint":
            fp_count += 1
            level[pos:] *= 1 + float(rng.uniform(-0.25, 0.25))
            for i in range(pos, length):
                fps[i] = f"fp{fp_count}"
            truths.append(Truth(pos, 0.0, "fingerprint"))
        pos += int(rng.integers(35, 70))
    run_level = level * (1 + rng.normal(0, cv, length))
    valid = [True] * length
    for i in range(length):
        u = rng.random()
        if u < 0.01:                     # outlier: a noisy neighbour, one night
            run_level[i] *= 1 - rng.uniform(0.10, 0.35)
        elif u < 0.013:
            run_level[i] *= 1 + rng.uniform(0.08, 0.2)
        elif u < 0.033:                  # flagged run (client-bound, throttled): excluded by vkbench
            run_level[i] *= 1 - rng.uniform(0.2, 0.5)
            valid[i] = False
    samples = []
    values = np.empty(length)
    for i in range(length):
        reps = run_level[i] * (1 + rng.normal(0, cv / 2, 3))
        reps = np.abs(reps)
        if not bigger_is_better:
            reps = 1.0 / reps            # latency
        samples.append([float(v) for v in reps])
        values[i] = float(np.median(reps))
    return Series(values, samples, valid, fps, bigger_is_better, cv, truths, drifts, code_level)


# -- detectors: each returns [(location, detected_at)] for regressions, on the prefix [0, t] --

def vkbench_online(series: Series, every: int, params: DetectionParams) -> list[tuple[int, int]]:
    alarms: dict[int, int] = {}
    n = len(series.values)
    for t in range(WARMUP, n, every):
        end = t + 1
        found = detect_segmented(
            series.values[:end], samples=series.samples[:end], valid=series.valid[:end],
            fingerprints=series.fingerprints[:end], bigger_is_better=series.bigger_is_better, params=params,
        )
        for ch in found.changes:
            if ch.direction != "regression":
                continue
            if any(abs(ch.index - loc) <= TOLERANCE for loc in alarms):
                continue
            alarms[ch.index] = t
    return sorted(alarms.items())


def vkbench_confirmed(series: Series, every: int, params: DetectionParams, rng: np.random.Generator,
                      mde: float = 0.02) -> tuple[list[tuple[int, int]], int]:
    """vkbench with same-night confirmation: detection as above, plus, each night, the
    unconfirmed candidate at the end of the series (find_candidate) gets a confirmation A/B of
    the last good build against tonight's. The A/B is simulated from the code's own level
    change (steps only: an outlier, a drift or a noisy night does not reproduce in an A/B) plus
    the A/B's noise, at the given MDE (two-sided 5 %, power 80 %): confirmed when its 95 %
    interval lies below zero and the change is at least min_magnitude. A confirmed candidate
    alarms that night; a rejected one never alarms. Returns (alarms, A/Bs dispatched)."""
    from vkbench.detect.candidates import find_candidate

    se = mde / 2.8016
    alarms: dict[int, int] = {}
    rejected: list[int] = []
    dispatched = 0
    n = len(series.values)
    code = series.code_level if series.code_level is not None else np.ones(n)
    for t in range(WARMUP, n, every):
        end = t + 1
        found = detect_segmented(
            series.values[:end], samples=series.samples[:end], valid=series.valid[:end],
            fingerprints=series.fingerprints[:end], bigger_is_better=series.bigger_is_better, params=params,
        )
        for ch in found.changes:
            if ch.direction == "regression" and not any(abs(ch.index - loc) <= TOLERANCE for loc in alarms):
                alarms[ch.index] = t
        cand = find_candidate(series.values[:end], valid=series.valid[:end], fingerprints=series.fingerprints[:end],
                              bigger_is_better=series.bigger_is_better, params=params,
                              accepted=[ch.index for ch in found.changes])
        if cand is None or any(abs(cand.index - loc) <= TOLERANCE for loc in [*alarms, *rejected]):
            continue
        good = max((i for i in range(cand.index) if series.valid[i]), default=None)
        if good is None:
            continue
        dispatched += 1
        measured = code[cand.index] / code[good] - 1 + float(rng.normal(0, se))
        if measured + 1.96 * se < 0 and abs(measured) >= params.min_magnitude:
            alarms[cand.index] = t
        else:
            rejected.append(cand.index)
    return sorted(alarms.items()), dispatched


def _badness(series: Series, idx: list[int]) -> np.ndarray:
    """Values on a scale where bigger is better."""
    v = series.values[idx]
    return v if series.bigger_is_better else 1.0 / v


def rule_gab(series: Series, threshold: float) -> list[tuple[int, int]]:
    """github-action-benchmark: alert when the ratio to the previous result, in the bad
    direction, exceeds alert-threshold (default 200 %)."""
    idx = [i for i in range(len(series.values)) if series.valid[i]]
    good = _badness(series, idx)
    fired = [idx[j] for j in range(1, len(idx)) if idx[j] >= WARMUP and good[j - 1] / good[j] > threshold]
    return _merge(fired, idx)


def rule_valkey_perf(series: Series) -> list[tuple[int, int]]:
    """valkey-perf-benchmark style: last two runs, non-overlapping 95 % CIs and >= 5 %."""
    from vkbench.stats import summarize

    idx = [i for i in range(len(series.values)) if series.valid[i]]
    fired = []
    for j in range(1, len(idx)):
        if idx[j] < WARMUP:
            continue
        a = summarize(series.samples[idx[j - 1]])
        b = summarize(series.samples[idx[j]])
        change = (b["median"] - a["median"]) / a["median"]
        bad = change < -0.05 if series.bigger_is_better else change > 0.05
        disjoint = b["ci_high"] < a["ci_low"] or b["ci_low"] > a["ci_high"]
        if bad and disjoint:
            fired.append(idx[j])
    return _merge(fired, idx)


def rule_redis_spec(series: Series) -> list[tuple[int, int]]:
    """redis-benchmarks-specification style: last point vs the median of the previous 7, >= 5 %."""
    idx = [i for i in range(len(series.values)) if series.valid[i]]
    good = _badness(series, idx)
    fired = []
    for j in range(7, len(idx)):
        if idx[j] < WARMUP:
            continue
        ref = float(np.median(good[j - 7:j]))
        if (good[j] - ref) / ref <= -0.05:
            fired.append(idx[j])
    return _merge(fired, idx)


def _merge(fired: list[int], idx: list[int]) -> list[tuple[int, int]]:
    """Consecutive firings (in valid-run order) are one alarm, located at the first."""
    pos = {i: k for k, i in enumerate(idx)}
    out: list[tuple[int, int]] = []
    last_k = -10
    for i in fired:
        k = pos[i]
        if k != last_k + 1:
            out.append((i, i))
        last_k = k
    return out


# -- scoring -------------------------------------------------------------------------------------

def score(series: Series, alarms: list[tuple[int, int]]) -> dict:
    steps = [t for t in series.truths if t.kind == "step" and t.magnitude < 0 and t.index >= WARMUP]
    detected: dict[int, int] = {}
    false = drift = 0
    for loc, at in alarms:
        match = [s for s in steps if abs(loc - s.index) <= TOLERANCE and s.index not in detected]
        if match:
            s = min(match, key=lambda s: abs(loc - s.index))
            detected[s.index] = at - s.index + 1
        elif any(abs(loc - s.index) <= TOLERANCE for s in steps):
            continue            # a second alarm for an already detected step: not counted twice
        elif any(a <= loc <= b for a, b in series.drift_zones):
            drift += 1
        else:
            false += 1
    return {
        "steps": [(s.magnitude, s.index in detected, detected.get(s.index)) for s in steps],
        "tp": len(detected), "false": false, "drift": drift, "points": len(series.values) - WARMUP,
    }


def _job(args):
    seed, length, cv, bigger, every, params_dict = args
    rng = np.random.default_rng(seed)
    series = generate(rng, length, cv, bigger)
    params = DetectionParams(**params_dict)
    confirmed, dispatched = vkbench_confirmed(series, every, params, np.random.default_rng(seed + 7))
    results = {
        "vkbench": score(series, vkbench_online(series, every, params)),
        "vkbench+AB": {**score(series, confirmed), "ab_runs": dispatched},
        "gab-200%": score(series, rule_gab(series, 2.0)),
        "gab-105%": score(series, rule_gab(series, 1.05)),
        "valkey-perf": score(series, rule_valkey_perf(series)),
        "redis-spec": score(series, rule_redis_spec(series)),
    }
    return cv, results


def summarize(per_cv: dict[float, dict[str, list[dict]]]) -> dict:
    table = {}
    for cv, tools in per_cv.items():
        for tool, scores in tools.items():
            tp = sum(s["tp"] for s in scores)
            false = sum(s["false"] for s in scores)
            points = sum(s["points"] for s in scores)
            steps = [st for s in scores for st in s["steps"]]
            big = [st for st in steps if st[0] <= -0.05]
            precision = tp / (tp + false) if tp + false else 0.0
            recall = tp / len(steps) if steps else 0.0
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
            delays = [st[2] for st in big if st[1]]
            table[(cv, tool)] = {
                "precision": precision, "recall": recall, "f1": f1,
                "recall_ge5": sum(1 for st in big if st[1]) / len(big) if big else 0.0,
                "recall_2_3": (lambda sm: sum(1 for st in sm if st[1]) / len(sm) if sm else 0.0)([st for st in steps if st[0] > -0.05]),
                "false_per_1000": 1000 * false / points if points else 0.0,
                "delay_median": float(np.median(delays)) if delays else math.nan,
                "delay_p90": float(np.percentile(delays, 90)) if delays else math.nan,
                "steps": len(steps), "steps_ge5": len(big), "points": points,
                "drift_alarms": sum(s["drift"] for s in scores),
                "ab_per_1000": 1000 * sum(s.get("ab_runs", 0) for s in scores) / points if points else 0.0,
            }
    return table


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", type=int, default=40, help="series per noise level (half rps, half latency)")
    ap.add_argument("--length", type=int, default=400, help="nights per series")
    ap.add_argument("--cv", type=float, nargs="+", default=[0.01, 0.03, 0.05])
    ap.add_argument("--every", type=int, default=1, help="run detection on every k-th prefix")
    ap.add_argument("--jobs", type=int, default=mp.cpu_count())
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--param", action="append", default=[], help="override a DetectionParams field: name=value")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    overrides = {}
    for item in args.param:
        name, value = item.split("=", 1)
        overrides[name] = type(getattr(DetectionParams(), name))(value)
    jobs = [
        (args.seed + 1000 * k + i, args.length, cv, i % 2 == 0, args.every, overrides)
        for k, cv in enumerate(args.cv) for i in range(args.series)
    ]
    started = time.time()
    with mp.Pool(args.jobs) as pool:
        results = pool.map(_job, jobs, chunksize=1)
    per_cv: dict[float, dict[str, list[dict]]] = {}
    for cv, tools in results:
        for tool, sc in tools.items():
            per_cv.setdefault(cv, {}).setdefault(tool, []).append(sc)
    table = summarize(per_cv)
    print(f"{len(jobs)} series x {args.length} nights, detection on every {args.every}. prefix, seed {args.seed}, "
          f"{time.time() - started:.0f} s; params {overrides or 'default'}")
    header = (f"{'CV':>5} {'tool':<12} {'prec':>5} {'recall':>6} {'F1':>5} {'rec>=5%':>7} {'rec2-3%':>7} {'FA/1k':>6} "
              f"{'delay med':>9} {'p90':>5} {'drift':>5} {'A/B/1k':>6}")
    print(header)
    print("-" * len(header))
    for (cv, tool), row in table.items():
        print(f"{cv:>5.0%} {tool:<12} {row['precision']:>5.2f} {row['recall']:>6.2f} {row['f1']:>5.2f} "
              f"{row['recall_ge5']:>7.2f} {row['recall_2_3']:>7.2f} {row['false_per_1000']:>6.2f} "
              f"{row['delay_median']:>9.1f} {row['delay_p90']:>5.1f} {row['drift_alarms']:>5} {row['ab_per_1000']:>6.1f}")
    first = next(iter(table.values()))
    print(f"(per noise level: {first['steps']} regression steps, {first['steps_ge5']} of them >= 5 %, {first['points']} scored nights)")
    if args.json:
        args.json.write_text(json.dumps({f"{cv}|{tool}": row for (cv, tool), row in table.items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
