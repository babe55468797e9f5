"""Which functions' instructions per operation changed between two counted results.

Two sources, best first:

1. **callgrind dumps** kept beside each result (``<cell_id>.raw/callgrind/callgrind-seed<S>-<command>.out.gz``,
   the first window of every server, listed in ``instructions.servers[].dumps``; ingest copies them into
   the history's ``runs/``). Dumps of the same seed are compared (the hash seed changes which
   command-table entries a lookup compares, so only equal seeds are comparable) and the per-function
   self costs per operation are averaged over the seeds both sides have.
2. Without dumps on both sides: the results' own ``top_functions`` (the 20 functions with the most
   self instructions per operation over all windows). Coarser: a function outside either top 20 is
   missing, and the rows say where they come from.

Used by detection (an incident's ``instruction_diff``, shown in the issue body and on the site), by
``tools/instruction_diff.py``, and by ``vkbench ab --instrument instructions`` (:func:`self_cost_diff` of
the self costs summed over every window of every seed pair, :mod:`vkbench.ab_counts`).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import ParseError, ResultFileError
from ..results.io import load_result
from .callgrind import add_costs, function_diff, read_any, self_cost_diff

#: Rows of the "which functions changed" table kept per incident.
DIFF_ROWS = 10
_DUMP_NAME = re.compile(r"^callgrind-seed(?P<seed>\d{1,9})-(?P<command>[a-z0-9_-]{1,40})\.out(?:\.gz)?$")


@dataclass
class InstructionDiff:
    command: str
    source: str                      # "callgrind dumps" | "top functions"
    seeds: list[int] = field(default_factory=list)
    total_before: float | None = None      # instructions per op of the compared windows (dumps), else the results'
    total_after: float | None = None
    rows: list[dict] = field(default_factory=list)   # {function, before, after, delta} per op

    def to_dict(self) -> dict:
        return asdict(self)


def dumps_of(result_path: Path, result: dict, command: str) -> dict[int, Path]:
    """``{seed: dump}`` of one command kept beside a result file (only names vkbench writes)."""
    block = result.get("instructions") or {}
    raw = Path(result_path).parent / f"{result['run']['cell_id']}.raw" / "callgrind"
    out: dict[int, Path] = {}
    for server in block.get("servers") or []:
        for name in server.get("dumps") or []:
            match = _DUMP_NAME.match(str(name))
            if match and match["command"] == command.lower() and (raw / name).is_file():
                out[int(match["seed"])] = raw / name
    return out


def _window_requests(result: dict) -> int | None:
    method = (result.get("instructions") or {}).get("method") or {}
    value = method.get("window_requests")
    return int(value) if isinstance(value, int) and value > 0 else None


def diff_dumps(before: dict[int, Path], after: dict[int, Path], *, before_ops: int, after_ops: int,
               command: str, limit: int | None = DIFF_ROWS) -> InstructionDiff | None:
    """Mean over the seeds both sides have of each function's self instructions per op."""
    seeds = sorted(set(before) & set(after))
    if not seeds:
        return None
    sums: dict[str, list[float]] = {}
    total_b = total_a = 0.0
    for seed in seeds:
        b, a = read_any(before[seed]), read_any(after[seed])
        total_b += b.total() / before_ops
        total_a += a.total() / after_ops
        for row in function_diff(b, a, before_ops=before_ops, after_ops=after_ops, limit=None):
            acc = sums.setdefault(row["function"], [0.0, 0.0])
            acc[0] += row["before"]
            acc[1] += row["after"]
    n = len(seeds)
    rows = [{"function": fn, "before": round(b / n, 3), "after": round(a / n, 3), "delta": round((a - b) / n, 3)}
            for fn, (b, a) in sums.items() if round((a - b) / n, 3) != 0]
    rows.sort(key=lambda r: (-abs(r["delta"]), r["function"]))
    return InstructionDiff(command.upper(), "callgrind dumps", seeds, round(total_b / n, 3), round(total_a / n, 3),
                           rows[:limit] if limit else rows)


def diff_top_functions(before: dict, after: dict, command: str, *, limit: int | None = DIFF_ROWS) -> InstructionDiff | None:
    """From the results' ``top_functions`` (no dumps): functions in either top list."""
    def table(result: dict) -> tuple[dict[str, float], float | None] | None:
        entry = ((result.get("instructions") or {}).get("commands") or {}).get(command.lower())
        if not entry or not entry.get("top_functions"):
            return None
        return {r["function"]: float(r["self_per_op"]) for r in entry["top_functions"]}, entry.get("per_op")

    b, a = table(before), table(after)
    if b is None or a is None:
        return None
    rows = []
    for fn in set(b[0]) | set(a[0]):
        vb, va = b[0].get(fn, 0.0), a[0].get(fn, 0.0)
        if round(va - vb, 3) != 0:
            rows.append({"function": fn, "before": round(vb, 3), "after": round(va, 3), "delta": round(va - vb, 3)})
    rows.sort(key=lambda r: (-abs(r["delta"]), r["function"]))
    return InstructionDiff(command.upper(), "top functions", [], b[1], a[1], rows[:limit] if limit else rows)


def diff_results(before_path: Path, after_path: Path, command: str, *, limit: int | None = DIFF_ROWS) -> InstructionDiff | None:
    """The function-level difference of one command between two result files: from their kept
    dumps when both sides have one of the same seed, else from their top functions; None when
    neither side has an instruction count of the command."""
    before, after = load_result(before_path), load_result(after_path)
    ops_b, ops_a = _window_requests(before), _window_requests(after)
    if ops_b and ops_a:
        try:
            found = diff_dumps(dumps_of(before_path, before, command), dumps_of(after_path, after, command),
                               before_ops=ops_b, after_ops=ops_a, command=command, limit=limit)
        except ParseError:
            found = None            # a damaged dump: the top functions still say something
        if found is not None:
            return found
    return diff_top_functions(before, after, command, limit=limit)


def to_markdown(diff: InstructionDiff | dict, *, before_label: str = "before", after_label: str = "after") -> str:
    """A table of the functions that changed most (values from result files: escaped)."""
    from .. import markdown as md

    data = diff.to_dict() if isinstance(diff, InstructionDiff) else diff
    cells = [[md.code(r["function"]), f"{r['before']:,.2f}", f"{r['after']:,.2f}", f"{r['delta']:+,.2f}"]
             for r in data.get("rows") or []]
    if not cells:
        return "No function's instructions per operation changed.\n"
    before, after = md.text(before_label), md.text(after_label)
    lines = md.table(["function", f"{before} (instr/op)", f"{after} (instr/op)", "change"], "lrrr", cells)
    return "\n".join(lines) + "\n"


def describe_source(diff: InstructionDiff | dict) -> str:
    data = diff.to_dict() if isinstance(diff, InstructionDiff) else diff
    if data.get("source") == "callgrind dumps":
        seeds = ", ".join(str(s) for s in data.get("seeds") or [])
        return f"self instructions per {data.get('command')}, callgrind dumps of the same seeds ({seeds}), mean over seeds"
    return (f"self instructions per {data.get('command')}, from the results' top functions "
            "(no callgrind dumps on both sides: functions outside either top 20 are missing)")


def attach_instruction_diffs(store, incidents: list[dict], change_points: list[dict], series_index: dict) -> None:
    """Add ``instruction_diff`` (an :class:`InstructionDiff` dict plus ``series_id``) to every incident
    whose instructions per operation moved: the function-level difference of the last good and the
    first bad run of its most affected instruction series, when the history kept both results."""
    from ..history.series import month_of

    by_incident: dict[str, list[dict]] = {}
    for cp in change_points:
        if cp.get("metric") in ("instructions_per_op", "instructions_per_op_total") and cp.get("incident_id"):
            by_incident.setdefault(cp["incident_id"], []).append(cp)
    for incident in incidents:
        members = sorted(by_incident.get(incident["id"], []), key=lambda cp: -abs(cp.get("magnitude") or 0.0))
        for cp in members:
            sid = cp["series_id"]
            if sid not in series_index:
                continue
            by_run = {p.get("run_id"): p for p in store.points_of_runs(sid, series_index[sid], (cp["good"], cp["bad"]))}
            sides = [by_run.get(cp["good"].get("run_id")), by_run.get(cp["bad"].get("run_id"))]
            if not all(sides):
                continue
            paths = [store.run_dir(month_of(p["timestamp"]), p["run_id"]) / f"{p['cell_id']}.json" for p in sides]
            if not all(path.is_file() for path in paths):
                continue
            command = str(series_index[sid]["dims"].get("command", ""))
            try:
                found = diff_results(paths[0], paths[1], command)
            except (ParseError, ResultFileError, OSError, ValueError):
                found = None
            if found is not None:
                incident["instruction_diff"] = {"series_id": sid, **found.to_dict()}
                break


__all__ = ["DIFF_ROWS", "add_costs", "self_cost_diff", "attach_instruction_diffs", "InstructionDiff", "describe_source", "diff_dumps", "diff_results", "diff_top_functions",
           "dumps_of", "to_markdown"]
