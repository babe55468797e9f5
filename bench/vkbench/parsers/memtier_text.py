"""memtier_benchmark text output (stdout or ``--out-file``).

The result is a table under a section title::

    ALL STATS
    ==========...
    Type         Ops/sec     Hits/sec   Misses/sec    Avg. Latency     p50 Latency  ...  KB/sec
    ----------...
    Sets        33141.71          ---          ---         0.37555         0.32700  ...  2261.93
    Totals    1298838.80    974127.97  ...

Columns depend on version and flags (1.2 has one ``Latency`` column; ``--cluster-mode``
adds ``MOVED/sec ASK/sec``; ``--print-percentiles`` chooses the pNN columns). So the
header names are mapped to positions and rows are split on whitespace, never by
fixed widths: a 7-digit value (``Totals    1298838.80``) eats its column padding.
``---`` means "no value". With ``--run-count`` memtier prints BEST/WORST/AGGREGATED
tables (and with ``--print-all-runs`` one per run): we take AGGREGATED. A file holding several complete runs yields the records
of every run (dispatch flags repeated commands). A row cut short means a truncated file.
"""

from __future__ import annotations

import re

from vkbench.parsers.cdf import derived_warning, percentiles_from_cdf
from vkbench.parsers.memtier_rows import TOOL, command_name, percentile_key, wanted_row
from vkbench.parsers.record import Record
from vkbench.parsers.text import fail, latency_dict, optional_figure, visible_lines

HEADER_RE = re.compile(r"^\s*Type\s+Ops/sec\s")
PERCENTILE_COLUMN_RE = re.compile(r"^p(?P<level>\d+(?:\.\d+)?) Latency$")
CDF_LINE_RE = re.compile(r"^(?P<command>[A-Z]+)\s+(?P<ms>\d+(?:\.\d+)?)\s+(?P<pct>\d+(?:\.\d+)?)$")
#: With --run-count memtier also prints BEST/WORST tables, and with --print-all-runs one table per
#: run (``RUN #2 RESULTS``): AGGREGATED is the result, those are its parts.
SKIPPED_SECTIONS = re.compile(r"^(?:BEST RUN RESULTS|WORST RUN RESULTS|RUN #\d+ RESULTS)")
#: Table columns kept beside rps and latency (``---`` = not applicable, e.g. Hits/sec of Sets).
EXTRA_COLUMNS = {"Hits/sec": "hits_per_s", "Misses/sec": "misses_per_s", "KB/sec": "kb_per_s"}


def looks_like_memtier_text(text: str) -> bool:
    if "Ops/sec" not in text:   # cheap test first: outputs can be megabytes
        return False
    return any(HEADER_RE.match(line) for line in visible_lines(text))


def parse_memtier_text(text: str, *, source: str) -> list[Record]:
    lines = visible_lines(text)
    header_rows = [index for index, line in enumerate(lines) if HEADER_RE.match(line)]
    records: list[Record] = []
    for number, header_row in enumerate(header_rows):
        section = _section_title(lines, header_row)
        if SKIPPED_SECTIONS.match(section):
            continue
        next_header = header_rows[number + 1] if number + 1 < len(header_rows) else len(lines)
        records += _table_records(lines[header_row:next_header], section, source)
    if not records:
        raise fail(source, "no benchmark results found (memtier table without any exercised command)")
    return records


def _section_title(lines: list[str], header_row: int) -> str:
    """The title above the ``=====`` rule above the header (``ALL STATS``, ``AGGREGATED ...``)."""
    for line in reversed(lines[max(0, header_row - 5):header_row]):
        if line.strip() and set(line.strip()) != {"="}:
            return line.strip()
    return ""


def _columns(header: str) -> list[str]:
    """Header words, re-joining the two-word names (``Avg. Latency``, ``p99.9 Latency``)."""
    columns: list[str] = []
    for word in header.split():
        if word == "Latency" and columns and (columns[-1] == "Avg." or re.fullmatch(r"p[\d.]+", columns[-1])):
            columns[-1] += " Latency"
        else:
            columns.append(word)
    return columns


def _latency_key(column: str) -> str | None:
    if column in ("Latency", "Avg. Latency"):
        return "avg"
    match = PERCENTILE_COLUMN_RE.match(column)
    return percentile_key(match["level"]) if match else None


def _table_records(chunk: list[str], section: str, source: str) -> list[Record]:
    """``chunk``: from this table's header to the next table's header (its CDF lies in between)."""
    columns = _columns(chunk[0])
    if len(set(columns)) != len(columns) or "Type" not in columns:
        raise fail(source, f"memtier table header with repeated columns: {chunk[0].strip()[:120]!r}")
    rows: list[dict[str, str]] = []
    body = chunk[2:] if len(chunk) > 1 and chunk[1].strip().startswith("---") else chunk[1:]
    for line in body:
        words = line.split()
        if not words or not words[0].isalpha():
            break
        if len(words) != len(columns):
            raise fail(source, f"truncated: memtier row {line.strip()!r} has {len(words)} of {len(columns)} columns",
                       hint="the memtier output was cut short; re-run it and keep the whole output")
        rows.append(dict(zip(columns, words)))
        if words[0] == "Totals":
            break   # the last row: what follows may be any text (memtier's stderr lines, a document)
    if not any(row["Type"] == "Totals" for row in rows):
        raise fail(source, f"truncated: the memtier {section or 'results'} table has no Totals row")

    has_percentiles = any(PERCENTILE_COLUMN_RE.match(column) for column in columns)
    cdfs = {} if has_percentiles else _distributions(chunk)
    notes = []
    if section.startswith("AGGREGATED"):
        notes.append(f"memtier ran several times (--run-count); values are its {section}")
    records = []
    for row in rows:
        name = row["Type"]
        latency = {key: optional_figure(source, f"{col} of {name}", raw, latency=True)
                   for col, raw in row.items() if (key := _latency_key(col))}
        latency = latency_dict(latency)
        rps = optional_figure(source, f"Ops/sec of {name}", row["Ops/sec"])
        if not wanted_row(name, rps, latency, source=source):
            continue
        command = command_name(name)
        warnings = list(notes)
        derived = percentiles_from_cdf(cdfs.get(command, []))
        if derived:
            latency = latency_dict({**latency, **derived})
            warnings.append(derived_warning("memtier's Request Latency Distribution"))
        extra = {field: optional_figure(source, f"{column} of {name}", row[column])
                 for column, field in EXTRA_COLUMNS.items() if column in row}
        records.append(Record(command=command, rps=rps, latency_ms=latency, tool=TOOL, warnings=warnings, **extra))
    return records


def _distributions(chunk: list[str]) -> dict[str, list[tuple[float, float]]]:
    """``SET 0.250 1.00`` lines (command, <= msec, cumulative percent) keyed by command."""
    found: dict[str, list[tuple[float, float]]] = {}
    for line in chunk:
        if match := CDF_LINE_RE.match(line.strip()):
            found.setdefault(match["command"], []).append((float(match["ms"]), float(match["pct"])))
    return found
