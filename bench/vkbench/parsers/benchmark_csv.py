"""valkey-benchmark / redis-benchmark ``--csv`` output.

Two generations:

* <= 6.0: two columns, no header: ``"SET","145985.41"``
* >= 6.2 (and every valkey-benchmark): a header row
  ``"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",...`` then 8-column rows.

Only lines starting with a double quote are CSV; anything else around them is noise
that real captures contain (cluster header ``Cluster has 3 primary nodes:`` printed
before the CSV, shell prompts, echoed commands, notes). Test names can hold spaces,
parentheses and commas (``"LRANGE_500 (first 450 elements)"``), hence the csv module.
"""

from __future__ import annotations

import csv
import operator
import re

from vkbench.parsers.record import LATENCY_KEYS, Record
from vkbench.parsers.text import (MAX_LATENCY_MS, MAX_RPS, WARNING_RE, fail, figure, iter_visible_lines, latency_dict,
                                  optional_figure, quick_figure, to_float)

HEADER_FIRST_CELL = "test"
_LATENCY_KEYS: dict[str, str | None] = {}   # column -> latency key, memoized (one lookup per row and column)


def _latency_key(column: str) -> str | None:
    """``p50_latency_ms`` -> ``p50``; ``p99.9_latency_ms``/``p999_latency_ms`` -> ``p999``; others -> None."""
    if not column.endswith("_latency_ms"):
        return None
    name = column[: -len("_latency_ms")].replace(".", "")
    return name if name in ("avg", "min", "p50", "p90", "p95", "p99", "p999", "p9999", "max") else None


def parse_benchmark_csv(text: str, *, source: str, tool: str) -> list[Record]:
    """One pass over the lines, no list of them kept: linear time, memory for the records only.

    Rows as the tools print them (every cell quoted, plain figures in range) take a fast path,
    one regex match per row; anything else goes through the csv module and the full checks."""
    warnings: list[str] = []
    header: list[str] | None = None
    fast: _FastRow | None = _FastRow(["test", "rps"])
    records: list[Record] = []
    for line in iter_visible_lines(text):
        stripped = line.strip()
        if not stripped.startswith('"'):
            match = WARNING_RE.match(line)
            if match and f"tool warning: {match['text']}" not in warnings:
                warnings.append(f"tool warning: {match['text']}")
            continue
        record = fast.record(stripped, tool) if fast is not None else None
        if record is not None:
            records.append(record)
            continue
        row = _split(stripped, header)
        if row[0] == HEADER_FIRST_CELL:
            header = _checked_header(row, source)
            fast = _FastRow(header)
            continue
        records.append(_record(row, header, source=source, tool=tool, warnings=[]))
    if not records:
        raise fail(source, "no benchmark results found (CSV output without any result row)")
    if warnings:
        for record in records:   # a warning printed anywhere in the output concerns every row
            record.warnings = list(warnings)
    return records


class _FastRow:
    """The common row, parsed with one regex: ``"NAME","1.0",...`` with exactly the header's
    cells, a name without quotes, and every figure a plain decimal. It returns None for
    everything else (and for figures out of range), which the checked path then reports."""

    def __init__(self, header: list[str]) -> None:
        self.regex = re.compile('"([^"]*)"' + ',"(\\d{1,12}(?:\\.\\d{1,12})?)"' * (len(header) - 1))
        rps_at = header.index("rps")
        last_column_of = {}
        latency_columns = 0
        for index, column in enumerate(header):
            key = _latency_key(column)
            if key and index > 0:
                last_column_of[key] = index   # a later column with the same key wins, as in _record
                latency_columns += 1
        # Two columns for one key (p999_latency_ms and p99.9_latency_ms): the checked path checks
        # both cells, this one would only see the last, so such a header never takes it.
        shared_key = latency_columns != len(last_column_of)
        # latency keys in LATENCY_KEYS order, as latency_dict() would order them
        keys = [key for key in LATENCY_KEYS if key in last_column_of]
        self.latency_keys = tuple(keys)
        # the latency cells as a tuple, in that order (itemgetter of one index returns the bare cell)
        self.latency_cells = operator.itemgetter(*[last_column_of[key] for key in keys], 0) if keys else None
        self.rps_group = rps_at if rps_at > 0 and not shared_key else None   # None: every row takes the checked path

    def record(self, line: str, tool: str) -> Record | None:
        if self.rps_group is None:
            return None
        match = self.regex.fullmatch(line)
        if match is None:
            return None
        cells = match.groups()
        name = cells[0]
        if name == HEADER_FIRST_CELL:
            return None
        rps = float(cells[self.rps_group])
        if not 0 < rps <= MAX_RPS:
            return None
        latency = {}
        if self.latency_cells is not None:
            latency = dict(zip(self.latency_keys, map(float, self.latency_cells(cells)[:-1])))
            if max(latency.values()) > MAX_LATENCY_MS:
                return None
        return Record(command=name, rps=rps, latency_ms=latency, tool=tool, warnings=[])


def _split(line: str, header: list[str] | None) -> list[str]:
    """The cells of one CSV line. redis-benchmark prints a custom command's title unescaped
    (``"SET k {"a":1,"b":2}",...``): when the csv module finds more cells than the header has,
    the figures are taken from the right and everything before them is the test name. A name
    that itself splits into whole quoted cells (``"SET","1000"``) is a row with one cell too
    many, not a title: that row is refused (the caller's column check)."""
    row = next(csv.reader([line]))
    width = len(header) if header else 2
    if row[0] != HEADER_FIRST_CELL and len(row) > width and line.endswith('"'):
        parts = line.rsplit(",", width - 1)
        name, figures = parts[0], parts[1:]
        if '","' not in name and name.startswith('"') and name.endswith('"') and len(name) >= 2 and all(
                len(f) >= 2 and f.startswith('"') and f.endswith('"') for f in figures):
            return [name[1:-1], *(f[1:-1] for f in figures)]
    return row


def _checked_header(row: list[str], source: str) -> list[str]:
    if "rps" not in row:
        raise fail(source, f"CSV header without an rps column: {row!r}",
                   hint="this is not valkey-/redis-benchmark --csv output, or its header was changed")
    if len(set(row)) != len(row):
        raise fail(source, f"CSV header with a repeated column: {row!r}")
    return row


def _record(row: list[str], header: list[str] | None, *, source: str, tool: str, warnings: list[str]) -> Record:
    if header is None:
        if len(row) != 2:
            raise fail(source, f"CSV row with {len(row)} columns but no header row: {row!r}"[:300],
                       hint="the header line was lost; keep the whole --csv output")
        header = ["test", "rps"]
    if len(row) < len(header):
        raise fail(source, f"truncated CSV row ({len(row)} of {len(header)} columns): {row!r}"[:300])
    if len(row) > len(header):
        raise fail(source, f"CSV row with {len(row)} columns, more than its header's {len(header)}: {row!r}"[:300],
                   hint="an extra field is not a figure vkbench can place; keep the tool's own --csv output unedited")
    values = dict(zip(header, row))
    rps = quick_figure(values["rps"])
    if rps is None:
        if to_float(values["rps"]) is None:
            raise fail(source, f"CSV row for {row[0]!r} has no numeric rps: {values['rps']!r}"[:300])
        rps = figure(source, f"rps of {row[0]!r}", values["rps"])
    latency = {}
    for column, raw in values.items():
        key = _LATENCY_KEYS.get(column) if column in _LATENCY_KEYS else _LATENCY_KEYS.setdefault(column, _latency_key(column))
        if key:
            value = quick_figure(raw, latency=True)
            latency[key] = value if value is not None else optional_figure(source, f"{column} of {row[0]!r}", raw, latency=True)
    return Record(command=row[0], rps=rps, latency_ms=latency_dict(latency), tool=tool, warnings=list(warnings))
