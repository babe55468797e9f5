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

from vkbench.parsers.record import Record
from vkbench.parsers.text import fail, latency_dict, to_float, tool_warnings, visible_lines

HEADER_FIRST_CELL = "test"


def _latency_key(column: str) -> str | None:
    """``p50_latency_ms`` -> ``p50``; ``p99.9_latency_ms``/``p999_latency_ms`` -> ``p999``; others -> None."""
    if not column.endswith("_latency_ms"):
        return None
    name = column[: -len("_latency_ms")].replace(".", "")
    return name if name in ("avg", "min", "p50", "p95", "p99", "p999", "max") else None


def parse_benchmark_csv(text: str, *, source: str, tool: str) -> list[Record]:
    lines = visible_lines(text)
    warnings = tool_warnings(lines)
    header: list[str] | None = None
    records: list[Record] = []
    for line in lines:
        stripped = line.strip()
        if not stripped.startswith('"'):
            continue
        row = next(csv.reader([stripped]))
        if row[0] == HEADER_FIRST_CELL:
            header = row
            continue
        records.append(_record(row, header, source=source, tool=tool, warnings=warnings))
    if not records:
        raise fail(source, "no benchmark results found (CSV output without any result row)")
    return records


def _record(row: list[str], header: list[str] | None, *, source: str, tool: str, warnings: list[str]) -> Record:
    if header is None:
        if len(row) != 2:
            raise fail(source, f"CSV row with {len(row)} columns but no header row: {row!r}",
                       hint="the header line was lost; keep the whole --csv output")
        header = ["test", "rps"]
    if len(row) != len(header):
        raise fail(source, f"truncated CSV row ({len(row)} of {len(header)} columns): {row!r}")
    values = dict(zip(header, row))
    rps = to_float(values["rps"])
    if rps is None:
        raise fail(source, f"CSV row for {row[0]!r} has no numeric rps: {values['rps']!r}")
    latency = {_latency_key(column): to_float(raw) for column, raw in values.items() if _latency_key(column)}
    return Record(command=row[0], rps=rps, latency_ms=latency_dict(latency), tool=tool, warnings=list(warnings))
