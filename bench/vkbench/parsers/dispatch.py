"""Public entry points: sniff which tool and format produced an output, then parse it.

Sniffing, in order (first match wins):

1. Tool failures anywhere in non-JSON text (``errors.py``): NOAUTH, WRONGPASS,
   connection refused, MOVED, ``Invalid cluster``, ``Error from server`` -> ParseError.
2. Text starting with ``{`` -> memtier JSON.
3. A memtier table header (``Type  Ops/sec ...``) -> memtier text.
4. A line starting with a quoted cell and a comma (``"SET",...``) -> ``--csv``.
5. ``====== TEST ======``, ``throughput summary:``, or a bare ``N requests per second``
   line -> full (default) output.
6. ``TEST: N requests per second`` -> ``-q`` output.
7. Only live progress lines -> ParseError (truncated); nothing at all -> ParseError.

``tool`` restricts the family (memtier vs valkey-/redis-benchmark); the format within
the family is still sniffed. Records carry ``tool`` as given; when it is not given,
valkey-benchmark vs redis-benchmark is guessed from the output (the binary name in an
echoed command line, then ``Primary``/``primary nodes`` vs ``Master``/``master nodes``
in the cluster header) and falls back to the family name ``redis-benchmark``: both
tools print the same formats and valkey-benchmark is the fork.

A file holding several runs of the same command (concatenated memtier runs, shell
sessions, markdown with two servers) yields every run, in file order; each such
record gets a warning saying which occurrence it is.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from vkbench.errors import UsageError
from vkbench.parsers.benchmark_csv import parse_benchmark_csv
from vkbench.parsers.benchmark_full import HEADER_RE, OLD_RPS_RE, THROUGHPUT_RE, parse_benchmark_full
from vkbench.parsers.benchmark_quiet import RESULT_RE, parse_benchmark_quiet
from vkbench.parsers.errors import raise_on_tool_error
from vkbench.parsers.memtier_json import parse_memtier_json
from vkbench.parsers.memtier_rows import TOOL as MEMTIER
from vkbench.parsers.memtier_text import looks_like_memtier_text, parse_memtier_text
from vkbench.parsers.record import Record
from vkbench.parsers.text import fail, progress_command, strip_bom, truncated_error, visible_lines

VALKEY_BENCHMARK = "valkey-benchmark"
REDIS_BENCHMARK = "redis-benchmark"
TOOLS = (VALKEY_BENCHMARK, REDIS_BENCHMARK, MEMTIER)

#: A quoted first cell followed by a comma: ``"SET","12345.67"`` or the ``"test","rps",...`` header.
CSV_ROW_RE = re.compile(r'^"(?:[^"]|"")*",')
NO_RESULTS_HINT = "the file holds no benchmark result: check the tool ran to completion and that this is its stdout"


def parse_file(path: str | Path, tool: str | None = None) -> list[Record]:
    """Parse a saved output file; the error messages name the file."""
    path = Path(path)
    text = path.read_bytes().decode("utf-8", errors="replace")
    return parse_output(text, tool=tool, source=path.name)


def parse_output(text: str, *, tool: str | None = None, source: str = "<output>") -> list[Record]:
    if tool is not None and tool not in TOOLS:
        raise UsageError(f"unknown tool {tool!r}; expected one of {', '.join(TOOLS)}")
    text = strip_bom(text)
    if not text.strip():
        raise fail(source, "no benchmark results found (the output is empty)", hint=NO_RESULTS_HINT)
    is_json = text.lstrip().startswith("{")
    if not is_json:
        raise_on_tool_error(text, source)
    family = MEMTIER if is_json or looks_like_memtier_text(text) else "benchmark"
    if tool == MEMTIER and family != MEMTIER:
        raise fail(source, "this is not memtier_benchmark output (no JSON, no 'Type Ops/sec' table)")
    if tool in (VALKEY_BENCHMARK, REDIS_BENCHMARK) and family == MEMTIER:
        raise fail(source, f"this is memtier_benchmark output, not {tool} output")

    if is_json:
        records = parse_memtier_json(text, source=source)
    elif family == MEMTIER:
        records = parse_memtier_text(text, source=source)
    else:
        records = _parse_benchmark(text, tool=tool or guess_benchmark_tool(text), source=source)
    return flag_repeated_commands(records)


def _parse_benchmark(text: str, *, tool: str, source: str) -> list[Record]:
    lines = [line.strip() for line in visible_lines(text)]
    if any(CSV_ROW_RE.match(line) for line in lines):
        return parse_benchmark_csv(text, source=source, tool=tool)
    if any(HEADER_RE.match(line) or THROUGHPUT_RE.match(line) or OLD_RPS_RE.match(line) for line in lines):
        return parse_benchmark_full(text, source=source, tool=tool)
    if any(RESULT_RE.match(line) for line in lines):
        return parse_benchmark_quiet(text, source=source, tool=tool)
    progressing = next((command for line in lines if (command := progress_command(line))), None)
    if progressing:
        raise truncated_error(source, progressing)
    raise fail(source, "no benchmark results found", hint=NO_RESULTS_HINT)


def guess_benchmark_tool(text: str) -> str:
    """valkey-benchmark or redis-benchmark, from what the output itself reveals."""
    binary = re.search(r"\b(valkey|redis)-benchmark\b", text)
    if binary:
        return f"{binary[1]}-benchmark"
    if re.search(r"^(?:Node \d+\(Primary\)|Primary \d+):|primary nodes:|\(\d+ primar", text, re.M):
        return VALKEY_BENCHMARK
    return REDIS_BENCHMARK  # also covers "Master 0:" / "master nodes:" (redis, or valkey before 8.0)


def flag_repeated_commands(records: list[Record]) -> list[Record]:
    """Several runs of one command in one output: keep all, say which is which."""
    totals = Counter(record.command for record in records)
    seen: Counter[str] = Counter()
    for record in records:
        if totals[record.command] > 1:
            seen[record.command] += 1
            record.warnings.append(
                f"{record.command} appears {totals[record.command]} times in this output "
                f"(several runs in one file); this is occurrence {seen[record.command]}"
            )
    return records
