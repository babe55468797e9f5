"""Checks beyond the JSON Schema, shared by every reader of results and series lines.

The schema says what types a result has; these say what values are safe to act on:

* ids that become path components (``run_id``, ``cell_id``, ``fingerprint_id``) match
  :data:`SAFE_ID` (no ``/``, no ``..``, no leading dot or dash, bounded length);
* timestamps are RFC 3339 date-times that parse (they name month shards and runs/ folders);
* every number is finite (``NaN``/``Infinity`` are refused), and measured figures (rps,
  latencies: their medians and samples) are not negative (a confidence interval's lower bound
  may be: with two repetitions the t interval can reach below zero);
* links that end up in Markdown or on the site are ``https:`` (or absent);
* a recorded profile's file is exactly ``<cell_id>.raw/profile.folded`` (readers open it
  beside the result: any other path could point outside the run's folder).

Every problem is a :class:`~vkbench.errors.ResultFileError` (exit 7) naming the file and the
field, raised before anything is written.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator

from ..errors import ResultFileError

#: A path component that cannot escape its directory or hide: letters, digits and ``._+@()-``,
#: not starting with a dot or dash, at most 200 characters, no ``..`` anywhere.
SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+@()-]{0,199}$")

_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$")

#: Links accepted in results and history lines (workflow_run_url, provenance.url).
_HTTPS_URL = re.compile(r"^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~:/?#@!$&*+,;=%-]*)?$")

#: Bounds on what one result may add to the history: series (one per command), the length of a
#: name, and the years a timestamp may name (Redis appeared in 2009; a clock five years ahead
#: is broken, and a far date would make a month shard no one reads).
MAX_SERIES_PER_RESULT = 64
MAX_NAME_CHARS = 200
EARLIEST_TIMESTAMP = datetime(2009, 1, 1, tzinfo=timezone.utc)
FUTURE_YEARS = 5
#: C0 and C1 controls, DEL, and the bidirectional formatting characters (an override such as
#: U+202E shows a name reversed: a series could pass for another).
_NAME_FORBIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

_HINT = "the file was edited or is not from `vkbench run`; restore it from the run's artifact"

#: Where ``vkbench run --profile`` stores the folded stacks, relative to the result file.
PROFILE_FILE = "profile.folded"


def profile_file_name(cell_id: str) -> str:
    return f"{cell_id}.raw/{PROFILE_FILE}"


def is_safe_id(value: Any) -> bool:
    return isinstance(value, str) and bool(SAFE_ID.match(value)) and ".." not in value


def is_date_time(value: Any) -> bool:
    """RFC 3339 (what JSON Schema's ``date-time`` format means), and a real calendar date."""
    if not isinstance(value, str) or not _DATE_TIME.match(value):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00").replace("t", "T"))
    except ValueError:
        return False
    return True


def is_https_url(value: Any) -> bool:
    return isinstance(value, str) and len(value) <= 2000 and bool(_HTTPS_URL.match(value))


def safe_link(value: Any) -> str | None:
    """``value`` when it is an https: URL, else None (for renderers: never emit another scheme)."""
    return value if is_https_url(value) else None


def format_checker():
    """A jsonschema FormatChecker whose ``date-time`` is :func:`is_date_time` (jsonschema's own
    needs an optional package and silently passes everything without it)."""
    import jsonschema

    checker = jsonschema.FormatChecker(formats=())
    checker.checks("date-time")(lambda value: not isinstance(value, str) or is_date_time(value))
    return checker


def non_finite(data: Any, path: str = "") -> Iterator[str]:
    """JSON paths of NaN / Infinity anywhere in ``data``."""
    if isinstance(data, float):
        if not math.isfinite(data):
            yield path or "(top level)"
    elif isinstance(data, dict):
        for key, value in data.items():
            yield from non_finite(value, f"{path}/{key}" if path else str(key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from non_finite(value, f"{path}/{i}" if path else str(i))


def name_problem(name: Any) -> str | None:
    """Why ``name`` (a command name: it becomes a series, a table row, a chart label) is refused."""
    if not isinstance(name, str) or not name:
        return "an empty name"
    if len(name) > MAX_NAME_CHARS:
        return f"{len(name)} characters; a name is at most {MAX_NAME_CHARS}"
    bad = _NAME_FORBIDDEN.search(name)
    if bad:
        return f"holds the control character U+{ord(bad.group()):04X} (control and bidirectional characters are refused in names)"
    return None


def timestamp_problem(value: str, now: datetime | None = None) -> str | None:
    """Why a (valid RFC 3339) timestamp is too far from now to be a run's."""
    when = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00").replace("t", "T"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = now or datetime.now(timezone.utc)
    latest = now + timedelta(days=365 * FUTURE_YEARS + 1)
    if when < EARLIEST_TIMESTAMP or when > latest:
        return f"{value} is not between {EARLIEST_TIMESTAMP:%Y-%m-%d} and {latest:%Y-%m-%d} (now + {FUTURE_YEARS} years); check the clock of the machine that ran it"
    return None


def _fail(source: str, where: str, problem: str) -> ResultFileError:
    return ResultFileError(f"{source}: {where}: {problem}", hint=_HINT)


def _negative_stat(stat: Any) -> str | None:
    if not isinstance(stat, dict):
        return None
    for key in ("median",):
        value = stat.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
            return key
    for i, value in enumerate(stat.get("samples") or []):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
            return f"samples/{i}"
    return None


def check_result(data: dict, source: str) -> None:
    """The value checks of a schema-valid result (see the module docstring)."""
    for where in non_finite(data):
        raise _fail(source, where, "not a finite number (NaN or Infinity)")
    run = data["run"]
    for key in ("run_id", "cell_id"):
        if not is_safe_id(run[key]):
            raise _fail(source, f"run/{key}", f"{_show(run[key])} is not a safe id (letters, digits, ._+@()- ; no '..', no leading dot or dash)")
    if not is_safe_id(data["environment"]["fingerprint_id"]):
        raise _fail(source, "environment/fingerprint_id", f"{_show(data['environment']['fingerprint_id'])} is not a safe id")
    if not is_date_time(run["timestamp"]):
        raise _fail(source, "run/timestamp", f"{_show(run['timestamp'])} is not an RFC 3339 date-time (2026-11-22T02:00:00Z)")
    late = timestamp_problem(run["timestamp"])
    if late:
        raise _fail(source, "run/timestamp", late)
    if len(data["summary"]) > MAX_SERIES_PER_RESULT:
        raise _fail(source, "summary", f"{len(data['summary'])} commands; one result adds at most {MAX_SERIES_PER_RESULT} series")
    for command in data["summary"]:
        problem = name_problem(command)
        if problem:
            raise _fail(source, f"summary/{_show(command)}", f"command name {problem}")
    for r, rep in enumerate(data["repetitions"]):
        for k, record in enumerate(rep["records"]):
            problem = name_problem(record.get("command", "x"))
            if problem:
                raise _fail(source, f"repetitions/{r}/records/{k}/command", f"command name {problem}")
    url = run.get("workflow_run_url")
    if url is not None and not is_https_url(url):
        raise _fail(source, "run/workflow_run_url", f"{_show(url)} is not an https: URL")
    profile_file = (data.get("profile") or {}).get("file")
    if profile_file is not None and profile_file != profile_file_name(run["cell_id"]):
        raise _fail(source, "profile/file", f"{_show(profile_file)} is not {profile_file_name(run['cell_id'])!r}")
    for command, metrics in data["summary"].items():
        for metric, stat in metrics.items():
            bad = _negative_stat(stat)
            if bad:
                raise _fail(source, f"summary/{command}/{metric}/{bad}", "negative; a measured rate or latency is >= 0")
    for r, rep in enumerate(data["repetitions"]):
        for k, record in enumerate(rep["records"]):
            for name, value in (record.get("latency_ms") or {}).items():
                if value < 0:
                    raise _fail(source, f"repetitions/{r}/records/{k}/latency_ms/{name}", "negative latency")


def check_point(point: Any, source: str) -> dict:
    """One series line (docs/history-format.md): ids, timestamp, flags, finite non-negative metrics."""
    if not isinstance(point, dict):
        raise ResultFileError(f"{source}: not a series point (not an object)", hint=_RESTORE)
    for key in ("run_id", "cell_id"):
        if not is_safe_id(point.get(key)):
            raise ResultFileError(f"{source}: {key} {_show(point.get(key))} is missing or not a safe id", hint=_RESTORE)
    if not is_date_time(point.get("timestamp")):
        raise ResultFileError(f"{source}: timestamp {_show(point.get('timestamp'))} is not an RFC 3339 date-time", hint=_RESTORE)
    fp = point.get("fingerprint_id")
    if fp is not None and not is_safe_id(fp):
        raise ResultFileError(f"{source}: fingerprint_id {_show(fp)} is not a safe id", hint=_RESTORE)
    if not isinstance(point.get("valid", True), bool):
        raise ResultFileError(f"{source}: valid is not true/false", hint=_RESTORE)
    flags = point.get("flags", [])
    if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
        raise ResultFileError(f"{source}: flags is not a list of strings", hint=_RESTORE)
    url = point.get("workflow_run_url")
    if url is not None and not is_https_url(url):
        raise ResultFileError(f"{source}: workflow_run_url {_show(url)} is not an https: URL", hint=_RESTORE)
    metrics = point.get("metrics", {})
    if not isinstance(metrics, dict):
        raise ResultFileError(f"{source}: metrics is not an object", hint=_RESTORE)
    for name, stat in metrics.items():
        if not isinstance(stat, dict) or not _number(stat.get("median")):
            raise ResultFileError(f"{source}: metrics/{name}/median is not a number", hint=_RESTORE)
        for key, value in stat.items():
            # the common case first (a history holds hundreds of thousands of these): a finite
            # float, or a list of finite non-negative float samples; anything else below
            if type(value) is float:
                if _isfinite(value) and (value >= 0.0 or key not in _NOT_NEGATIVE):
                    continue
            elif type(value) is list and key == "samples":
                for v in value:
                    if type(v) is not float or not _isfinite(v) or v < 0.0:
                        break
                else:
                    continue
            values = value if key == "samples" and isinstance(value, list) else [value]
            for v in values:
                if v is None and key in ("ci_low", "ci_high", "cv"):
                    continue
                if not _number(v) or not math.isfinite(v) or (v < 0 and key in ("median", "samples")):
                    raise ResultFileError(f"{source}: metrics/{name}/{key} is {_show(v)}, not a finite number (>= 0 for median and samples)", hint=_RESTORE)
    return point


_RESTORE = "the history was edited or truncated; restore it from the gh-pages branch history (git log -- history/)"
_NOT_NEGATIVE = frozenset(("median", "samples"))
_isfinite = math.isfinite


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _show(value: Any) -> str:
    """A value for an error message: repr, cut short (a hostile value may be megabytes)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
