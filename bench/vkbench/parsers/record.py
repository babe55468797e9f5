"""The normalized record every parser returns: one per command (SET, GET, ...)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

#: Latency keys, in display order. A parser fills only those its input really has.
LATENCY_KEYS = ("avg", "min", "p50", "p90", "p95", "p99", "p999", "p9999", "max")
#: Per-command figures only some tools print (memtier): left out of to_dict when absent.
OPTIONAL_FIGURES = ("hits_per_s", "misses_per_s", "kb_per_s")


@dataclass(slots=True)
class Record:
    command: str                     # upper-case as the tool names it: "SET", "GET", "LRANGE_100 (first 100 elements)"
    rps: float                       # requests (ops) per second
    latency_ms: dict[str, float] = field(default_factory=dict)  # subset of LATENCY_KEYS, milliseconds
    tool: str = ""                   # "valkey-benchmark" | "redis-benchmark" | "memtier_benchmark"
    tool_version: str | None = None  # when the output reveals it
    warnings: list[str] = field(default_factory=list)
    hits_per_s: float | None = None      # memtier: GETs that found their key, per second
    misses_per_s: float | None = None    # memtier: GETs that did not
    kb_per_s: float | None = None        # memtier: KB/sec sent and received for this command

    def to_dict(self) -> dict:
        data = asdict(self)
        for name in OPTIONAL_FIGURES:
            if data[name] is None:
                del data[name]
        return data
