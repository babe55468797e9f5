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
from .evidence import TARGET_MDE  # a verdict needs the repetitions' Welch MDE at or below it
from .parsers.record import LATENCY_KEYS
from .results.io import load_result, result_files
from .servers.source_build import PER_BUILD_FIELDS
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
    mde: float | None = None


def _match_key(result: dict) -> tuple:
    dims = {k: v for k, v in result["dimensions"].items() if k not in _IGNORED_FOR_MATCH}
    return tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in dims.items()))


def _describe(result: dict) -> str:
    d = result["dimensions"]
    return f"{d['topology']} io{d['io_threads']} P{d['pipeline']} c{d['clients']} d{d['data_size']} {d['tool']}"


def _label(result: dict) -> str:
    subject = result["subject"]
    return f"{subject['engine']}:{subject.get('server_version') or subject['version']}"


def _side(name: str, result: dict) -> str:
    """``base valkey:unstable``: the side, and the version as asked (the label shows what it reports)."""
    return f"{name} {result['subject']['engine']}:{result['subject']['version']}"


def _load_dir(path: Path) -> dict[tuple, dict]:
    files = result_files([path])
    if not files:
        raise UsageError(f"{path}: no result files", hint="pass the --out directory of a `vkbench run`")
    out: dict[tuple, dict] = {}
    for f in files:
        result = load_result(f)
        out[_match_key(result)] = result
    return out


def compare_dirs(base_dir: Path, candidate_dir: Path, *, metrics: tuple[str, ...] = METRICS,
                 target_mde: float | None = TARGET_MDE) -> tuple[list[Row], list[str]]:
    """Rows for every metric of every command present in both; plus the cells found in only one.
    A row's verdict stands only when its Welch MDE reached ``target_mde`` (else "inconclusive")."""
    if target_mde is not None and not 0 < target_mde < 1:
        raise UsageError(f"--target-mde {target_mde}: not a fraction between 0 and 1", hint="e.g. --target-mde 0.02 (2%)")
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
                cmp = compare_samples(bs["samples"], cs["samples"], bigger_is_better=(metric == "rps"), min_effect=MIN_EFFECT,
                                      target_mde=target_mde)
                rows.append(Row(_describe(b), command, metric, cmp.base_median, cmp.candidate_median, cmp.change,
                                cmp.ci_low, cmp.ci_high, cmp.p_value, cmp.verdict, _label(b), _label(c), flagged, cmp.mde))
    if not rows:
        raise UsageError("no cell of the two directories matches",
                         hint="compare results of the same matrix (same topology, io-threads, pipeline, clients, data size, tool)")
    return rows, unmatched


#: Fields of a recorded build configuration that are not the configuration itself: per-build
#: values, and a release's note on what it cannot vouch for.
_NOT_CONFIG = PER_BUILD_FIELDS | {"unknown"}


def config_warning(a: dict | None, b: dict | None, a_label: str, b_label: str) -> str | None:
    """What a reader of a comparison must know about the two sides' build configurations: the
    known fields that differ (``malloc: 'libc' vs 'jemalloc'``), and where a side's configuration
    is unknown, wholly (a binary given by path, a registry image, an old result) or in part (a
    release: only its allocator is known). None when both are recorded and the same."""
    if a and b and a.get("id") is not None and a.get("id") == b.get("id"):
        return None
    if not a and not b:
        return (f"build configuration unknown for both sides ({a_label}, {b_label}): a difference may come from "
                "how they were built (allocator, compiler, flags), not from the code")
    if not a or not b:
        known, label = (b, a_label) if not a else (a, b_label)
        malloc = f" (the other side: malloc={known['malloc']})" if known.get("malloc") else ""
        return (f"build configuration unknown for {label}: cannot tell whether the builds differ in allocator, "
                f"compiler or flags{malloc}")
    keys = sorted((set(a) | set(b)) - _NOT_CONFIG)
    differ = [f"{k}: {a[k]!r} vs {b[k]!r}" for k in keys if k in a and k in b and a[k] != b[k]]
    unknown = [(label, [k for k in keys if k not in mine]) for label, mine in ((a_label, a), (b_label, b))]
    unknown = [f"{label}: {', '.join(fields)}" for label, fields in unknown if fields]
    parts = []
    if differ:
        parts.append("build configurations differ (" + "; ".join(differ) + ")")
    if unknown:
        parts.append("build configuration unknown in part (" + "; ".join(unknown) + ")")
    return "; ".join(parts) or None


def build_warnings(base_dir: Path, candidate_dir: Path) -> list[str]:
    """One line per distinct build-configuration difference between matched cells (allocator,
    compiler, flags), or per side whose configuration is unknown: the difference between the
    two sides may then not be the code's alone. Two runs of the same binary need no warning."""
    base, cand = _load_dir(base_dir), _load_dir(candidate_dir)
    out: list[str] = []
    for key in [k for k in base if k in cand]:
        a_build = base[key]["subject"].get("build") or {}
        b_build = cand[key]["subject"].get("build") or {}
        if a_build.get("id") and a_build.get("id") == b_build.get("id") and a_build.get("config") == b_build.get("config"):
            continue    # the same binary
        warning = config_warning(a_build.get("config"), b_build.get("config"), _side("base", base[key]),
                                 _side("candidate", cand[key]))
        if warning and warning not in out:
            out.append(warning)
    return out


def rows_to_json(rows: list[Row], unmatched: list[str], warnings: list[str] | None = None) -> dict:
    return {"rows": [asdict(r) for r in rows], "unmatched": unmatched, "warnings": warnings or []}
