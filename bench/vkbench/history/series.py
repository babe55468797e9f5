"""What a series is (see docs/history-format.md): its key, its points, its segments.

Everything that decides *identity* lives here so the store, detection, export and the site
agree on it by importing these functions instead of re-deriving them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..bidi import isolate
from ..stats import summarize

#: Dimensions that do not identify a series: repetitions only change precision, and the runner
#: label is replaced by ``run.machine_class`` (the same thing, as recorded by the run).
NON_SERIES_DIMENSIONS = ("repetitions", "runner")
#: The server under test. An A/B comparison (ab.py) pairs cells that differ only in these.
SERVER_DIMENSIONS = ("engine", "version")
#: How long or how much a cell measures (precision, not what is measured). A workload in the
#: io-threads advice (advise.py) spans them, together with the io_threads it compares.
EXTENT_DIMENSIONS = ("requests", "duration", "warmup")

#: Metric names in a series line. ``rps`` is bigger-is-better; every latency key (ms) is
#: smaller-is-better.
THROUGHPUT_METRICS = ("rps",)
LATENCY_METRICS = ("avg", "min", "p50", "p95", "p99", "p999", "max")
#: Counted, not timed (docs/instructions.md): instructions per operation of the command (the
#: result's ``instructions`` block) and bytes of memory per key after the preload (its
#: ``memory`` block). All are smaller-is-better. ``instructions_per_op`` is the code count (the
#: total without libc's alignment-sensitive string routines) wherever the result's method counts
#: it (``counted: "code"``), the total in older results, whose method id differs (a segment
#: boundary); ``instructions_per_op_total`` is the total (in every counted point, older ones too),
#: recorded and charted beside it, not detected (its spread across fresh servers is the string
#: routines', not the code's).
COUNT_METRICS = ("instructions_per_op", "instructions_per_op_total", "bytes_per_key")
#: Recorded and charted, never detected on.
UNDETECTED_METRICS = ("instructions_per_op_total",)
METRICS = THROUGHPUT_METRICS + LATENCY_METRICS + COUNT_METRICS


def bigger_is_better(metric: str) -> bool:
    return metric in THROUGHPUT_METRICS


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def identity_dimensions(result: dict, *, ignoring: tuple[str, ...] = ()) -> dict:
    """The result's dimensions that identify what it measured: all but NON_SERIES_DIMENSIONS,
    and but ``ignoring`` (what a caller compares across, e.g. SERVER_DIMENSIONS). The one
    definition of "dimensions that are not the workload" for series, ab and advise."""
    left_out = NON_SERIES_DIMENSIONS + ignoring
    return {k: v for k, v in result["dimensions"].items() if k not in left_out}


def series_dims(result: dict, command: str) -> dict:
    dims = identity_dimensions(result)
    dims["command"] = command
    dims["machine_class"] = result["run"]["machine_class"]
    return dims


def sid_of(dims: dict) -> str:
    """First 16 hex digits of sha256 of the canonical JSON of the dims."""
    return hashlib.sha256(canonical_json(dims).encode("utf-8")).hexdigest()[:16]


def series_key(result: dict, command: str) -> tuple[str, dict]:
    """``(sid, dims)`` of the series that ``command`` of this result belongs to."""
    dims = series_dims(result, command)
    return sid_of(dims), dims


def series_commands(result: dict) -> list[str]:
    """The commands of a result that feed a series: every command of ``summary`` (wall clock),
    then every command that only has an instruction count (``instructions.commands`` names them
    in lower case; the series uses the upper-case name, so a ``both`` cell's counts land in the
    same series as its rps)."""
    commands = list(result.get("summary") or {})
    counted = ((result.get("instructions") or {}).get("commands") or {})
    for name in counted:
        upper = name.upper()
        if upper not in commands:
            commands.append(upper)
    return commands


def _count_metrics(result: dict, command: str) -> dict:
    metrics: dict = {}
    counted = ((result.get("instructions") or {}).get("commands") or {})
    entry = counted.get(command.lower()) or counted.get(command)
    if entry and entry.get("per_op") is not None:
        total = _count_stats(entry, "per_op", "per_server")
        method = (result.get("instructions") or {}).get("method") or {}
        if method.get("counted") == "code":
            if entry.get("code_per_op") is None:
                raise ValueError(f"the instruction count of {command} has counted: code but no code_per_op")
            metrics["instructions_per_op"] = _count_stats(entry, "code_per_op", "code_per_server")
            metrics["instructions_per_op_total"] = total
        else:
            # A result from before the split: its method id has no ``counted``, so these points
            # are a segment of their own (segment_key), never compared with code counts. The
            # total is the total either way: its own chart runs on across the switch.
            metrics["instructions_per_op"] = total
            metrics["instructions_per_op_total"] = dict(total)
    bytes_per_key = (result.get("memory") or {}).get("bytes_per_key")
    if bytes_per_key is not None:
        metrics["bytes_per_key"] = summarize([bytes_per_key])
    return metrics


def _count_stats(entry: dict, median_key: str, per_server_key: str) -> dict:
    stats = summarize(entry.get(per_server_key) or [entry[median_key]])
    stats["median"] = float(entry[median_key])     # the result's own figure (median over servers)
    return stats


def instructions_method(result: dict, command: str) -> str | None:
    """Method id of the command's instruction count, or None (no count for it)."""
    block = result.get("instructions") or {}
    counted = block.get("commands") or {}
    if command.lower() in counted or command in counted:
        return (block.get("method") or {}).get("id")
    return None


def month_of(timestamp: str) -> str:
    """``YYYY-MM`` of an ISO 8601 UTC timestamp (the shard and runs/ folder of a point)."""
    return timestamp[:7]


def point_from_result(result: dict, command: str) -> dict:
    """One series line, in the key order of the documented example."""
    run, subject, env = result["run"], result["subject"], result["environment"]
    build = subject.get("build") or {}
    validity = result["validity"]
    stats = (result.get("summary") or {}).get(command, {})
    metrics = {name: dict(stats[name]) for name in METRICS if name in stats}
    metrics.update(_count_metrics(result, command))
    method = instructions_method(result, command)
    return {
        "run_id": run["run_id"],
        "cell_id": run["cell_id"],
        "timestamp": run["timestamp"],
        "version": result["dimensions"]["version"],
        "server_version": subject.get("server_version"),
        "commit": subject.get("commit"),
        "build_id": build.get("id"),
        "fingerprint_id": env["fingerprint_id"],
        "valid": bool(validity["valid"]),
        "flags": [flag["code"] for flag in validity.get("flags", [])],
        "workflow_run_url": run.get("workflow_run_url"),
        "metrics": metrics,
        # A different method id means counts that are not comparable: a segment boundary.
        **({"instructions_method": method} if method else {}),
        # Source builds: where the commit lives and how it was built (absent for releases).
        **({"repository": subject["code"]["url"]} if (subject.get("code") or {}).get("url") else {}),
        **({"build_config": build["config"]["id"]} if (build.get("config") or {}).get("id") else {}),
    }


def sort_key(point: dict) -> tuple[str, str]:
    return (point["timestamp"], point["run_id"])


def segment_key(point: dict) -> str | None:
    """What must stay equal within a segment: the environment fingerprint and, for points with
    an instruction count, its method id (a method change is a boundary, never a regression).
    Points without a count have exactly their fingerprint id, as before."""
    fp = point.get("fingerprint_id")
    method = point.get("instructions_method")
    return f"{fp}|instructions:{method}" if method else fp


def segments(points: list[dict]) -> list[dict]:
    """Segments of a sorted point list: a new segment wherever :func:`segment_key` differs from
    the previous point's (A B A is three segments: the return to A is a new environment event
    too)."""
    out: list[dict] = []
    previous = object()
    for i, point in enumerate(points):
        key = segment_key(point)
        if not out or key != previous:
            seg = {"start_index": i, "fingerprint_id": point.get("fingerprint_id")}
            if point.get("instructions_method"):
                seg["instructions_method"] = point["instructions_method"]
            out.append(seg)
        previous = key
    return out


def describe(dims: dict, *, with_version: bool = True, with_machine: bool = True) -> str:
    """Readable, stable one-line name: ``SET standalone io2 P16 c50 d3 valkey:9.1.2 [cloud-x86]``.

    Dimensions that are at their usual value are still written when they are part of the
    short form so names stay stable when defaults change; rarer dimensions are appended only
    when set, which keeps names short yet unique (see :func:`unique_names`)."""
    # the free-text parts isolated (vkbench.bidi): a right-to-left name cannot reorder the rest
    parts = [isolate(dims.get("command", "?")), str(dims.get("topology", "?"))]
    parts.append(f"io{dims.get('io_threads', '?')}")
    parts.append(f"P{dims.get('pipeline', '?')}")
    parts.append(f"c{dims.get('clients', '?')}")
    parts.append(f"d{dims.get('data_size', '?')}")
    if dims.get("client_threads"):
        parts.append(f"t{dims['client_threads']}")
    if dims.get("read_from") not in (None, "primary"):
        parts.append(f"from-{dims['read_from']}")
    if dims.get("tool") not in (None, "valkey-benchmark"):
        parts.append(str(dims["tool"]))
    if with_version:
        parts.append(f"{dims.get('engine', '?')}:{isolate(dims.get('version', '?'))}")
    name = " ".join(parts)
    if with_machine:
        name += f" [{isolate(dims.get('machine_class', '?'))}]"
    return name


def unique_names(dims_by_sid: dict[str, dict]) -> dict[str, str]:
    """:func:`describe` for each series, with ``#<sid[:6]>`` appended where two series would
    otherwise share a name (they differ in a dimension the short form leaves out)."""
    names = {sid: describe(dims) for sid, dims in dims_by_sid.items()}
    counts: dict[str, int] = {}
    for name in names.values():
        counts[name] = counts.get(name, 0) + 1
    return {sid: (f"{name} #{sid[:6]}" if counts[name] > 1 else name) for sid, name in names.items()}
