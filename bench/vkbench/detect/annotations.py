"""Human decisions about detection, reviewed in git: ``results/annotations.yaml``.

A list of entries, each either about series (``series``: dimension filters, all must match;
a list value means any of) or about one incident (``incident``: its id), with an ``action``:

- ``reset-baseline``: detection starts afresh after ``after`` (a run id, a commit or a date):
  a change across that point is never reported, and a change before it counts as accepted;
- ``silence``: the incident is kept and shown but marked silenced (no issue, no failing gate).

``reason`` is required: the next person needs to know why.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path
from typing import Any

import jsonschema

from ..bounded_yaml import load_yaml
from ..errors import ConfigError

ACTIONS = ("reset-baseline", "silence")

SCHEMA: dict = {
    "type": ["array", "null"],
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["action", "reason"],
        "anyOf": [{"required": ["series"]}, {"required": ["incident"]}],
        "properties": {
            "series": {
                "type": "object",
                "minProperties": 1,
                "additionalProperties": {
                    "anyOf": [
                        {"type": ["string", "number", "boolean", "null"]},
                        {"type": "array", "items": {"type": ["string", "number", "boolean", "null"]}},
                    ]
                },
            },
            "incident": {"type": "string", "minLength": 4},
            "after": {"type": "string", "minLength": 1, "description": "run id, commit (prefix of 7+) or date (YYYY-MM-DD or ISO time)"},
            "action": {"enum": list(ACTIONS)},
            "reason": {"type": "string", "minLength": 3},
            "by": {"type": "string"},
        },
    },
}

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ][0-9:.]+Z?)?$")
_HEX = re.compile(r"^[0-9a-fA-F]{7,40}$")


def load_annotations(path: str | os.PathLike | None) -> list[dict]:
    if path is None:
        return []
    path = Path(path)
    try:
        data = load_yaml(path.read_text(encoding="utf-8"), str(path))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such annotations file", hint="create it (see results/annotations.yaml) or drop --annotations") from None
    return validate_annotations(data, source=str(path))


def validate_annotations(data: Any, *, source: str = "<annotations>") -> list[dict]:
    data = _stringify_dates(data)
    errors = sorted(jsonschema.Draft202012Validator(SCHEMA).iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "(top level)"
        message = first.message
        if first.validator == "anyOf" and "series" not in str(first.instance):
            message = "each entry needs `series:` (dimension filters) or `incident:` (an incident id)"
        raise ConfigError(
            f"{source}: annotation {where}: {message}",
            hint="entries look like: {series: {command: SET}, after: <run|commit|date>, action: reset-baseline|silence, reason: why}",
        )
    entries = data or []
    for entry in entries:
        if entry["action"] == "reset-baseline" and "series" in entry and "after" not in entry:
            raise ConfigError(
                f"{source}: a series reset-baseline needs `after:` (run id, commit or date)",
                hint="name the last run of the old baseline, e.g. after: 2026-11-20",
            )
    return entries


def _stringify_dates(data: Any) -> Any:
    """YAML turns ``after: 2026-11-20`` into a date object; annotations want the text."""
    if isinstance(data, list):
        return [_stringify_dates(x) for x in data]
    if isinstance(data, dict):
        return {k: _stringify_dates(v) for k, v in data.items()}
    if isinstance(data, dt.datetime):
        return data.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(data, dt.date):
        return data.isoformat()
    return data


def matches_series(entry: dict, sid: str, dims: dict) -> bool:
    filters = entry.get("series")
    if not filters:
        return False
    for key, wanted in filters.items():
        actual = sid if key in ("sid", "series_id") else dims.get(key)
        options = wanted if isinstance(wanted, list) else [wanted]
        if not any(_same(actual, option) for option in options):
            return False
    return True


def _same(actual: Any, wanted: Any) -> bool:
    if actual == wanted:
        return True
    if isinstance(actual, list):
        return wanted in actual or str(wanted) in [str(a) for a in actual]
    return str(actual).lower() == str(wanted).lower()


def first_index_after(entry: dict, points: list[dict]) -> int | None:
    """Index of the first point after ``after`` in a sorted point list (None: never, or no
    ``after``). A run id or commit means "after the last point of that run / commit"."""
    after = entry.get("after")
    if after is None:
        return None
    if _DATE.match(after):
        if len(after) == 10:
            return next((i for i, p in enumerate(points) if p["timestamp"][:10] > after), len(points))
        stamp = after.replace(" ", "T")
        return next((i for i, p in enumerate(points) if p["timestamp"] > stamp), len(points))
    hits = [i for i, p in enumerate(points) if p.get("run_id") == after]
    if not hits and _HEX.match(after):
        hits = [i for i, p in enumerate(points) if (p.get("commit") or "").lower().startswith(after.lower())]
    return hits[-1] + 1 if hits else None
