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
from vkbench.parsers.text import fail, figure, latency_dict, optional_figure, strip_bom

# A JSON string (kept as is), a comma before a closing bracket (dropped), or a bare
# non-finite number (-> null). Matching strings first keeps "nan" inside a string,
# e.g. a base64 histogram, untouched. The string alternative is "unrolled" (runs of plain
# characters, then one escape) so it does not step through an alternation per character.
REPAIR_RE = re.compile(
    r'(?P<string>"[^"\\]*(?:\\.[^"\\]*)*")'
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


#: memtier's JSON is a few levels deep; anything deeper is not memtier's and is refused.
MAX_DEPTH = 64
EXTRA_FIELDS = {"Hits/sec": "hits_per_s", "Misses/sec": "misses_per_s", "KB/sec": "kb_per_s"}
TOO_DEEP = f"JSON nested deeper than {MAX_DEPTH} levels: this is not memtier's --json-out-file"


def _depth_ok(document: object) -> bool:
    """Container nesting of a loaded document stays within MAX_DEPTH. Linear, no recursion."""
    pending = [(document, 1)]
    while pending:
        value, depth = pending.pop()
        children = value.values() if isinstance(value, dict) else value
        for child in children:
            if isinstance(child, (dict, list)):
                if depth + 1 > MAX_DEPTH:
                    return False
                pending.append((child, depth + 1))
    return True


def _not_a_number(_: str) -> None:
    """json's own NaN/Infinity spellings become null, as memtier's nan/inf do."""
    return None


def load_memtier_json(text: str, *, source: str) -> dict:
    """The JSON document memtier wrote, repaired (nan, trailing commas), as a dict; or ParseError.

    Strict JSON is loaded as it is (json.loads is linear and C-fast); only a document json
    refuses is repaired with REPAIR_RE and loaded again."""
    text = strip_bom(text)
    try:
        try:
            document = json.loads(text, parse_constant=_not_a_number)
        except json.JSONDecodeError:
            document = json.loads(repair_memtier_json(text), parse_constant=_not_a_number)
    except json.JSONDecodeError as exc:
        raise fail(source, f"memtier JSON cannot be read ({exc.msg} at line {exc.lineno}); truncated?",
                   hint="the JSON file was cut short or is not memtier's --json-out-file") from None
    except RecursionError:
        raise fail(source, TOO_DEEP) from None
    except ValueError as exc:   # e.g. an integer of more than 4300 digits
        raise fail(source, f"memtier JSON cannot be read: {str(exc)[:120]}") from None
    if not isinstance(document, dict):
        raise fail(source, "no benchmark results found (JSON is not a memtier result object)")
    if not _depth_ok(document):
        raise fail(source, TOO_DEEP)
    return document


def parse_memtier_json(text: str, *, source: str) -> list[Record]:
    document = load_memtier_json(text, source=source)
    section, notes = _results_section(document, source)
    _check_run(section, source)
    records = []
    counts: dict[str, float] = {}
    for row, values in section.items():
        if not isinstance(values, dict) or "Ops/sec" not in values:
            continue  # "Runtime", or a distribution array
        latency = _row_latency(values, row, source)
        rps = optional_figure(source, f"Ops/sec of {row}", values["Ops/sec"])
        count = _count(values, row, source)
        if not wanted_row(row, rps, latency, source=source, count=count):
            continue
        command = command_name(row)
        warnings = list(notes)
        if not any(key.startswith("p") for key in latency):
            derived = percentiles_from_cdf(_distribution(section.get(command)))
            if derived:
                latency = {**latency, **derived}
                warnings.append(derived_warning(f"memtier's {command} latency distribution (<=msec/percent)"))
        extra = {field: optional_figure(source, f"{name} of {row}", values.get(name))
                 for name, field in EXTRA_FIELDS.items() if name in values}
        if count is not None:
            counts[command] = count
        records.append(Record(command=command, rps=rps, latency_ms=latency_dict(latency),
                              tool=TOOL, warnings=warnings, **extra))
    if not records:
        raise fail(source, "no benchmark results found (memtier JSON without any exercised command)")
    _fix_totals_average(records, counts)
    return records


def _count(values: dict, row: str, source: str) -> int | None:
    raw = values.get("Count")
    if raw is None:
        return None
    return int(figure(source, f"Count of {row}", raw, allow_zero=True))


def _check_run(section: dict, source: str) -> None:
    """What the JSON itself says about a failed run: connection errors, an interrupted run."""
    totals = section.get("Totals")
    if isinstance(totals, dict):
        errors = optional_figure(source, "Connection Errors of Totals", totals.get("Connection Errors"))
        if errors:
            raise fail(source, f"memtier counted {errors:g} connection errors (connection refused or lost)",
                       hint="check that the server runs and listens on that host/port; memtier's stdout has the reason")
    runtime = section.get("Runtime")
    duration = runtime.get("Total duration") if isinstance(runtime, dict) else None
    count = totals.get("Count") if isinstance(totals, dict) else None
    if isinstance(duration, (int, float)) and not isinstance(duration, bool) and duration <= 0 \
            and isinstance(count, int) and count > 0:
        raise fail(source, f"memtier measured a duration of {duration} ms for {count} requests, so its ops/sec are "
                           "wrong (memtier 2.3.0 averages client timestamps badly on runs under a few seconds)",
                   hint="use vkbench's memtier build (tools/setup/memtier.sh carries the fix), "
                        "or raise requests so the run lasts several seconds")
    if isinstance(runtime, dict) and str(runtime.get("Interrupted", "false")).lower() == "true":
        raise fail(source, "memtier was interrupted (Runtime.Interrupted is true): the figures cover part of a run",
                   hint="re-run it and let it finish")


def _fix_totals_average(records: list[Record], counts: dict[str, float]) -> None:
    """memtier 2.3.0 writes the Totals average truncated to whole milliseconds (and 0 with
    --run-count): recompute it from the per-command rows, which carry microseconds."""
    totals = next((r for r in records if r.command == "TOTALS"), None)
    commands = [r for r in records if r.command != "TOTALS" and "avg" in r.latency_ms]
    if totals is None or not commands:
        return
    weights = [counts.get(r.command, r.rps) for r in commands]
    if sum(weights) <= 0:
        return
    average = sum(r.latency_ms["avg"] * w for r, w in zip(commands, weights)) / sum(weights)
    latency = dict(totals.latency_ms)
    latency["avg"] = round(average, 6)
    totals.latency_ms = latency_dict(latency)


def memtier_duration_s(text: str, *, source: str) -> float | None:
    """memtier's own measured duration (``Runtime.Total duration``, ms) in seconds, when given."""
    document = load_memtier_json(text, source=source)
    section, _ = _results_section(document, source)
    runtime = section.get("Runtime")
    if not isinstance(runtime, dict) or runtime.get("Total duration") is None:
        return None
    duration = figure(source, "Runtime.Total duration", runtime["Total duration"], allow_zero=True) / 1000
    return duration or None


def _results_section(document: dict, source: str) -> tuple[dict, list[str]]:
    if isinstance(document.get("ALL STATS"), dict):
        return document["ALL STATS"], []
    for key, value in document.items():
        if key.startswith("AGGREGATED AVERAGE RESULTS") and isinstance(value, dict):
            return value, [f"memtier ran several times (--run-count); values are its {key}"]
    raise fail(source, "no benchmark results found (memtier JSON has neither 'ALL STATS' nor 'AGGREGATED AVERAGE RESULTS')")


def _row_latency(values: dict, row: str, source: str) -> dict[str, float]:
    latency: dict[str, float | None] = {}
    average = next((values[name] for name in AVERAGE_FIELDS if values.get(name) is not None), None)
    latency["avg"] = optional_figure(source, f"Average Latency of {row}", average, latency=True)
    for name, key in ROW_LATENCY_FIELDS.items():
        latency[key] = optional_figure(source, f"{name} of {row}", values.get(name), latency=True)
    percentiles = values.get("Percentile Latencies") or {}
    if not isinstance(percentiles, dict):
        raise fail(source, f"'Percentile Latencies' of {row} is not an object")
    for name, value in percentiles.items():
        key = percentile_key(name[1:]) if name.startswith("p") else None
        if key and latency.get(key) is None:  # p100 only stands in for a missing Max Latency
            latency[key] = optional_figure(source, f"{name} of {row}", value, latency=True)
    return latency_dict(latency)


def _distribution(array: object) -> list[tuple[float, float]]:
    if not isinstance(array, list):
        return []
    return [(float(point["<=msec"]), float(point["percent"])) for point in array
            if isinstance(point, dict) and _plain(point.get("<=msec")) and _plain(point.get("percent"))]


def _plain(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e12
