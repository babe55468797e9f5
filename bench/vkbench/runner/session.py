"""A whole ``vkbench run``: resolve binaries, clean leftovers, run every cell, write results."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..envinfo import board_state, fingerprint
from ..errors import BenchmarkFailedError, MissingBinaryError, ServerStartError, UsageError, VkbenchError
from ..matrix.model import Cell
from ..results.io import write_result
from ..topology.factory import get_backend
from .workdirs import cleanup_stale_workdirs
from .execute import CellState, ProgressFn, RunContext, build_result, new_run_id, run_instructions, run_repetitions


@dataclass
class RunOptions:
    backend: str = "native"
    out_dir: Path = Path("vkbench-results")
    run_id: str | None = None
    machine_class: str | None = None
    trigger: str = "manual"
    workflow_run_url: str | None = None
    interleave: bool = False
    timeout: float = 600.0
    output_limit: int | None = None       # bytes one tool process may print (None: the default, 4 MiB)
    state_dir: Path | None = None
    server_host: str | None = None
    profile: bool = False
    #: What counts instructions: auto (perf where hardware counters exist, else valgrind), perf
    #: or valgrind (instruments.perf_stat.select_counter).
    counter: str = "auto"


@dataclass
class CellOutcome:
    cell: Cell
    result: dict | None = None
    path: Path | None = None
    error: VkbenchError | None = None


@dataclass
class RunReport:
    run_id: str
    out_dir: Path
    outcomes: list[CellOutcome] = field(default_factory=list)
    cleaned: list[str] = field(default_factory=list)

    @property
    def failures(self) -> list[CellOutcome]:
        return [o for o in self.outcomes if o.error]

    def to_json(self) -> dict:
        return {
            "run_id": self.run_id,
            "out_dir": str(self.out_dir),
            "cells": [
                {
                    "cell_id": o.cell.cell_id,
                    "file": str(o.path) if o.path else None,
                    "valid": o.result["validity"]["valid"] if o.result else False,
                    "flags": [f["code"] for f in o.result["validity"]["flags"]] if o.result else [],
                    "summary": {cmd: {m: s["median"] for m, s in metrics.items()} for cmd, metrics in o.result["summary"].items()} if o.result else {},
                    "error": str(o.error) if o.error else None,
                    **(_instruction_summary(o.result["instructions"]) if o.result and o.result.get("instructions") else {}),
                    **({"bytes_per_key": o.result["memory"]["bytes_per_key"]} if o.result and o.result.get("memory") else {}),
                }
                for o in self.outcomes
            ],
        }

    def raise_for_failures(self) -> None:
        """Exit with the code of the first failure (after every cell had its chance)."""
        if not self.failures:
            return
        failed = self.failures[0]
        first, n = failed.error, len(self.failures)
        # The cause comes first (an annotation shows its first line): "image ... runs valkey 8.0.1,
        # the cell asks for 9.0.0", not a generic "cells failed".
        cause, _, details = first.message.partition("\n")
        counted = f"{cause} (cell {failed.cell.cell_id}; {n} of {len(self.outcomes)} cells failed)"
        error = type(first)(counted + (f"\n{details}" if details else ""), hint=first.hint)
        error.title = f"{failed.cell.cell_id}: {cause}"[:240]
        raise error


def _instruction_summary(block: dict) -> dict:
    """A run report's instruction figures per command: ``instructions_per_op`` as the series
    records it (the code count where the method counts it), and the total."""
    code = (block.get("method") or {}).get("counted") == "code"
    commands = block["commands"]
    out = {"instructions_per_op": {cmd: (b.get("code_per_op") if code else b["per_op"]) for cmd, b in commands.items()}}
    if code:
        out["instructions_per_op_total"] = {cmd: b["per_op"] for cmd, b in commands.items()}
    return out


def _state_dir(options: RunOptions) -> Path:
    """Where backends keep pid files and labels of running servers (see cleanup)."""
    from ..servers import cache_dir

    return options.state_dir or cache_dir() / "state"


def cleanup(options: RunOptions) -> list[str]:
    backend = get_backend(options.backend)
    return backend.cleanup_stale(_state_dir(options)) + cleanup_stale_workdirs()


def run_session(cells: list[Cell], options: RunOptions, progress: ProgressFn | None = None) -> RunReport:
    from ..servers import resolve_server, resolve_tool

    backend = get_backend(options.backend, server_host=options.server_host)
    state_dir = _state_dir(options)
    if hasattr(backend, "state_dir"):
        backend.state_dir = state_dir
    report = RunReport(run_id=options.run_id or new_run_id(), out_dir=options.out_dir)
    report.cleaned = backend.cleanup_stale(state_dir) + cleanup_stale_workdirs()

    counted = [c for c in cells if c.instrument != "wallclock"]
    if counted and options.backend != "native":
        raise UsageError(f"instrument {counted[0].instrument} runs its servers under callgrind on this machine",
                         hint="use --backend native for instruction counts")
    counter = None
    if counted:
        from ..instruments.perf_stat import select_counter
        from ..instruments.valgrind import check_prerequisites

        counter = select_counter(options.counter)
        check_prerequisites("perf" if counter.tool == "perf" else "callgrind")
    # Fail before starting anything when a binary is missing: exit code 3, with the fetch hint.
    tools = {name: resolve_tool(name) for name in sorted({c.tool for c in cells})}
    if options.backend == "native":
        for engine, version, tls in sorted({(c.engine, c.version, bool(c.workload and c.workload.tls)) for c in cells}):
            resolve_server(engine, version, tls=tls)

    options.out_dir.mkdir(parents=True, exist_ok=True)
    ctx = RunContext(
        backend=backend, out_dir=options.out_dir, run_id=report.run_id, trigger=options.trigger,
        machine_class=options.machine_class, workflow_run_url=options.workflow_run_url,
        environment=fingerprint(probe_container_runtime=options.backend == "compose"),
        tool_paths=tools, repetition_timeout=options.timeout, profile=options.profile, counter=counter,
        **({"output_limit": options.output_limit} if options.output_limit else {}),
    )
    states = [CellState(cell) for cell in cells]
    errors: dict[str, VkbenchError] = {}

    def attempt(state: CellState, count: int) -> None:
        if state.cell.cell_id in errors or state.cell.instrument == "instructions":
            return
        if state.board_before is None:
            state.board_before = board_state()[0]
        try:
            run_repetitions(state, ctx, count, progress)
            state.board_after = board_state()[0]
        except (ServerStartError, BenchmarkFailedError, MissingBinaryError) as exc:
            errors[state.cell.cell_id] = exc
            if progress:
                progress("cell-failed", state.cell, 0)

    if options.interleave:
        for round_index in range(max(c.repetitions for c in cells)):
            for state in states:
                if round_index < state.cell.repetitions:
                    attempt(state, 1)
    else:
        for state in states:
            attempt(state, state.cell.repetitions)

    for state in states:
        if state.cell.instrument == "wallclock" or state.cell.cell_id in errors:
            continue
        if state.board_before is None:
            state.board_before = board_state()[0]
        try:
            run_instructions(state, ctx, progress)
            state.board_after = board_state()[0]
        except (ServerStartError, BenchmarkFailedError, MissingBinaryError) as exc:
            errors[state.cell.cell_id] = exc
            if progress:
                progress("cell-failed", state.cell, 0)

    for state in states:
        outcome = CellOutcome(state.cell)
        if state.cell.cell_id in errors:
            outcome.error = errors[state.cell.cell_id]
        else:
            try:
                outcome.result = build_result(state, ctx)
                outcome.path = options.out_dir / f"{state.cell.cell_id}.json"
                write_result(outcome.path, outcome.result)
            except BenchmarkFailedError as exc:
                outcome.error = exc
        report.outcomes.append(outcome)
    return report
