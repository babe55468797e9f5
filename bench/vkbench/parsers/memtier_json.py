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
#: ``RUN #2 RESULTS``: one run's section, written with --run-count N and --print-all-runs.
RUN_SECTION_RE = re.compile(r"^RUN #\d+ RESULTS$")
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
    _check_run(document, section, source)
    _check_replies(document.get("configuration"), section, source)
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
        if count and latency.get("max") == 0:
            # Requests ran but the row's histogram is empty: memtier 2.3.0 writes the AGGREGATED
            # Totals of --run-count that way (min and max 0, every percentile 0.007). Those are
            # not figures; only the average (recomputed below) is kept.
            latency = {"avg": latency["avg"]} if "avg" in latency else {}
            warnings.append(f"memtier's JSON has no latency distribution for {command} (its histogram is empty): "
                            "only the average is kept; its printed table has the percentiles")
        elif not any(key.startswith("p") for key in latency):
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


def _check_run(document: dict, section: dict, source: str) -> None:
    """What the JSON itself says about a failed run: connection errors, an interrupted run, a
    duration memtier got wrong. With --run-count the AGGREGATED section's Runtime is all zeros
    (memtier 2.3.0 writes no time there): the runs' own sections are checked instead."""
    totals = section.get("Totals")
    if isinstance(totals, dict):
        errors = optional_figure(source, "Connection Errors of Totals", totals.get("Connection Errors"))
        if errors:
            raise fail(source, f"memtier counted {errors:g} connection errors (connection refused or lost)",
                       hint="check that the server runs and listens on that host/port; memtier's stdout has the reason")
    if section is document.get("ALL STATS"):
        timed = [section]
    else:
        timed = [value for key, value in document.items() if RUN_SECTION_RE.match(key) and isinstance(value, dict)]
    for part in timed:
        _check_runtime(part, source)


def _check_runtime(section: dict, source: str) -> None:
    totals = section.get("Totals")
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


#: What memtier's JSON cannot show, said wherever a JSON is judged alone.
JSON_ALONE_NOTE = ("memtier's JSON does not count error replies (READONLY, NOAUTH, MOVED without --cluster-mode): "
                   "memtier only prints them, so give its printed output too (vkbench parse FILE.json --stdout OUTPUT.txt)")
#: Protocols whose replies are RESP: a SET answers ``+OK\r\n``, a GET miss ``$-1\r\n`` (RESP3: ``_\r\n``).
RESP_PROTOCOLS = ("redis", "resp2", "resp3")
OK_REPLY_BYTES = 5
MISS_REPLY_BYTES = 5
#: memtier's KB/sec are KiB (1024 bytes): measured, SETs receive exactly 5 bytes each.
BYTES_PER_KB = 1024
#: Slack over the exact reply size: KB/sec RX and Ops/sec are printed with 2 decimals.
REPLY_SLACK = 1.02
REPLY_SLACK_BYTES_PER_S = 20.0


def _check_replies(configuration: object, section: dict, source: str) -> None:
    """What memtier's JSON shows of error replies, which it otherwise counts as requests (GETs as
    misses) and never reports. Two pieces of evidence:

    * ``MOVED/sec``/``ASK/sec`` (``--cluster-mode`` only) above 0: requests were redirected, so
      the slots moved during the run and the figures include the redirected round trips;
    * the bytes received per request of memtier's own SET/GET workload (``KB/sec RX``): a RESP
      server answers a SET with ``+OK`` (5 bytes) and a GET miss with ``$-1`` (5 bytes), an error
      reply is longer (``-MOVED 5853 127.0.0.1:28501`` about 30, ``-NOAUTH ...`` 34, ``-READONLY ...``
      56). Only rows of the built-in workload are judged (they come with a ``Waits`` row;
      ``--command`` runs have none, and their SET/GET may reply anything), and GETs only when
      none hit (a hit's size depends on who wrote the value)."""
    for row, values in section.items():
        if not isinstance(values, dict):
            continue
        for name in ("MOVED/sec", "ASK/sec"):
            redirects = optional_figure(source, f"{name} of {row}", values.get(name))
            if redirects:
                raise fail(source, f"memtier was redirected {redirects:g} times per second ({name} of {row}) in "
                                   "--cluster-mode: the cluster's slots moved during the run, so the figures include "
                                   "redirected round trips",
                           hint="benchmark a cluster whose slots stay put (no resharding or failover during the run)")
    protocol = configuration.get("protocol") if isinstance(configuration, dict) else None
    if protocol not in RESP_PROTOCOLS or not isinstance(section.get("Waits"), dict):
        return
    for row, command in (("Sets", "SET"), ("Gets", "GET")):
        values = section.get(row)
        if not isinstance(values, dict) or "KB/sec RX" not in values:
            continue
        ops = optional_figure(source, f"Ops/sec of {row}", values.get("Ops/sec"))
        received = optional_figure(source, f"KB/sec RX of {row}", values["KB/sec RX"])
        if not ops or received is None:
            continue
        if row == "Gets":
            hits = optional_figure(source, f"Hits/sec of {row}", values.get("Hits/sec"))
            misses = optional_figure(source, f"Misses/sec of {row}", values.get("Misses/sec"))
            if hits or not misses:
                continue
        expected = OK_REPLY_BYTES if row == "Sets" else MISS_REPLY_BYTES
        per_request = received * BYTES_PER_KB / ops
        if received * BYTES_PER_KB > ops * expected * REPLY_SLACK + REPLY_SLACK_BYTES_PER_S:
            what = "+OK" if row == "Sets" else "a miss ($-1)"
            raise fail(source, f"memtier received {per_request:.1f} bytes per {command} where {what} is {expected}: "
                               f"the server answered {command}s with error replies (MOVED without --cluster-mode, "
                               "READONLY from a replica, NOAUTH without a password), which memtier counts as requests",
                       hint="memtier's stdout names the error ('handle error response: -...'); "
                            "vkbench parse FILE.json --stdout OUTPUT.txt checks both")


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
    """memtier's own measured duration (``Runtime.Total duration``, ms) in seconds, when given.

    With ``--run-count N`` the AGGREGATED section's Runtime is all zeros (memtier 2.3.0): the
    duration is then the sum over the ``RUN #k RESULTS`` sections ``--print-all-runs`` writes,
    so it covers every run, as the client CPU time does (the 1-2 s memtier sleeps between runs
    are in neither). Without those sections it is None: never one run's time for N runs."""
    document = load_memtier_json(text, source=source)
    section, _ = _results_section(document, source)
    if section is document.get("ALL STATS"):
        return _runtime_s(section, source, "Runtime")
    runs = [value for key, value in document.items() if RUN_SECTION_RE.match(key) and isinstance(value, dict)]
    expected = _run_count(document)
    if not runs or (expected is not None and len(runs) != expected):
        return None
    durations = [_runtime_s(run, source, f"Runtime of run {number}") for number, run in enumerate(runs, 1)]
    return sum(durations) if all(durations) else None


def _runtime_s(section: dict, source: str, what: str) -> float | None:
    runtime = section.get("Runtime")
    if not isinstance(runtime, dict) or runtime.get("Total duration") is None:
        return None
    duration = figure(source, f"{what}.Total duration", runtime["Total duration"], allow_zero=True) / 1000
    return duration or None


def _run_count(document: dict) -> int | None:
    """N of ``AGGREGATED AVERAGE RESULTS (N runs)``."""
    for key in document:
        match = re.match(r"^AGGREGATED AVERAGE RESULTS \((\d+) runs?\)", key)
        if match:
            return int(match[1])
    return None


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
