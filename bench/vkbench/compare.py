"""Compare two sets of results cell by cell (medians, % change, interval, verdict).

Cells are matched by their dimensions minus version, build and runner, so comparing
``valkey:9.0.0`` results with ``valkey:9.1.2`` results of the same matrix works, and so does
base vs candidate of the same version built from two commits.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from scipy import stats as st

from .errors import UsageError
from .evidence import TARGET_MDE  # a verdict needs the repetitions' Welch MDE at or below it
from .parsers.record import LATENCY_KEYS
from .results.io import load_result, result_files
from .servers.source_build import PER_BUILD_FIELDS
from .evidence import adequate, inconclusive
from .history.series import identity_dimensions
from .stats import POWER, Comparison, compare_samples
from .verdicts import BETTER, NO_SIGNIFICANT_CHANGE, WORSE

#: Counted metrics (docs/instructions.md), lower is better for both: instructions per operation
#: (per seed: fresh server i runs with seed i on both sides, so the servers pair up) and memory per
#: key after the preload (one value per cell: its row's command is "-"). ``instructions_per_op``
#: is the code count (the total without libc's alignment-sensitive string routines,
#: instruments.split) when both sides have it; ``instructions_per_op_total`` the total.
COUNT_METRICS = ("instructions_per_op", "instructions_per_op_total", "bytes_per_key")
METRICS = ("rps",) + LATENCY_KEYS + COUNT_METRICS
#: Below this relative change nothing is called better or worse, however tight the samples.
MIN_EFFECT = 0.02
#: ...for instructions per operation: the count method's precision (detection's count floor, 0.1 %).
COUNT_MIN_EFFECT = 0.001
#: ...for memory per key, one value a side: fresh servers differ by up to 0.8 % (60.0-60.5 bytes at
#: 10,000 keys, docs/instructions.md), so only a change past 1 % is called.
MEMORY_MIN_EFFECT = 0.01

#: Two results match when they measured the same series on any version of one engine.
_ACROSS = ("version",)


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
    dims = identity_dimensions(result, ignoring=_ACROSS)
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
        rows += count_rows(b, c, metrics, flagged=flagged, target_mde=target_mde)
    if not rows:
        raise UsageError("no cell of the two directories matches",
                         hint="compare results of the same matrix (same topology, io-threads, pipeline, clients, data size, tool)")
    return rows, unmatched


def _per_seed(result: dict, command: str, per_server_key: str = "per_server") -> dict[int, float]:
    """``{seed: instructions per op}`` of one command: server i of the block ran seed ``servers[i].seed``
    (``per_server_key`` "code_per_server": the code count)."""
    block = result.get("instructions") or {}
    entry = (block.get("commands") or {}).get(command.lower()) or {}
    values = entry.get(per_server_key) or []
    seeds = [s.get("seed") for s in block.get("servers") or []]
    if len(seeds) != len(values) or len(set(seeds)) != len(seeds):
        seeds = list(range(1, len(values) + 1))        # no seed record: servers in order
    return {int(seed): float(v) for seed, v in zip(seeds, values) if v}


def paired_counts(base: dict[int, float], candidate: dict[int, float], *, alpha: float = 0.05,
                  target_mde: float | None = TARGET_MDE) -> Comparison:
    """Instructions per op of two results, seed by seed (the same seed on both sides: the seed's own
    effect on a command-table lookup cancels): mean of the per-seed log ratios, its t interval and
    p-value, the MDE (power 80 %), and a verdict that needs p < alpha and a change of at least
    :data:`COUNT_MIN_EFFECT`. Lower is better."""
    seeds = sorted(set(base) & set(candidate))
    b = np.asarray([base[s] for s in seeds], dtype=float)
    c = np.asarray([candidate[s] for s in seeds], dtype=float)
    bm, cm = (float(np.median(b)), float(np.median(c))) if seeds else (0.0, 0.0)
    ratios = np.log(c / b) if seeds else np.empty(0)
    mean = float(ratios.mean()) if len(ratios) else 0.0
    change = math.expm1(mean)
    low = high = p_value = mde = None
    if len(ratios) >= 2:
        se = float(ratios.std(ddof=1)) / math.sqrt(len(ratios))
        df = len(ratios) - 1
        t_crit = float(st.t.ppf(1 - alpha / 2, df))
        if se == 0:
            p_value = 0.0 if mean else 1.0
        else:
            p_value = float(2 * st.t.sf(abs(mean / se), df))
        low, high = math.expm1(mean - t_crit * se), math.expm1(mean + t_crit * se)
        mde = math.expm1((t_crit + float(st.t.ppf(POWER, df))) * se)
    if not adequate(mde, target_mde):
        verdict = inconclusive(mde, target_mde, unit="seeds (servers) per side")
    elif p_value is None or p_value >= alpha or abs(change) < COUNT_MIN_EFFECT:
        verdict = NO_SIGNIFICANT_CHANGE
    else:
        verdict = WORSE if change > 0 else BETTER
    return Comparison(bm, cm, change, low, high, p_value, verdict, mde)


def memory_comparison(base: float, candidate: float) -> Comparison:
    """Memory per key, one value a side: no interval; past :data:`MEMORY_MIN_EFFECT` it is a verdict."""
    change = (candidate - base) / base if base else 0.0
    verdict = NO_SIGNIFICANT_CHANGE if abs(change) < MEMORY_MIN_EFFECT else (WORSE if change > 0 else BETTER)
    return Comparison(base, candidate, change, None, None, None, verdict, None)


def count_rows(base: dict, candidate: dict, metrics: tuple[str, ...], *, flagged: bool,
               target_mde: float | None = TARGET_MDE) -> list[Row]:
    """Rows of the counted metrics of one matched cell (none when a side has no count)."""
    rows: list[Row] = []
    b_cmds = ((base.get("instructions") or {}).get("commands") or {})
    c_cmds = ((candidate.get("instructions") or {}).get("commands") or {})
    b_tool = ((base.get("instructions") or {}).get("method") or {}).get("tool")
    c_tool = ((candidate.get("instructions") or {}).get("method") or {}).get("tool")
    if b_tool != c_tool:
        # Counted by callgrind on one side and by perf on the other: callgrind takes the timer
        # work out and perf cannot, so the difference would be the tools', never the server's.
        b_cmds = c_cmds = {}
    for command in [k for k in b_cmds if k in c_cmds]:
        mixed = not _has_code(b_cmds[command], c_cmds[command]) and \
            any(e.get("code_per_server") for e in (b_cmds[command], c_cmds[command]))
        for metric, key in _count_sources(b_cmds[command], c_cmds[command]):
            # One side with a code count only: its totals stand in the instructions_per_op row's place.
            asked = metric in metrics or (mixed and "instructions_per_op" in metrics)
            if not asked:
                continue
            cmp = paired_counts(_per_seed(base, command, key), _per_seed(candidate, command, key),
                                target_mde=target_mde)
            if not cmp.base_median:
                continue
            rows.append(Row(_describe(base), command.upper(), metric, cmp.base_median,
                            cmp.candidate_median, cmp.change, cmp.ci_low, cmp.ci_high, cmp.p_value, cmp.verdict,
                            _label(base), _label(candidate), flagged, cmp.mde))
    b_mem, c_mem = (base.get("memory") or {}).get("bytes_per_key"), (candidate.get("memory") or {}).get("bytes_per_key")
    if "bytes_per_key" in metrics and b_mem and c_mem:
        cmp = memory_comparison(float(b_mem), float(c_mem))
        rows.append(Row(_describe(base), "-", "bytes_per_key", cmp.base_median, cmp.candidate_median, cmp.change,
                        None, None, None, cmp.verdict, _label(base), _label(candidate), flagged, None))
    return rows


def _has_code(base_entry: dict, candidate_entry: dict) -> bool:
    return bool(base_entry.get("code_per_server")) and bool(candidate_entry.get("code_per_server"))


def _count_sources(base_entry: dict, candidate_entry: dict) -> list[tuple[str, str]]:
    """``(metric, per-server field)`` of the instruction rows of one command. Both sides with a
    code count: ``instructions_per_op`` is the code count, ``instructions_per_op_total`` the
    total. Neither (results from before the split): ``instructions_per_op`` is the total, as it
    was. One side only: the totals, named ``instructions_per_op_total`` (and shown when
    ``instructions_per_op`` is asked for), never a code count set against a total."""
    if _has_code(base_entry, candidate_entry):
        return [("instructions_per_op", "code_per_server"), ("instructions_per_op_total", "per_server")]
    if base_entry.get("code_per_server") or candidate_entry.get("code_per_server"):
        return [("instructions_per_op_total", "per_server")]
    return [("instructions_per_op", "per_server")]


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
