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

Results in two formats at once (a memtier table and ``-q`` lines, ``--csv`` rows and ``-q``
lines, full output and ``-q`` lines...) are refused naming both: parsing one would silently
drop the other's records.

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
import stat
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
from vkbench.parsers.text import (MAX_INPUT_BYTES, MAX_LATENCY_MS, MAX_RPS, fail, figure, iter_visible_lines, progress_command,
                                  strip_bom, truncated_error, visible_lines)

VALKEY_BENCHMARK = "valkey-benchmark"
REDIS_BENCHMARK = "redis-benchmark"
TOOLS = (VALKEY_BENCHMARK, REDIS_BENCHMARK, MEMTIER)

#: A quoted first cell followed by a comma: ``"SET","12345.67"`` or the ``"test","rps",...`` header.
CSV_ROW_RE = re.compile(r'^"(?:[^"]|"")*",')
#: memtier --hdr-file-prefix files: the histogram log (.hgrm) and the percentile distribution (.txt).
HDR_RE = re.compile(r"^#\[(?:Full Run|\w+) command HDR latency histogram|^\s*Value\s+Percentile\s+TotalCount\s", re.M)
NO_RESULTS_HINT = "the file holds no benchmark result: check the tool ran to completion and that this is its stdout"


def read_output(path: str | Path) -> str:
    """The text of a saved output, refusing at once what cannot be one: not a regular file
    (a FIFO would block forever, a device never ends) or larger than MAX_INPUT_BYTES."""
    path = Path(path)
    try:
        info = path.stat()
    except OSError as exc:
        raise fail(path.name, f"cannot read it: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise fail(path.name, "not a regular file (a FIFO, device or directory is never read)",
                   hint="save the tool's output to a file first")
    if info.st_size > MAX_INPUT_BYTES:
        raise fail(path.name, f"{info.st_size} bytes is more than any benchmark output ({MAX_INPUT_BYTES} bytes at most)",
                   hint="give the tool's stdout or --json-out-file, not a log of everything")
    with open(path, "rb") as handle:   # read at most the limit, even if the file grew since stat
        data = handle.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise fail(path.name, f"more than {MAX_INPUT_BYTES} bytes (the file grew while being read)")
    return data.decode("utf-8", errors="replace")


def parse_file(path: str | Path, tool: str | None = None, *, stdout_path: str | Path | None = None) -> list[Record]:
    """Parse a saved output file; the error messages name the file.

    ``stdout_path``: memtier's stdout from the run that wrote ``path`` (its --json-out-file).
    memtier reports error replies only there, so it is checked as the runner checks it."""
    path = Path(path)
    text = read_output(path)
    if stdout_path is None:
        return parse_output(text, tool=tool, source=path.name)
    if tool not in (None, MEMTIER) or not is_json_output(text):
        raise UsageError(f"--stdout goes with memtier_benchmark's --json-out-file; {path.name} is not a memtier JSON",
                         hint="give the JSON file as OUTPUT_FILE and memtier's stdout with --stdout, "
                              "or parse the stdout alone")
    stdout_path = Path(stdout_path)
    return parse_tool_run(read_output(stdout_path), tool=MEMTIER, json_text=text, source=path.name,
                          stdout_source=stdout_path.name)


def is_json_output(text: str) -> bool:
    """memtier's --json-out-file (the only JSON any supported tool writes)."""
    return strip_bom(text).lstrip().startswith("{")


def parse_output(text: str, *, tool: str | None = None, source: str = "<output>") -> list[Record]:
    if tool is not None and tool not in TOOLS:
        raise UsageError(f"unknown tool {tool!r}; expected one of {', '.join(TOOLS)}")
    if len(text) > MAX_INPUT_BYTES:
        raise fail(source, f"more than {MAX_INPUT_BYTES} characters: not a benchmark output")
    text = strip_bom(text)
    if not text.strip():
        raise fail(source, "no benchmark results found (the output is empty)", hint=NO_RESULTS_HINT)
    if HDR_RE.search(text[:4096]):
        raise fail(source, "a memtier HDR histogram file (--hdr-file-prefix): it holds latencies only, "
                           "no throughput, so it cannot make a result",
                   hint="parse memtier's stdout or its --json-out-file: they carry the same percentiles and the ops/sec")
    is_json = is_json_output(text)
    if not is_json:
        raise_on_tool_error(text, source)
    family = MEMTIER if is_json or looks_like_memtier_text(text) else "benchmark"
    if family == MEMTIER and not is_json and _benchmark_results(text):
        raise fail(source, "the output mixes memtier_benchmark tables with valkey-/redis-benchmark results",
                   hint="split it into one file per tool run: parsing one format would silently drop the other")
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
    for record in records:
        check_record(record, source)
    return flag_repeated_commands(records)


def parse_tool_run(stdout: str, *, tool: str, json_text: str | None = None, source: str = "<output>",
                   stdout_source: str | None = None) -> list[Record]:
    """One run of a tool as vkbench captured it: its stdout (and memtier's --json-out-file).

    The tool's stdout is always checked for failures first: memtier writes error replies
    (READONLY, MOVED, NOAUTH), failed logins and refused connections only there, and its JSON
    then looks like a good run. The records come from memtier's printed table when there is
    one (its averages have 5 decimals where the JSON truncates to 3), else from the JSON.
    ``stdout_source`` names the stdout in errors when it is a file of its own."""
    stdout_source = stdout_source or source
    raise_on_tool_error(stdout, stdout_source)
    if tool == MEMTIER and json_text is not None:
        json_records = parse_output(json_text, tool=tool, source=source)
        if looks_like_memtier_text(stdout):
            records = parse_output(stdout, tool=tool, source=stdout_source)
            if {r.command for r in records} == {r.command for r in json_records}:
                return records
        return json_records
    return parse_output(stdout, tool=tool, source=source)


def check_record(record: Record, source: str) -> None:
    """Last line of defence for every parser: figures are finite, in range and plain numbers.

    Written for speed on the good case (a 10 MB CSV has 160,000 records): plain comparisons,
    and figure() only to word the error. NaN fails every comparison, so it takes that path too."""
    rps = record.rps
    if not (rps.__class__ is float and 0 < rps <= MAX_RPS):
        figure(source, f"rps of {record.command!r}", rps)
    for key, value in record.latency_ms.items():
        if not (value.__class__ is float and 0 <= value <= MAX_LATENCY_MS):
            figure(source, f"{key} latency of {record.command!r}", value, latency=True)
    if record.hits_per_s is None and record.misses_per_s is None and record.kb_per_s is None:
        return
    for name in ("hits_per_s", "misses_per_s", "kb_per_s"):
        value = getattr(record, name)
        if value is not None:
            figure(source, f"{name} of {record.command!r}", value, allow_zero=True)


def _benchmark_results(text: str) -> bool:
    """valkey-/redis-benchmark results (-q lines, CSV rows, full-output blocks) in the text."""
    for line in visible_lines(text):
        stripped = line.strip()
        if RESULT_RE.match(stripped) or CSV_ROW_RE.match(stripped) or HEADER_RE.match(stripped) \
                or THROUGHPUT_RE.match(stripped):
            return True
    return False


#: valkey-/redis-benchmark output formats, as named in messages.
CSV_FORMAT, FULL_FORMAT, QUIET_FORMAT = "--csv rows", "full (default) output", "-q lines"


def benchmark_formats(text: str) -> list[str]:
    """The valkey-/redis-benchmark formats with results in the text (CSV, full, -q order). One pass,
    a cheap test per line first: a 10 MB --csv output is 160,000 rows."""
    found: set[str] = set()
    for line in iter_visible_lines(text):
        stripped = line.strip()
        if stripped.startswith('"'):
            if CSV_FORMAT not in found and CSV_ROW_RE.match(stripped):
                found.add(CSV_FORMAT)
        elif "requests per second" in stripped:
            if THROUGHPUT_RE.match(stripped) or OLD_RPS_RE.match(stripped):
                found.add(FULL_FORMAT)          # "throughput summary: N requests ..." also matches RESULT_RE
            elif RESULT_RE.match(stripped):
                found.add(QUIET_FORMAT)
        elif stripped.startswith("======") and HEADER_RE.match(stripped):
            found.add(FULL_FORMAT)
    return [name for name in (CSV_FORMAT, FULL_FORMAT, QUIET_FORMAT) if name in found]


def _parse_benchmark(text: str, *, tool: str, source: str) -> list[Record]:
    formats = benchmark_formats(text)
    if len(formats) > 1:
        raise fail(source, f"the output mixes valkey-/redis-benchmark {' and '.join(formats)}",
                   hint="split it into one file per tool run: parsing one format would silently drop the other")
    if formats == [CSV_FORMAT]:
        return parse_benchmark_csv(text, source=source, tool=tool)
    if formats == [FULL_FORMAT]:
        return parse_benchmark_full(text, source=source, tool=tool)
    if formats == [QUIET_FORMAT]:
        return parse_benchmark_quiet(text, source=source, tool=tool)
    lines = [line.strip() for line in visible_lines(text)]
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
