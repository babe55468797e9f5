"""github-action-benchmark's custom formats.

``rps.json`` for ``tool: customBiggerIsBetter`` and ``latency.json`` for
``customSmallerIsBetter``: arrays of ``{"name", "unit", "value", "range", "extra"}`` (the
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
from ..history.series import series_key, unique_names
from ..files import write_json
from ..results.io import load_result

LATENCY_EXPORTED = ("p50", "p99")


@dataclass
class GabExport:
    rps: list[dict] = field(default_factory=list)
    latency: list[dict] = field(default_factory=list)
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
        for command in result["summary"]:
            sid, dims = series_key(result, command)
            known = latest.get(sid)
            if known is None or known[0]["run"]["timestamp"] < result["run"]["timestamp"]:
                latest[sid] = (result, dims, command)
    names = unique_names({sid: dims for sid, (_, dims, _) in latest.items()})
    for sid in sorted(latest, key=lambda s: names[s]):
        result, _, command = latest[sid]
        stats = result["summary"][command]
        if "rps" in stats:
            s = stats["rps"]
            export.rps.append({"name": names[sid], "unit": "rps", "value": round(s["median"], 2), "range": _range(s), "extra": _extra(result, s)})
        for metric in LATENCY_EXPORTED:
            if metric in stats:
                s = stats[metric]
                export.latency.append({"name": f"{names[sid]} {metric}", "unit": "ms", "value": round(s["median"], 4), "range": _range(s), "extra": _extra(result, s)})
    return export


def write_gab(result_paths: Iterable[str | os.PathLike], out_dir: str | os.PathLike) -> GabExport:
    export = build_gab(result_paths)
    out = Path(out_dir)
    write_json(out / "rps.json", export.rps, indent=1)
    write_json(out / "latency.json", export.latency, indent=1)
    export.files = [out / "rps.json", out / "latency.json"]
    return export
