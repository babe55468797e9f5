"""The normalized record every parser returns: one per command (SET, GET, ...)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

#: Latency keys, in display order. A parser fills only those its input really has.
LATENCY_KEYS = ("avg", "min", "p50", "p95", "p99", "p999", "max")


@dataclass
class Record:
    command: str                     # upper-case as the tool names it: "SET", "GET", "LRANGE_100 (first 100 elements)"
    rps: float                       # requests (ops) per second
    latency_ms: dict[str, float] = field(default_factory=dict)  # subset of LATENCY_KEYS, milliseconds
    tool: str = ""                   # "valkey-benchmark" | "redis-benchmark" | "memtier_benchmark"
    tool_version: str | None = None  # when the output reveals it
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)
