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


def tool_warnings(lines: list[str]) -> list[str]:
    """``WARNING:`` lines the tool printed; they travel on every record of the output."""
    found = []
    for line in lines:
        match = WARNING_RE.match(line)
        if match and f"tool warning: {match['text']}" not in found:
            found.append(f"tool warning: {match['text']}")
    return found


def to_float(value: str) -> float | None:
    """A number as the tools print it; ``---``, ``-nan``, ``nan``, ``inf`` mean "absent"."""
    try:
        number = float(value)
    except ValueError:
        return None
    if number != number or number in (float("inf"), float("-inf")):  # nan / inf
        return None
    return number


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
