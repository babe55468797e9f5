"""memtier_benchmark ``--json-out-file`` output.

Results sit under ``ALL STATS`` or, with ``--run-count N``, under ``BEST RUN RESULTS``,
``WORST RUN RESULTS`` and ``AGGREGATED AVERAGE RESULTS (N runs)``: we take AGGREGATED
and say so. Rows (``Sets``, ``Gets``, ``Msets``, ``Totals``...) carry ``Ops/sec`` and
``Latency``/``Average Latency``, newer ones ``Min Latency``/``Max Latency`` and
``Percentile Latencies`` (``p50.00``...). Older files only have cumulative arrays
(``"SET": [{"<=msec": 0.25, "percent": 1.0}, ...]``), from which p50/p95/p99 are derived.

memtier writes printf output, not a JSON serializer's: ``-nan``/``nan``/``inf`` appear
as bare values. They are replaced with ``null`` before parsing, and a null value is
left out of the record, never filled in. Duplicate keys are legal input to json.loads
(the last one wins, as it is the last memtier wrote).
"""

from __future__ import annotations

import json
import re

from vkbench.parsers.cdf import derived_warning, percentiles_from_cdf
from vkbench.parsers.memtier_rows import TOOL, command_name, percentile_key, wanted_row
from vkbench.parsers.record import Record
from vkbench.parsers.text import fail, latency_dict, strip_bom

# A JSON string (kept as is), a comma before a closing bracket (dropped), or a bare
# non-finite number (-> null). Matching strings first keeps "nan" inside a string,
# e.g. a base64 histogram, untouched.
REPAIR_RE = re.compile(
    r'(?P<string>"(?:[^"\\]|\\.)*")'
    r"|(?P<trailing_comma>,)(?=\s*[}\]])"
    r"|(?P<non_finite>-?\b(?:nan|inf(?:inity)?)\b)",
    re.IGNORECASE,
)
ROW_LATENCY_FIELDS = {"Min Latency": "min", "Max Latency": "max"}
AVERAGE_FIELDS = ("Average Latency", "Latency")


def repair_memtier_json(text: str) -> str:
    def fix(match: re.Match[str]) -> str:
        if match["string"]:
            return match["string"]
        return "" if match["trailing_comma"] else "null"

    return REPAIR_RE.sub(fix, text)


def parse_memtier_json(text: str, *, source: str) -> list[Record]:
    try:
        # parse_constant: json's own NaN/Infinity spellings become null too.
        document = json.loads(repair_memtier_json(strip_bom(text)), parse_constant=lambda _: None)
    except json.JSONDecodeError as exc:
        raise fail(source, f"memtier JSON cannot be read ({exc.msg} at line {exc.lineno}); truncated?",
                   hint="the JSON file was cut short or is not memtier's --json-out-file") from None
    if not isinstance(document, dict):
        raise fail(source, "no benchmark results found (JSON is not a memtier result object)")
    section, notes = _results_section(document, source)
    records = []
    for row, values in section.items():
        if not isinstance(values, dict) or "Ops/sec" not in values:
            continue  # "Runtime", or a distribution array
        latency = _row_latency(values)
        rps = values["Ops/sec"]
        if not wanted_row(row, rps, latency, source=source):
            continue
        command = command_name(row)
        warnings = list(notes)
        if not any(key.startswith("p") for key in latency):
            derived = percentiles_from_cdf(_distribution(section.get(command)))
            if derived:
                latency = {**latency, **derived}
                warnings.append(derived_warning(f"memtier's {command} latency distribution (<=msec/percent)"))
        records.append(Record(command=command, rps=float(rps), latency_ms=latency_dict(latency),
                              tool=TOOL, warnings=warnings))
    if not records:
        raise fail(source, "no benchmark results found (memtier JSON without any exercised command)")
    return records


def _results_section(document: dict, source: str) -> tuple[dict, list[str]]:
    if isinstance(document.get("ALL STATS"), dict):
        return document["ALL STATS"], []
    for key, value in document.items():
        if key.startswith("AGGREGATED AVERAGE RESULTS") and isinstance(value, dict):
            return value, [f"memtier ran several times (--run-count); values are its {key}"]
    raise fail(source, "no benchmark results found (memtier JSON has neither 'ALL STATS' nor 'AGGREGATED AVERAGE RESULTS')")


def _row_latency(values: dict) -> dict[str, float]:
    latency: dict[str, float | None] = {}
    latency["avg"] = next((values[name] for name in AVERAGE_FIELDS if values.get(name) is not None), None)
    for name, key in ROW_LATENCY_FIELDS.items():
        latency[key] = values.get(name)
    for name, value in (values.get("Percentile Latencies") or {}).items():
        key = percentile_key(name[1:]) if name.startswith("p") else None
        if key and latency.get(key) is None:  # p100 only stands in for a missing Max Latency
            latency[key] = value
    return latency_dict({key: float(v) for key, v in latency.items() if isinstance(v, (int, float))})


def _distribution(array: object) -> list[tuple[float, float]]:
    if not isinstance(array, list):
        return []
    return [(float(point["<=msec"]), float(point["percent"])) for point in array
            if isinstance(point, dict) and isinstance(point.get("<=msec"), (int, float))
            and isinstance(point.get("percent"), (int, float))]
