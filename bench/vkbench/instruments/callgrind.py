"""Read a callgrind output file (valgrind's documented "callgrind format", version 1).

What vkbench needs from a dump: the totals per event, each function's self cost, each call
edge's inclusive cost, and from those a function's inclusive cost (its own instructions plus
everything it called). Name compression (``fn=(12) name`` then ``fn=(12)``) and relative
positions (``+3``, ``-2``, ``*``) are handled; the positions are read but not kept.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ParseError

#: A dump larger than this is not a callgrind file vkbench wrote (a window's dump is ~0.5 MB).
MAX_DUMP_BYTES = 256 * 1024 * 1024

_COMPRESSED = re.compile(r"^\((?P<id>\d+)\)(?:\s+(?P<name>.*))?$")
_NAME_KEYS = {"fn", "cfn", "fl", "fi", "fe", "cfi", "cfl", "ob", "cob"}
# fn and cfn share one table; files (fl, fi, fe, cfi, cfl) share one; objects (ob, cob) one.
_TABLE = {"fn": "fn", "cfn": "fn", "fl": "file", "fi": "file", "fe": "file", "cfi": "file", "cfl": "file",
          "ob": "ob", "cob": "ob"}


@dataclass
class CallgrindProfile:
    events: list[str]
    totals: dict[str, int]
    self_cost: dict[str, dict[str, int]] = field(default_factory=dict)        # fn -> event -> cost
    calls: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)  # (caller, callee) -> inclusive
    call_counts: dict[tuple[str, str], int] = field(default_factory=dict)
    trigger: str | None = None

    def total(self, event: str = "Ir") -> int:
        return self.totals.get(event, 0)

    def self_of(self, fn: str, event: str = "Ir") -> int:
        return self.self_cost.get(fn, {}).get(event, 0)

    def inclusive(self, fn: str, event: str = "Ir") -> int:
        """The function's own cost plus the inclusive cost of every call it made (calls of
        itself left out: a recursive call's cost is already inside the outer call's lines)."""
        cost = self.self_of(fn, event)
        for (caller, callee), costs in self.calls.items():
            if caller == fn and callee != fn:
                cost += costs.get(event, 0)
        return cost

    def edge(self, caller: str, callee: str, event: str = "Ir") -> int:
        return self.calls.get((caller, callee), {}).get(event, 0)

    def callers(self, fn: str) -> list[str]:
        return sorted({caller for caller, callee in self.calls if callee == fn and caller != fn})

    def top_self(self, limit: int = 20, event: str = "Ir") -> list[tuple[str, int]]:
        rows = [(fn, costs.get(event, 0)) for fn, costs in self.self_cost.items()]
        rows.sort(key=lambda r: (-r[1], r[0]))
        return [r for r in rows[:limit] if r[1] > 0]


def self_cost_diff(before: Mapping[str, int], after: Mapping[str, int], *, before_ops: int, after_ops: int,
                   limit: int | None = 20) -> list[dict]:
    """``{function, before, after, delta}`` per operation for every function whose self cost per
    operation differs, biggest absolute change first (ties by name: the same input gives the same
    list). The maps are function -> self instructions, e.g. summed over windows and servers."""
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


def function_diff(before: CallgrindProfile, after: CallgrindProfile, *, before_ops: int, after_ops: int,
                  limit: int | None = 20, event: str = "Ir") -> list[dict]:
    """Which functions' self cost per operation changed most between two dumps (two windows,
    two servers, two builds): ``{function, before, after, delta}`` per operation, biggest
    absolute change first (:func:`self_cost_diff`)."""
    return self_cost_diff({fn: c.get(event, 0) for fn, c in before.self_cost.items()},
                          {fn: c.get(event, 0) for fn, c in after.self_cost.items()},
                          before_ops=before_ops, after_ops=after_ops, limit=limit)


def parse(text: str, *, source: str = "<callgrind>") -> CallgrindProfile:
    events: list[str] | None = None
    positions = 1
    totals: dict[str, int] | None = None
    summary: dict[str, int] | None = None
    trigger = None
    names: dict[str, dict[str, str]] = {"fn": {}, "file": {}, "ob": {}}
    profile = CallgrindProfile(events=[], totals={})
    current_fn: str | None = None
    pending_callee: str | None = None   # set by cfn=, used by the calls= that follows
    call_target: tuple[str, str] | None = None   # the next cost line is this call's inclusive cost
    call_count = 0
    saw_header = False

    def costs_of(tokens: list[str], n: int) -> dict[str, int]:
        values = tokens[positions:]
        if len(values) > len(events):
            raise ParseError(f"{source}:{n}: a cost line has more values than events {events}",
                             hint="pass a file written by valgrind --tool=callgrind")
        try:
            return {events[i]: int(v) for i, v in enumerate(values)}
        except ValueError:
            raise ParseError(f"{source}:{n}: not a cost line: {' '.join(tokens)[:80]!r}",
                             hint="pass a file written by valgrind --tool=callgrind") from None

    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            if line.startswith("# callgrind format"):
                saw_header = True
            continue
        head = line[0]
        if head.isdigit() or head in "+-*":
            if events is None:
                raise ParseError(f"{source}:{n}: a cost line before the events: line",
                                 hint="pass a file written by valgrind --tool=callgrind")
            costs = costs_of(line.split(), n)
            if call_target is not None:
                bucket = profile.calls.setdefault(call_target, {})
                for event, value in costs.items():
                    bucket[event] = bucket.get(event, 0) + value
                profile.call_counts[call_target] = profile.call_counts.get(call_target, 0) + call_count
                call_target = None
            elif current_fn is not None:
                bucket = profile.self_cost.setdefault(current_fn, {})
                for event, value in costs.items():
                    bucket[event] = bucket.get(event, 0) + value
            continue
        key, sep, value = line.partition("=")
        if sep and key in _NAME_KEYS:
            name = _resolve(names[_TABLE[key]], value.strip())
            if key == "fn":
                current_fn, pending_callee, call_target = name, None, None
            elif key == "cfn":
                pending_callee = name
            continue
        if sep and key == "calls":
            if current_fn is None or pending_callee is None:
                raise ParseError(f"{source}:{n}: calls= without a function and a cfn= before it",
                                 hint="pass a file written by valgrind --tool=callgrind")
            call_target = (current_fn, pending_callee)
            try:
                call_count = int(value.split()[0])
            except (ValueError, IndexError):
                raise ParseError(f"{source}:{n}: calls= without a count", hint="pass a callgrind file") from None
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue            # jump=, jcnd= and other lines vkbench does not need
        key, value = key.strip(), value.strip()
        if key == "events":
            events = value.split()
            profile.events = events
        elif key == "positions":
            positions = len(value.split()) or 1
        elif key in ("totals", "summary"):
            if events is None:
                raise ParseError(f"{source}:{n}: {key} before events", hint="pass a callgrind file")
            try:
                parsed = {events[i]: int(v) for i, v in enumerate(value.split())}
            except (ValueError, IndexError):
                raise ParseError(f"{source}:{n}: {key}: is not a list of counts", hint="pass a callgrind file") from None
            if key == "totals":
                totals = parsed
            else:
                summary = parsed
        elif key == "desc" and value.startswith("Trigger:"):
            trigger = value.partition(":")[2].strip()
        elif key in ("version", "creator", "cmd", "pid", "part", "thread"):
            saw_header = True
    if events is None or not saw_header:
        raise ParseError(f"{source}: not a callgrind output file (no header or no events: line)",
                         hint="pass a file written by valgrind --tool=callgrind")
    if totals is None:
        # "totals:" is optional in the format; "summary:" then holds the same sums. callgrind
        # 3.19 writes a "summary: 0" in dumps taken after a zeroing, with the real sums in
        # totals, so totals wins when both are there, and the self costs are the last resort.
        totals = summary if summary else _sum_self(profile)
    profile.totals = totals
    profile.trigger = trigger
    return profile


def _sum_self(profile: CallgrindProfile) -> dict[str, int]:
    out: dict[str, int] = {}
    for costs in profile.self_cost.values():
        for event, value in costs.items():
            out[event] = out.get(event, 0) + value
    return out


def _resolve(table: dict[str, str], value: str) -> str:
    match = _COMPRESSED.match(value)
    if not match:
        return value
    ident, name = match.group("id"), match.group("name")
    if name is not None:
        table[ident] = name
        return name
    return table.get(ident, f"({ident})")


def read(path: str | os.PathLike) -> CallgrindProfile:
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_DUMP_BYTES:
            raise ParseError(f"{path}: {size} bytes is larger than a callgrind dump vkbench reads ({MAX_DUMP_BYTES})",
                             hint="pass a dump of one measured window")
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise ParseError(f"{path}: no such callgrind file", hint="check the path") from None
    return parse(text, source=str(path))


def read_any(path: str | os.PathLike) -> CallgrindProfile:
    """A dump, plain or gzipped (what ``vkbench run`` keeps in ``<cell_id>.raw/callgrind/``)."""
    path = Path(path)
    if path.suffix != ".gz":
        return read(path)
    import gzip

    try:
        with gzip.open(path, "rb") as fh:
            data = fh.read(MAX_DUMP_BYTES + 1)
    except FileNotFoundError:
        raise ParseError(f"{path}: no such callgrind file", hint="check the path") from None
    except (OSError, EOFError) as exc:
        raise ParseError(f"{path}: not a gzipped callgrind dump ({exc})", hint="pass a .out or .out.gz dump") from None
    if len(data) > MAX_DUMP_BYTES:
        raise ParseError(f"{path}: larger than a callgrind dump vkbench reads ({MAX_DUMP_BYTES} bytes)",
                         hint="pass a dump of one measured window")
    return parse(data.decode("utf-8", errors="replace"), source=str(path))


__all__ = ["CallgrindProfile", "parse", "read", "read_any", "function_diff", "self_cost_diff", "add_costs", "MAX_DUMP_BYTES"]
