"""Which functions' instructions per operation changed between two measurements.

Shared by ``vkbench ab --instrument instructions`` (self costs summed over every window of every
seed pair) and tools/instruction_diff.py (two callgrind dumps). Self costs: a change is named in
the function where it happens, not in every caller above it.
"""

from __future__ import annotations

from collections.abc import Mapping


def self_cost_diff(before: Mapping[str, int], after: Mapping[str, int], *, before_ops: int, after_ops: int,
                   limit: int | None = 20) -> list[dict]:
    """``{function, before, after, delta}`` per operation for every function whose self cost per
    operation differs, biggest absolute change first (ties by name: the same input gives the same list)."""
    if before_ops <= 0 or after_ops <= 0:
        raise ValueError("operation counts must be positive")
    rows = []
    for fn in set(before) | set(after):
        b, a = before.get(fn, 0) / before_ops, after.get(fn, 0) / after_ops
        if a != b:
            rows.append({"function": fn, "before": round(b, 3), "after": round(a, 3), "delta": round(a - b, 3)})
    rows.sort(key=lambda r: (-abs(r["delta"]), r["function"]))
    return rows[:limit] if limit else rows


def add_costs(into: dict[str, int], costs: Mapping[str, int]) -> dict[str, int]:
    """Sum ``costs`` (function -> self instructions) into ``into``; returns ``into``."""
    for fn, cost in costs.items():
        into[fn] = into.get(fn, 0) + cost
    return into


__all__ = ["self_cost_diff", "add_costs"]
