"""The instruction-count side of an A/B: seed pairs under callgrind, instructions per operation
and memory per key compared per command, and the functions whose counts moved.

A *pair* is one fresh base server and one fresh candidate server started with the same seed
(docs/instructions.md: the seed fixes the dict hash seed, so a command-table collision costs the
same on both sides); pairs use different seeds (1, 2, 3, ...), so a change that only shows for
some seeds is averaged, not hidden. Counts are deterministic to 0.01-0.02 % per server, so the
paired differences of 3 pairs already give an interval of a few hundredths of a percent, on any
machine, loaded or not: wall-clock noise does not enter.

Each row compares absolute instructions per operation (candidate - base, mean of the pairs, a
t interval over the pairs) and states it relative to the base too; the MDE is two-sided 5 %,
power 80 %, and a verdict ("more instructions" / "fewer instructions") is given only when the
MDE reached is at or below the target (:mod:`vkbench.evidence`).
"""

from __future__ import annotations

import math
import secrets
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from scipy import stats as st

from . import markdown as md
from .errors import UsageError
from .evidence import adequate, inconclusive, is_inconclusive
from .instruments.diff import add_costs, self_cost_diff
from .instruments.method import InstructionsMethod
from .matrix.model import Cell, instructions_refusal
from .verdicts import (FEWER_INSTRUCTIONS, LESS_MEMORY, MORE_INSTRUCTIONS, MORE_MEMORY, NO_CHANGE,
                       NO_SIGNIFICANT_CHANGE)

Progress = Callable[[str], None]

#: The MDE an instruction A/B must reach for a verdict: 0.5 %. 3 pairs of 4 x 5,000 requests
#: reached 0.25-0.31 % at -c 1 -P 1 here (docs/instructions.md); a 0.3 % change is then seen when
#: its interval excludes zero.
INSTRUCTIONS_TARGET_MDE = 0.005
DEFAULT_PAIRS = 3
#: Windows per command per server and the largest window (the nightly's, runner.execute).
WINDOWS = 4
WINDOW_REQUESTS = 20000
#: Functions listed per row.
TOP_CHANGED = 8
POWER = 0.8

METRIC_INSTRUCTIONS = "instructions_per_op"
METRIC_MEMORY = "bytes_per_key"
MORE, FEWER, SAME = MORE_INSTRUCTIONS, FEWER_INSTRUCTIONS, NO_SIGNIFICANT_CHANGE   # the words: vkbench.verdicts


@dataclass
class Paired:
    """Paired differences candidate - base: mean, t interval, MDE, all absolute."""
    delta: float
    low: float | None
    high: float | None
    mde: float | None

    @classmethod
    def of(cls, base: list[float], candidate: list[float]) -> Paired:
        diffs = [c - b for b, c in zip(base, candidate)]
        n = len(diffs)
        if n == 0:
            return cls(0.0, None, None, None)
        mean = statistics.fmean(diffs)
        if n < 2:
            return cls(mean, None, None, None)
        se = statistics.stdev(diffs) / math.sqrt(n)
        t_crit, t_power = float(st.t.ppf(0.975, n - 1)), float(st.t.ppf(POWER, n - 1))
        return cls(mean, mean - t_crit * se, mean + t_crit * se, (t_crit + t_power) * se)


def pairs_needed(base: list[float], candidate: list[float], target_abs: float) -> int | None:
    """Pairs for an MDE of ``target_abs`` at the spread of these differences (normal approximation)."""
    diffs = [c - b for b, c in zip(base, candidate)]
    if len(diffs) < 2 or target_abs <= 0:
        return None
    sd = statistics.stdev(diffs)
    z = float(st.norm.ppf(0.975) + st.norm.ppf(POWER))
    return max(len(diffs), math.ceil((z * sd / target_abs) ** 2))


@dataclass
class CountRow:
    cell: str
    command: str
    base: float                   # instructions per operation, median over the base servers
    candidate: float
    delta: float                  # candidate - base per operation, mean of the pairs
    delta_low: float | None       # its 95 % t interval
    delta_high: float | None
    change: float                 # delta relative to the base (+0.003 = 0.3 % more instructions)
    ci_low: float | None
    ci_high: float | None
    mde: float | None             # relative
    rounds: int                   # seed pairs
    verdict: str                  # "more instructions" | "fewer instructions" | "no significant change" | "inconclusive: ..."
    rounds_for_target: int | None = None
    base_values: list[float] = field(default_factory=list)       # per pair, in seed order
    candidate_values: list[float] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    #: The functions whose self instructions per operation changed most (summed over every pair).
    functions: list[dict] = field(default_factory=list)
    metric: str = METRIC_INSTRUCTIONS
    #: The change without libc's alignment-sensitive string routines (the server's own code and
    #: the rest of libc), with its interval: what a change to the code costs, layout effects aside.
    delta_code: float | None = None
    delta_code_low: float | None = None
    delta_code_high: float | None = None
    #: What ``change``, its interval, the MDE and the verdict are of: "code" (instructions without
    #: libc's alignment-sensitive string routines, whenever the A/B measured them) or "total".
    compared: str = "total"

    @property
    def adequate(self) -> bool:
        return not is_inconclusive(self.verdict)

    @property
    def regressed(self) -> bool:
        return self.verdict == MORE

    @property
    def badness(self) -> float:
        """Bigger is worse: more instructions."""
        return self.change


@dataclass
class MemoryRow:
    cell: str
    base: float                   # bytes per key after the preload, median over the base servers
    candidate: float
    delta: float
    delta_low: float | None
    delta_high: float | None
    change: float
    rounds: int
    verdict: str                  # "more memory" | "less memory" | "no change" | "no significant change"
    keys: int = 0
    base_values: list[float] = field(default_factory=list)
    candidate_values: list[float] = field(default_factory=list)
    metric: str = METRIC_MEMORY


def count_verdict(p: Paired, mde_rel: float | None, target: float | None, more: int | None) -> str:
    if not adequate(mde_rel, target):
        return inconclusive(mde_rel, target, more=more, unit="seed pairs").replace(", or instruction counts", "")
    if p.low is None or p.high is None:
        return SAME
    if p.low > 0:
        return MORE
    if p.high < 0:
        return FEWER
    return SAME


def count_row(cell: str, command: str, base: list[float], candidate: list[float], *, target: float | None,
              seeds: list[int], functions: list[dict] | None = None, base_strings: list[float] | None = None,
              candidate_strings: list[float] | None = None) -> CountRow:
    """One row; ``base_strings``/``candidate_strings`` (per pair, per operation) are the
    alignment-sensitive string routines' share. With them, the relative change, its interval, the
    MDE and the verdict are those of the code's instructions (``compared`` "code"): the routines'
    counts move by tens of instructions per operation between fresh servers of one build and
    between builds whose layout differs, which no change to the code explains. The total's change
    is kept beside it (``delta``, ``delta_low``, ``delta_high``)."""
    total = Paired.of(base, candidate)
    ref = statistics.fmean(base) if base else 0.0
    rel = (lambda v: None if v is None else v / ref) if ref else (lambda v: None)
    compared, p, a, b = "total", total, base, candidate
    if base_strings is not None and candidate_strings is not None and len(base_strings) == len(base) == len(candidate_strings):
        a = [v - s for v, s in zip(base, base_strings)]
        b = [v - s for v, s in zip(candidate, candidate_strings)]
        compared, p = "code", Paired.of(a, b)
    mde_rel = rel(p.mde)
    needed = pairs_needed(a, b, target * ref) if target and ref else None
    more = needed - len(base) if needed is not None else None
    row = CountRow(cell, command, round(statistics.median(base), 3), round(statistics.median(candidate), 3),
                   round(total.delta, 3), _r(total.low), _r(total.high), rel(p.delta) or 0.0, rel(p.low), rel(p.high),
                   mde_rel, len(base), count_verdict(p, mde_rel, target, more), needed,
                   [round(v, 3) for v in base], [round(v, 3) for v in candidate], list(seeds), functions or [])
    row.compared = compared
    if compared == "code":
        row.delta_code, row.delta_code_low, row.delta_code_high = round(p.delta, 3), _r(p.low), _r(p.high)
    return row


def memory_row(cell: str, base: list[float], candidate: list[float], keys: int) -> MemoryRow:
    p = Paired.of(base, candidate)
    ref = statistics.fmean(base) if base else 0.0
    if all(b == c for b, c in zip(base, candidate)):
        verdict = NO_CHANGE
    elif p.low is not None and p.low > 0:
        verdict = MORE_MEMORY
    elif p.high is not None and p.high < 0:
        verdict = LESS_MEMORY
    else:
        verdict = SAME
    return MemoryRow(cell, statistics.median(base), statistics.median(candidate), round(p.delta, 3), _r(p.low),
                     _r(p.high), p.delta / ref if ref else 0.0, len(base), verdict, keys, list(base), list(candidate))


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def cell_label(cell: Cell) -> str:
    """``standalone io1 P16 c50 d3``: what the rows of a cell are called (the server is each side's build)."""
    label = f"{cell.topology} io{cell.io_threads} P{cell.pipeline} c{cell.clients} d{cell.data_size}"
    if cell.keyspace:
        label += f" k{cell.keyspace}"
    return label


def refuse_uncountable(cells: list[Cell]) -> None:
    """A UsageError for the first cell that instruction counts cannot measure (io-threads > 1, ...)."""
    for cell in cells:
        reason = instructions_refusal(cell)
        if reason:
            raise UsageError(f"cannot count instructions for {cell_label(cell)}: {reason}",
                             hint="use --instrument wallclock for this cell, or change the cell")


@dataclass
class CountResult:
    counts: list[CountRow]
    memory: list[MemoryRow]
    pairs: int
    seeds: list[int]
    method: dict
    wall_s: float
    measurement_s: list[float]


def run_pairs(templates: list[Cell], base_commit: str, candidate_commit: str, *, pairs: int = DEFAULT_PAIRS,
              seed_base: int = 1, target: float | None = INSTRUCTIONS_TARGET_MDE, work_dir: Path | None = None,
              progress: Progress | None = None, timeout: float = 900.0) -> CountResult:
    """``pairs`` seed pairs of every template cell on two builds (already built and cached), base
    first then candidate within a pair. The builds are resolved as ``valkey:<commit>``."""
    from .instruments.valgrind import check_prerequisites, measure
    from .servers import resolve_server, resolve_tool

    if pairs < 2:
        raise UsageError(f"--pairs {pairs}: an interval needs at least 2 seed pairs", hint="e.g. --pairs 3")
    refuse_uncountable(templates)
    check_prerequisites()
    began = time.monotonic()
    servers = {"base": resolve_server("valkey", base_commit), "candidate": resolve_server("valkey", candidate_commit)}
    tool = resolve_tool("valkey-benchmark")
    seeds = [seed_base + i for i in range(pairs)]
    counts: list[CountRow] = []
    memory: list[MemoryRow] = []
    durations: list[float] = []
    method = None
    root = Path(tempfile.mkdtemp(prefix="vkbench-ab-counts-", dir=work_dir))
    try:
        for template in templates:
            label = cell_label(template)
            method = InstructionsMethod(windows=WINDOWS, window_requests=min(template.requests or WINDOW_REQUESTS,
                                                                             WINDOW_REQUESTS),
                                        servers=pairs, seed_base=seed_base)
            commands = list(template.tests)
            per_op: dict[str, dict[str, list[float]]] = {side: {c: [] for c in commands} for side in servers}
            fn_costs: dict[str, dict[str, dict[str, int]]] = {side: {c: {} for c in commands} for side in servers}
            strings: dict[str, dict[str, list[float]]] = {side: {c: [] for c in commands} for side in servers}
            bytes_per_key: dict[str, list[float]] = {side: [] for side in servers}
            for seed in seeds:
                for side, server in servers.items():
                    if progress:
                        progress(f"instructions: {label} seed {seed} {side} ({server.version})")
                    m = measure(server_path=server.path, tool_path=tool.path, tool_env=dict(getattr(tool, "env", {}) or {}),
                                commands=commands, clients=template.clients, pipeline=template.pipeline,
                                data_size=template.data_size, keyspace=template.keyspace or 1, seed=seed, method=method,
                                work_dir=root / f"{side}-seed{seed}", password=secrets.token_urlsafe(16),
                                server_env=dict(server.env), timeout=timeout)
                    durations.append(m.duration_s)
                    for command in commands:
                        windows = [w for w in m.windows if w.command == command]
                        per_op[side][command].append(statistics.fmean([w.per_op for w in windows]))
                        add_costs(fn_costs[side][command], m.top.get(command, {}))
                        # The windows' own split (instruments.split): the string routines per op.
                        strings[side][command].append(statistics.fmean([w.per_op - w.code_per_op for w in windows]))
                    if m.memory and m.memory.get("bytes_per_key") is not None:
                        bytes_per_key[side].append(float(m.memory["bytes_per_key"]))
            ops = pairs * method.windows * method.window_requests
            for command in commands:
                functions = self_cost_diff(fn_costs["base"][command], fn_costs["candidate"][command],
                                           before_ops=ops, after_ops=ops, limit=TOP_CHANGED)
                counts.append(count_row(label, command.upper(), per_op["base"][command], per_op["candidate"][command],
                                        target=target, seeds=seeds, functions=functions,
                                        base_strings=strings["base"][command],
                                        candidate_strings=strings["candidate"][command]))
            if bytes_per_key["base"] and len(bytes_per_key["base"]) == len(bytes_per_key["candidate"]):
                memory.append(memory_row(label, bytes_per_key["base"], bytes_per_key["candidate"],
                                         method.preload_keys or template.keyspace or 1))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return CountResult(counts, memory, pairs, seeds, method.to_dict() if method else {},
                       round(time.monotonic() - began, 1), durations)


# -- markdown -----------------------------------------------------------------------------------

def _pct(value: float | None, digits: int = 3, sign: bool = True) -> str:
    if value is None:
        return "n/a"
    return f"{value * 100:+.{digits}f}%" if sign else f"{value * 100:.{digits}f}%"


def counts_markdown(counts: list[CountRow], memory: list[MemoryRow], *, pairs: int, target: float | None) -> list[str]:
    """The instruction and memory tables of an A/B (escaped: cell and function names come from the build)."""
    lines = [f"**Instructions per operation** (callgrind, {pairs} seed pairs: the same seed on both sides of a pair; "
             f"target MDE {_pct(target, 2, sign=False)}). Counts do not depend on the machine's load.", ""]
    cells = []
    for r in counts:
        interval = f"{_pct(r.ci_low)} .. {_pct(r.ci_high)}" if r.ci_low is not None else "n/a"
        code = f"{r.delta_code:+,.1f}" if r.delta_code is not None else "n/a"
        cells.append([md.text(r.cell), md.text(r.command), f"{r.base:,.1f}", f"{r.candidate:,.1f}", code,
                      _pct(r.change), interval, _pct(r.mde, sign=False), md.text(r.verdict), f"{r.delta:+,.1f}"])
    lines += md.table(["cell", "command", "base instr/op", "candidate instr/op", "change/op (code)", "change",
                       "95% interval", "MDE", "verdict", "total change/op"], "llrrrrlrlr", cells)
    lines += ["", "Change, interval, MDE and verdict are of the code's instructions: the total without libc's "
              "alignment-sensitive string routines (`__strcasecmp_sse2`, `__memchr_*`, ...), whose counts move with "
              "where the heap and the linker put their arguments (docs/instructions.md). The last column is the total."]
    moved = [r for r in counts if r.functions]
    if moved:
        lines += ["", "Functions whose self instructions per operation changed most:", ""]
        for r in moved:
            top = ", ".join(f"{md.code(f['function'])} {f['delta']:+,.1f}" for f in r.functions[:5])
            lines.append(f"- {md.text(r.cell)} {md.text(r.command)}: {top}")
    if memory:
        lines += ["", "**Memory per key** after the preload (`INFO memory` used_memory over the keys loaded):", ""]
        lines += md.table(["cell", "keys", "base bytes/key", "candidate bytes/key", "change", "verdict"], "lrrrrl",
                          [[md.text(m.cell), f"{m.keys:,}", f"{m.base:,.2f}", f"{m.candidate:,.2f}",
                            f"{m.delta:+,.2f} ({_pct(m.change, 2)})", md.text(m.verdict)] for m in memory])
    return lines


__all__ = ["CountRow", "MemoryRow", "CountResult", "Paired", "run_pairs", "count_row", "memory_row", "counts_markdown",
           "refuse_uncountable", "cell_label", "INSTRUCTIONS_TARGET_MDE", "DEFAULT_PAIRS", "METRIC_INSTRUCTIONS",
           "METRIC_MEMORY", "MORE", "FEWER", "SAME"]
