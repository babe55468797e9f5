"""Combine records: several tool processes of one repetition, and repetitions into a summary."""

from __future__ import annotations

from ..parsers.record import LATENCY_KEYS, OPTIONAL_FIGURES, Record
from ..stats import summarize


def merge_target_records(per_target: list[list[Record]]) -> tuple[list[Record], list[str]]:
    """One tool process per target (reads spread over replicas): rps add up; latency is
    rps-weighted for avg, min of mins, max of maxes, and the worst percentile (conservative)."""
    warnings = [w for records in per_target for r in records for w in r.warnings]
    if len(per_target) == 1:
        return per_target[0], sorted(set(warnings))
    merged: dict[str, list[Record]] = {}
    for records in per_target:
        for rec in records:
            merged.setdefault(rec.command, []).append(rec)
    out = []
    for command, recs in merged.items():
        total = sum(r.rps for r in recs)
        latency: dict[str, float] = {}
        for key in LATENCY_KEYS:
            values = [(r.latency_ms[key], r.rps) for r in recs if key in r.latency_ms]
            if len(values) != len(recs):
                continue
            if key == "avg":
                latency[key] = sum(v * w for v, w in values) / total if total else values[0][0]
            elif key == "min":
                latency[key] = min(v for v, _ in values)
            else:
                latency[key] = max(v for v, _ in values)
        extra = {name: sum(getattr(r, name) for r in recs) for name in OPTIONAL_FIGURES
                 if all(getattr(r, name) is not None for r in recs)}
        out.append(Record(command, total, latency, recs[0].tool, recs[0].tool_version, [], **extra))
    warnings.append(f"{len(per_target)} client processes (one per target): rps summed, percentiles are the worst of them")
    return out, sorted(set(warnings))


def summarize_repetitions(repetitions: list[dict]) -> dict:
    """``{command: {metric: stat}}`` with rps and every latency key the tool reported each time."""
    samples: dict[str, dict[str, list[float]]] = {}
    for rep in repetitions:
        for rec in rep["records"]:
            metrics = samples.setdefault(rec["command"], {})
            metrics.setdefault("rps", []).append(rec["rps"])
            for key, value in rec.get("latency_ms", {}).items():
                metrics.setdefault(key, []).append(value)
    n_reps = len(repetitions)
    return {
        command: {metric: summarize(values) for metric, values in metrics.items() if len(values) == n_reps}
        for command, metrics in samples.items()
    }
