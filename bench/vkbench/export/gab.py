"""github-action-benchmark's custom formats.

``rps.json`` for ``tool: customBiggerIsBetter``, ``latency.json`` and ``counts.json`` (instructions
per operation, "instructions/op", and memory per key after the preload, "bytes/key": both smaller
is better, docs/instructions.md) for ``customSmallerIsBetter``: arrays of ``{"name", "unit", "value", "range", "extra"}`` (the
fields its extractCustomBenchmarkResult keeps). Names are the series' readable names
(``SET standalone io2 P16 c50 d3 valkey:9.1.2 [cloud-x86]``), stable across runs and unique
within a file, because github-action-benchmark keys its charts by name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..history.ingest import input_files
from ..history.series import series_commands, series_key, unique_names
from ..files import write_json
from ..results.io import load_result

LATENCY_EXPORTED = ("p50", "p99")


@dataclass
class GabExport:
    rps: list[dict] = field(default_factory=list)
    latency: list[dict] = field(default_factory=list)
    counts: list[dict] = field(default_factory=list)
    skipped_invalid: int = 0
    files: list[Path] = field(default_factory=list)


def _range(stat: dict) -> str:
    low, high = stat.get("ci_low"), stat.get("ci_high")
    if low is None or high is None:
        return "± 0"
    return f"± {(high - low) / 2:.4g}"


def _extra(result: dict, stat: dict) -> str:
    run = result["run"]
    bits = [f"run {run['run_id']}", f"n={stat.get('n')}"]
    if stat.get("cv") is not None:
        bits.append(f"cv={stat['cv']:.2%}")
    commit = result["subject"].get("commit")
    if commit:
        bits.append(f"commit {commit[:12]}")
    flags = [f["code"] for f in result["validity"].get("flags", [])]
    if flags:
        bits.append("flags " + ",".join(flags))
    return "; ".join(bits)


def build_gab(result_paths: Iterable[str | os.PathLike]) -> GabExport:
    export = GabExport()
    latest: dict[str, tuple[dict, dict, str]] = {}       # sid -> (result, dims, command)
    for path in input_files(result_paths):
        result = load_result(path)
        if not result["validity"]["valid"]:
            export.skipped_invalid += 1
            continue
        for command in series_commands(result):      # wall-clock commands, then counted-only ones
            sid, dims = series_key(result, command)
            known = latest.get(sid)
            if known is None or known[0]["run"]["timestamp"] < result["run"]["timestamp"]:
                latest[sid] = (result, dims, command)
    names = unique_names({sid: dims for sid, (_, dims, _) in latest.items()})
    for sid in sorted(latest, key=lambda s: names[s]):
        result, _, command = latest[sid]
        stats = (result.get("summary") or {}).get(command, {})
        if "rps" in stats:
            s = stats["rps"]
            export.rps.append({"name": names[sid], "unit": "rps", "value": round(s["median"], 2), "range": _range(s), "extra": _extra(result, s)})
        for metric in LATENCY_EXPORTED:
            if metric in stats:
                s = stats[metric]
                export.latency.append({"name": f"{names[sid]} {metric}", "unit": "ms", "value": round(s["median"], 4), "range": _range(s), "extra": _extra(result, s)})
        export.counts += _count_entries(result, command, names[sid])
    return export


def _count_entries(result: dict, command: str, name: str) -> list[dict]:
    """instructions/op of the command (the code count as ``instructions/op (code)`` where the
    result has it, the total as ``instructions/op``) and bytes/key of its cell (the method id in
    ``extra``: a method change makes another series on the site, here it is at least said)."""
    out = []
    block = result.get("instructions") or {}
    entry = (block.get("commands") or {}).get(command.lower())
    method = (block.get("method") or {}).get("id")
    if entry and entry.get("code_per_op") is not None:
        # The code count (without libc's alignment-sensitive string routines): a series of its own
        # name, so github-action-benchmark never draws it on the totals' line.
        out.append(_count_entry(f"{name} instructions/op (code)", entry, "code_per_op", "code_per_server",
                                "code_cv_servers_pct", result, method))
    if entry and entry.get("per_op") is not None:
        # The total keeps its name: the same quantity as before the split.
        out.append(_count_entry(f"{name} instructions/op", entry, "per_op", "per_server", "cv_servers_pct",
                                result, method))
    memory = result.get("memory") or {}
    if memory.get("bytes_per_key") is not None:
        out.append({"name": f"{name} bytes/key", "unit": "bytes/key", "value": round(float(memory["bytes_per_key"]), 3),
                    "range": "± 0", "extra": _extra(result, {"n": 1}) + f"; {memory.get('keys')} keys"})
    return out


def _count_entry(name: str, entry: dict, median_key: str, per_server_key: str, cv_key: str, result: dict,
                 method: str | None) -> dict:
    values = entry.get(per_server_key) or [entry[median_key]]
    half = (max(values) - min(values)) / 2
    extra = _extra(result, {"n": len(values), "cv": (entry.get(cv_key) or 0) / 100 or None})
    return {"name": name, "unit": "instructions/op", "value": round(float(entry[median_key]), 2),
            "range": f"± {half:.4g}", "extra": f"{extra}; method {method}" if method else extra}


def write_gab(result_paths: Iterable[str | os.PathLike], out_dir: str | os.PathLike) -> GabExport:
    export = build_gab(result_paths)
    out = Path(out_dir)
    write_json(out / "rps.json", export.rps, indent=1)
    write_json(out / "latency.json", export.latency, indent=1)
    export.files = [out / "rps.json", out / "latency.json"]
    if export.counts:       # written only when there are counts: existing exports stay two files
        write_json(out / "counts.json", export.counts, indent=1)
        export.files.append(out / "counts.json")
    return export
