"""Compare two sets of results cell by cell (medians, % change, interval, verdict).

Cells are matched by their dimensions minus version, build and runner, so comparing
``valkey:9.0.0`` results with ``valkey:9.1.2`` results of the same matrix works, and so does
base vs candidate of the same version built from two commits.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from .errors import UsageError
from .parsers.record import LATENCY_KEYS
from .results.io import load_result, result_files
from .servers.source_build import config_differences
from .stats import compare_samples

METRICS = ("rps",) + LATENCY_KEYS
#: Below this relative change nothing is called better or worse, however tight the samples.
MIN_EFFECT = 0.02

_IGNORED_FOR_MATCH = {"version", "runner", "repetitions"}


@dataclass
class Row:
    key: str                  # readable description of the cell
    command: str
    metric: str
    base: float
    candidate: float
    change: float
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    verdict: str
    base_label: str
    candidate_label: str
    flagged: bool


def _match_key(result: dict) -> tuple:
    dims = {k: v for k, v in result["dimensions"].items() if k not in _IGNORED_FOR_MATCH}
    return tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in dims.items()))


def _describe(result: dict) -> str:
    d = result["dimensions"]
    return f"{d['topology']} io{d['io_threads']} P{d['pipeline']} c{d['clients']} d{d['data_size']} {d['tool']}"


def _label(result: dict) -> str:
    subject = result["subject"]
    return f"{subject['engine']}:{subject.get('server_version') or subject['version']}"


def _load_dir(path: Path) -> dict[tuple, dict]:
    files = result_files([path])
    if not files:
        raise UsageError(f"{path}: no result files", hint="pass the --out directory of a `vkbench run`")
    out: dict[tuple, dict] = {}
    for f in files:
        result = load_result(f)
        out[_match_key(result)] = result
    return out


def compare_dirs(base_dir: Path, candidate_dir: Path, *, metrics: tuple[str, ...] = METRICS) -> tuple[list[Row], list[str]]:
    """Rows for every metric of every command present in both; plus the cells found in only one."""
    base, cand = _load_dir(base_dir), _load_dir(candidate_dir)
    unmatched = [f"only in {base_dir}: {_describe(base[k])}" for k in base if k not in cand]
    unmatched += [f"only in {candidate_dir}: {_describe(cand[k])}" for k in cand if k not in base]
    rows: list[Row] = []
    for key in [k for k in base if k in cand]:
        b, c = base[key], cand[key]
        flagged = not (b["validity"]["valid"] and c["validity"]["valid"])
        for command in b["summary"]:
            if command not in c["summary"]:
                continue
            for metric in metrics:
                bs, cs = b["summary"][command].get(metric), c["summary"][command].get(metric)
                if not bs or not cs:
                    continue
                cmp = compare_samples(bs["samples"], cs["samples"], bigger_is_better=(metric == "rps"), min_effect=MIN_EFFECT)
                rows.append(Row(_describe(b), command, metric, cmp.base_median, cmp.candidate_median, cmp.change,
                                cmp.ci_low, cmp.ci_high, cmp.p_value, cmp.verdict, _label(b), _label(c), flagged))
    if not rows:
        raise UsageError("no cell of the two directories matches",
                         hint="compare results of the same matrix (same topology, io-threads, pipeline, clients, data size, tool)")
    return rows, unmatched


def build_warnings(base_dir: Path, candidate_dir: Path) -> list[str]:
    """One line per pair of matched cells whose source builds differ in configuration (allocator,
    compiler, flags): their difference is not the code's alone."""
    base, cand = _load_dir(base_dir), _load_dir(candidate_dir)
    seen: set[tuple] = set()
    out = []
    for key in [k for k in base if k in cand]:
        a = (base[key]["subject"].get("build") or {}).get("config")
        b = (cand[key]["subject"].get("build") or {}).get("config")
        if not a or not b or a.get("id") == b.get("id"):
            continue
        diffs = tuple(config_differences(a, b))
        if diffs and diffs not in seen:
            seen.add(diffs)
            out.append("build configurations differ (" + "; ".join(diffs) + ")")
    return out


def rows_to_json(rows: list[Row], unmatched: list[str], warnings: list[str] | None = None) -> dict:
    return {"rows": [asdict(r) for r in rows], "unmatched": unmatched, "warnings": warnings or []}
