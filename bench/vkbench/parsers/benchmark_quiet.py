"""valkey-benchmark / redis-benchmark ``-q`` output.

One result line per test, the final frame after the live progress frames::

    \\rSET: rps=0.0 (overall: -nan) avg_msec=-nan (overall: -nan)\\r   \\rSET: 529100.56 requests per second, p50=1.399 msec

Generations: ``SET: 53684.38 requests per second`` (<= 6.0, no p50) and
``..., p50=1.399 msec`` (>= 6.2). Lines are often padded with trailing spaces
(residue of the progress redraw). Anything else (prompts, commands, cluster
header, notes) is noise. A progress line that is never followed by a result
means the run was cut off: that is an error, not a result.
"""

from __future__ import annotations

import re

from vkbench.parsers.record import Record
from vkbench.parsers.text import fail, figure, latency_dict, optional_figure, progress_command, tool_warnings, truncated_error, visible_lines

# Greedy command group: a custom command title may itself contain ": ".
RESULT_RE = re.compile(
    r"^\s*(?P<command>.+): (?P<rps>\d+(?:\.\d+)?) requests per second"
    r"(?:, p50=(?P<p50>\d+(?:\.\d+)?) msec)?\s*$"
)


def parse_benchmark_quiet(text: str, *, source: str, tool: str) -> list[Record]:
    lines = visible_lines(text)
    warnings = tool_warnings(lines)
    records: list[Record] = []
    waiting_for_result: dict[str, None] = {}  # commands seen only as progress so far (ordered set)
    for line in lines:
        result = RESULT_RE.match(line)
        if result:
            command = result["command"].strip()
            waiting_for_result.pop(command, None)
            p50 = optional_figure(source, f"p50 of {command!r}", result["p50"], latency=True)
            records.append(Record(command=command, rps=figure(source, f"rps of {command!r}", result["rps"]),
                                  latency_ms=latency_dict({"p50": p50}), tool=tool, warnings=list(warnings)))
            continue
        progressing = progress_command(line)
        if progressing:
            waiting_for_result[progressing] = None
    if waiting_for_result:
        raise truncated_error(source, next(iter(waiting_for_result)))
    if not records:
        raise fail(source, "no benchmark results found (no 'requests per second' line)")
    return records
