"""valkey-benchmark / redis-benchmark default ("full") output.

One block per test, opened by ``====== SET ======``. Two generations:

* >= 6.2 and valkey: ``Latency by percentile distribution:`` (HdrHistogram levels
  50%, 75%, ... 99.902% ...), ``Cumulative distribution of latencies:``, then
  ``Summary:`` with ``throughput summary: N requests per second`` and a
  ``latency summary (msec):`` table (``avg min p50 p95 p99 max``). The summary is
  what we report; the percentile block only adds p99.9.
* <= 6.0 (back to 2010): cumulative lines ``58.50% <= 0 milliseconds`` and a bare
  ``114293.71 requests per second``. No percentile is printed, so p50/p95/p99 are
  read off the cumulative lines and the record says so in a warning.

A pasted ``Summary:`` section without its ``======`` header (valkey PR #2100) still
parses. Its command is taken from a preceding progress line if there is exactly one
left without a result; otherwise it is ``UNKNOWN`` (with a warning): we never guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from vkbench.parsers.cdf import derived_warning, percentiles_from_cdf
from vkbench.parsers.record import Record
from vkbench.parsers.text import fail, figure, latency_dict, optional_figure, progress_command, tool_warnings, truncated_error, visible_lines

UNKNOWN_COMMAND = "UNKNOWN"

HEADER_RE = re.compile(r"^====== (?P<command>.+) ======$")
PERCENT_RE = re.compile(r"^\s*(?P<pct>\d+(?:\.\d+)?)% <= (?P<ms>\d+(?:\.\d+)?) milliseconds(?: \(cumulative count \d+\))?$")
OLD_RPS_RE = re.compile(r"^\s*(?P<rps>\d+(?:\.\d+)?) requests per second$")
THROUGHPUT_RE = re.compile(r"^\s*throughput summary: (?P<rps>\d+(?:\.\d+)?) requests per second$")
LATENCY_SUMMARY_RE = re.compile(r"^\s*latency summary \(msec\):$")
SUMMARY_NAMES = {"avg": "avg", "min": "min", "p50": "p50", "p95": "p95", "p99": "p99", "p99.9": "p999", "max": "max"}

#: HdrHistogram prints levels halving towards 100% (..., 99.805, 99.902, 99.951); the
#: one in this range is the closest printed stand-in for p99.9.
P999_LEVELS = (99.9, 99.95)


@dataclass
class _Block:
    command: str | None                       # None: summary-only paste, name not printed
    rps: float | None = None
    summary: dict[str, float] = field(default_factory=dict)
    levels: list[tuple[float, float]] = field(default_factory=list)   # (percent, ms) HdrHistogram levels
    old_cdf: list[tuple[float, float]] = field(default_factory=list)  # (ms, cumulative percent), <= 6.0


def parse_benchmark_full(text: str, *, source: str, tool: str) -> list[Record]:
    lines = visible_lines(text)
    warnings = tool_warnings(lines)
    blocks: list[_Block] = []
    waiting_for_result: dict[str, None] = {}  # commands seen only as progress so far (ordered set)
    section = None  # "levels" | "cumulative" | None (old-format lines belong to no section)

    def current() -> _Block:
        """The block being read; a result line after a complete block opens a header-less one."""
        if not blocks or blocks[-1].rps is not None:
            blocks.append(_Block(command=_only_waiting(waiting_for_result)))
        return blocks[-1]

    for index, line in enumerate(lines):
        if header := HEADER_RE.match(line.strip()):
            blocks.append(_Block(command=header["command"]))
            waiting_for_result.pop(header["command"], None)
            section = None
        elif command := progress_command(line):
            waiting_for_result[command] = None
        elif line.strip() == "Latency by percentile distribution:":
            section = "levels"
        elif line.strip() == "Cumulative distribution of latencies:":
            section = "cumulative"   # informative only: the summary has the same facts
        elif percent := PERCENT_RE.match(line):
            pct, ms = float(percent["pct"]), float(percent["ms"])
            if section == "levels":
                current().levels.append((pct, ms))
            elif section is None:
                current().old_cdf.append((ms, pct))
        elif rps := THROUGHPUT_RE.match(line) or OLD_RPS_RE.match(line):
            block = current()
            block.rps = figure(source, f"rps of {block.command or UNKNOWN_COMMAND!r}", rps["rps"])
        elif LATENCY_SUMMARY_RE.match(line):
            # Printed after the throughput line, so it belongs to the block that just completed.
            (blocks[-1] if blocks else current()).summary = _summary_table(lines[index + 1:index + 3], source)
        elif not line.strip() or line.strip() == "Summary:":
            section = None

    if waiting_for_result:
        raise truncated_error(source, next(iter(waiting_for_result)))
    if not blocks:
        raise fail(source, "no benchmark results found (no '====== TEST ======' block or summary)")
    return [_record(block, source=source, tool=tool, warnings=warnings) for block in blocks]


def _only_waiting(waiting: dict[str, None]) -> str | None:
    """A header-less result is named after the one progress line still waiting for its result."""
    return waiting.popitem()[0] if len(waiting) == 1 else None


def _summary_table(two_lines: list[str], source: str) -> dict[str, float]:
    """``avg min p50 p95 p99 max`` then the values, as printed under ``latency summary (msec):``."""
    if len(two_lines) < 2 or len(two_lines[0].split()) != len(two_lines[1].split()):
        raise fail(source, "truncated: the latency summary table is incomplete")
    summary = {}
    names = two_lines[0].split()
    if not set(names) <= set(SUMMARY_NAMES) or len(set(names)) != len(names):
        raise fail(source, f"the latency summary header is not 'avg min p50 p95 p99 max': {two_lines[0].strip()[:120]!r}")
    for name, raw in zip(names, two_lines[1].split()):
        value = optional_figure(source, f"latency summary {name}", raw, latency=True)
        if value is not None:
            summary[SUMMARY_NAMES[name]] = value
    return summary


def _record(block: _Block, *, source: str, tool: str, warnings: list[str]) -> Record:
    name = block.command or UNKNOWN_COMMAND
    if block.rps is None:
        raise fail(source, f"truncated: the {name} block has no 'requests per second' line",
                   hint="the benchmark was interrupted or its output was cut short; re-run it and keep the whole output")
    notes = list(warnings)
    if block.command is None:
        notes.append("the output does not name the command (summary without its '====== TEST ======' header)")
    latency = dict(block.summary)
    if not latency and block.old_cdf:
        whole_ms = all(ms == int(ms) for ms, _ in block.old_cdf)
        # redis-benchmark <= 2.x truncates latency to whole milliseconds: the line '<= 0' counts
        # requests under 1 ms, so the bucket's upper bound is M + 1, never 0.
        points = [(ms + 1, pct) for ms, pct in block.old_cdf] if whole_ms else block.old_cdf
        latency = percentiles_from_cdf(points)
        if latency:
            notes.append(derived_warning(
                "the cumulative distribution ('N% <= M milliseconds')",
                "whole-millisecond buckets: '<= M milliseconds' counts requests under M+1 ms, so each value "
                "is that bucket's upper bound M+1" if whole_ms else ""))
    if "p999" not in latency:
        level = next(((pct, ms) for pct, ms in block.levels if P999_LEVELS[0] <= pct < P999_LEVELS[1]), None)
        if level:
            latency["p999"] = level[1]
            if level[0] != 99.9:
                notes.append(f"p999 is the {level[0]:g}% level of 'Latency by percentile distribution' "
                             "(the printed level nearest to 99.9%)")
    return Record(command=name, rps=block.rps, latency_ms=latency_dict(latency), tool=tool, warnings=notes)
