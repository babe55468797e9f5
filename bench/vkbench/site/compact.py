"""Small encoders that keep the site's data files compact without making them opaque.

The browser loads these files over the network, so they trade a little structure for bytes:
numbers rounded to 6 significant digits (far below run-to-run noise), repeated strings
dictionary-coded (``values`` + per-point indexes), URLs stored as a shared prefix plus suffixes.
"""

from __future__ import annotations

import json
import math
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

import orjson

SIGNIFICANT_DIGITS = 6
BOUND_DIGITS = 4


def num(value: Any, digits: int = SIGNIFICANT_DIGITS) -> int | float | None:
    """Round to ``digits`` significant digits; integral results become ints (``412346`` not
    ``412346.0``). Confidence bounds use 4: a 0.01 % step is far below any interval's width."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value):
        return None
    rounded = float(f"{value:.{digits}g}")
    return int(rounded) if rounded.is_integer() and abs(rounded) < 2**53 else rounded


def epoch(timestamp: str | None) -> int | None:
    """Seconds since 1970 of an ISO 8601 timestamp (naive ones are UTC, as the format says)."""
    if not timestamp:
        return None
    try:
        parsed = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return int(parsed.timestamp())


class Dictionary:
    """Dictionary coding: ``code(v)`` gives a small int, ``values`` the table in first-seen order."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._codes: dict[Any, int] = {}

    def code(self, value: Any) -> int:
        found = self._codes.get(key := _dictionary_key(value))
        if found is None:
            found = self._codes[key] = len(self.values)
            self.values.append(value)
        return found


def _dictionary_key(value: Any) -> Any:
    """Equal keys for equal JSON values (1 and 1.0 and True stay apart, as JSON keeps them)."""
    if value is None or isinstance(value, (str, int, float)):
        return (type(value), value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return (list, tuple(value))
    return (object, json.dumps(value, sort_keys=True))


def common_prefix(strings: Iterable[str]) -> str:
    items = [s for s in strings if s]
    return os.path.commonprefix(items) if items else ""


def dumps_bytes(data: Any) -> bytes:
    """Compact UTF-8 JSON. orjson: a site build writes (and an incremental one also reads back)
    hundreds of MB of number arrays, about ten times faster than the json module."""
    return orjson.dumps(data)


def dumps(data: Any) -> str:
    return dumps_bytes(data).decode("utf-8")


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)


def write(path: Path, data: Any) -> int:
    """Write compact JSON; returns the size in bytes (for the build report)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = dumps_bytes(data)
    path.write_bytes(text)
    return len(text)


def compact_value(value: Any) -> Any:
    """A dimension value as the filters show it: scalars stay typed (io_threads sorts as a
    number); lists and objects become one readable string."""
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if isinstance(value, dict):
        return dumps(value)
    return value
