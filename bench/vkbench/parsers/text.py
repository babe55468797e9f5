"""Text helpers shared by the parsers: visible lines, progress lines, warnings, errors.

The benchmark tools redraw a live progress line with carriage returns, so one
``\\n``-terminated line of captured output can hold many ``\\r``-separated frames.
Only the last frame is what a terminal would finally show, so that is what we parse.
"""

from __future__ import annotations

import re

from vkbench.errors import ParseError
from vkbench.parsers.record import LATENCY_KEYS

BOM = "\ufeff"

#: valkey-/redis-benchmark live progress frame, e.g.
#: ``GET: rps=82832.0 (overall: 82832.0) avg_msec=0.458 (overall: 0.458) 20708 requests``.
#: The overall value can be ``-nan`` on the first frame.
#: redis-benchmark <= 6.0 drew ``SET: 86956.52`` (printf "%.2f") instead.
PROGRESS_RE = re.compile(
    r"^(?P<command>.+?): rps=[-\w.]+ \(overall: [-\w.]+\) avg_msec="
    r"|^(?P<old_command>[^:]+): \d+\.\d\d$"
)

#: ``WARNING: Could not fetch server CONFIG`` (valkey/redis >= 6.2) or ``WARN: ...`` (6.2-dev).
WARNING_RE = re.compile(r"^\s*(?:WARNING|WARN):\s*(?P<text>.+?)\s*$")


def progress_command(line: str) -> str | None:
    """The command of a live progress frame, or None if ``line`` is not one."""
    match = PROGRESS_RE.match(line.strip())
    return (match["command"] or match["old_command"]) if match else None


def fail(source: str, problem: str, hint: str | None = None) -> ParseError:
    """Build the ParseError every parser raises: the message names the file, then the problem."""
    return ParseError(f"{source}: {problem}", hint=hint)


def strip_bom(text: str) -> str:
    return text[1:] if text.startswith(BOM) else text


def last_frame(raw_line: str) -> str:
    """The last non-blank ``\\r`` frame of a line (CRLF endings leave a blank last frame)."""
    frames = [frame for frame in raw_line.split("\r") if frame.strip()]
    return frames[-1] if frames else ""


def visible_lines(text: str) -> list[str]:
    """What a terminal finally shows: one entry per ``\\n`` line, right-stripped."""
    return [last_frame(line).rstrip() for line in strip_bom(text).split("\n")]


def iter_visible_lines(text: str, block: int = 1 << 20):
    """:func:`visible_lines` one at a time, split a block (about a megabyte, cut at a newline)
    at a time: no list of every line of a large output is ever held."""
    text = strip_bom(text)
    start = 0
    while True:
        end = text.find("\n", start + block) if start + block < len(text) else -1
        for line in (text[start:] if end < 0 else text[start:end]).split("\n"):
            yield (last_frame(line) if "\r" in line else line).rstrip()
        if end < 0:
            return
        start = end + 1


def tool_warnings(lines: list[str]) -> list[str]:
    """``WARNING:`` lines the tool printed; they travel on every record of the output."""
    found = []
    for line in lines:
        match = WARNING_RE.match(line)
        if match and f"tool warning: {match['text']}" not in found:
            found.append(f"tool warning: {match['text']}")
    return found


#: A figure as the tools print it: plain decimal, no sign, exponent, underscore or 50 digits.
NUMBER_RE = re.compile(r"^\d{1,12}(?:\.\d{1,12})?$")
#: No tool process measures more than this (a billion requests per second) ...
MAX_RPS = 1e9
#: ... or a latency above this (a day, in milliseconds): larger figures are corrupt input.
MAX_LATENCY_MS = 86_400_000.0
#: Inputs larger than this are refused before reading (a benchmark output is kilobytes;
#: memtier's JSON with per-second series for an hour is a few megabytes).
MAX_INPUT_BYTES = 64 * 1024 * 1024
ABSENT = ("---", "-nan", "nan", "-inf", "inf", "")


def to_float(value: str) -> float | None:
    """A figure as the tools print it; ``---``, ``-nan``, ``nan``, ``inf`` mean "absent".

    Anything else that is not a plain non-negative decimal (``1e308``, ``1_000_000``, ``-5``,
    ``Infinity``, 50 digits) is also None: callers decide whether absence is an error."""
    text = value.strip()
    if not NUMBER_RE.match(text):
        return None
    return float(text)


def figure(source: str, what: str, raw: object, *, latency: bool = False, allow_zero: bool = False) -> float:
    """A validated figure (string as printed, or a JSON number): finite, in range, never a bool.

    Raises the ParseError that names ``what`` (``rps of SET``) and the bad value."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise fail(source, f"{what} is not a number: {str(raw)[:60]!r}")
    if isinstance(raw, str):
        number = to_float(raw)
    elif isinstance(raw, int):
        number = float(raw) if abs(raw) < 10 ** 15 else None
    else:
        number = raw if raw == raw and abs(raw) != float("inf") else None
    if number is None:
        raise fail(source, f"{what} is not a plain number: {str(raw)[:60]!r}")
    limit = MAX_LATENCY_MS if latency else MAX_RPS
    if number < 0 or number > limit or (number == 0 and not (allow_zero or latency)):
        raise fail(source, f"{what} is out of range: {str(raw)[:60]!r} (expected {'0' if latency or allow_zero else 'above 0'} "
                           f"to {limit:g})")
    return number


def quick_figure(raw: str, *, latency: bool = False) -> float | None:
    """The fast path of :func:`figure` for a printed figure: the number if it is valid, else None
    (then call figure() for the error). Zero is valid only for latencies."""
    if not NUMBER_RE.match(raw):
        return None
    number = float(raw)
    if latency:
        return number if number <= MAX_LATENCY_MS else None
    return number if 0 < number <= MAX_RPS else None


def optional_figure(source: str, what: str, raw: object, *, latency: bool = False) -> float | None:
    """:func:`figure` where the tools may print "no value" (``---``, ``-nan``, null)."""
    if raw is None or (isinstance(raw, str) and raw.strip().lower() in ABSENT):
        return None
    return figure(source, what, raw, latency=latency, allow_zero=True)


def truncated_error(source: str, command: str) -> ParseError:
    """A live progress line with no final result after it: the run was cut off."""
    return fail(
        source,
        f"truncated: only a progress line, the run never printed a result (command {command!r})",
        hint="the benchmark was interrupted or its output was cut short; re-run it and keep the whole output",
    )


def latency_dict(values: dict[str, float | None]) -> dict[str, float]:
    """Keep known latency keys with a value, in :data:`LATENCY_KEYS` order (stable JSON)."""
    return {key: values[key] for key in LATENCY_KEYS if values.get(key) is not None}
