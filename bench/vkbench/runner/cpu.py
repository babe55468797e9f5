"""CPU use of the client and the servers during a repetition, read from /proc.

Percent of one core: 100 = one core fully busy, 200 = two cores. The client's figure comes
from ``wait4`` rusage (exact, includes all its threads); servers' from /proc/<pid>/stat deltas.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float | None:
    """utime + stime of a live process (all threads), in seconds."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode(errors="replace")
    except OSError:
        return None
    # comm (field 2) may contain spaces and parentheses: split after the last ')'.
    fields = raw.rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / _TICKS


@dataclass
class CpuSnapshot:
    servers: dict[int, float]

    @classmethod
    def take(cls, pids: list[int]) -> CpuSnapshot:
        return cls({pid: s for pid in pids if (s := process_cpu_seconds(pid)) is not None})


def server_cores_used(before: CpuSnapshot, after: CpuSnapshot, elapsed: float) -> float | None:
    """Cores used by all servers together (sum), or None when no server could be read."""
    if elapsed <= 0:
        return None
    common = set(before.servers) & set(after.servers)
    if not common:
        return None
    return sum(after.servers[p] - before.servers[p] for p in common) / elapsed
