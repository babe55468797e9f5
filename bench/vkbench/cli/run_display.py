"""What ``vkbench run`` shows a person: a live progress display and the summary table."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from ..matrix.model import Cell
from ..runner.session import RunReport


class ProgressDisplay:
    """Cells done of total, the current cell and step, elapsed time and ETA (by repetitions)."""

    def __init__(self, cells: list[Cell], console: Console):
        self.cells = cells
        self.total_cells = len(cells)
        self.done_cells: set[str] = set()
        self.remaining = {c.cell_id: c.repetitions for c in cells}
        self.progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("reps"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=console, transient=False,
        )
        self.task = self.progress.add_task("starting", total=sum(c.repetitions for c in cells))

    def __enter__(self) -> ProgressDisplay:
        # The live display starts with the first cell, so errors found while preparing
        # (a missing binary, a bad cell) are not drawn under an empty progress bar.
        self.started = False
        return self

    def __exit__(self, *exc) -> None:
        if self.started:
            self.progress.__exit__(*exc)

    def update(self, event: str, cell: Cell, index: int) -> None:
        if not self.started:
            self.progress.__enter__()
            self.started = True
        label = f"[{len(self.done_cells) + 1}/{self.total_cells}] {cell.server} {cell.topology} io{cell.io_threads}"
        if event == "deploy":
            self.progress.update(self.task, description=f"{label}: starting servers")
        elif event == "repetition":
            self.progress.update(self.task, description=f"{label}: repetition {index + 1}/{cell.repetitions}")
        elif event == "instructions":
            self.progress.update(self.task, description=f"{label}: instructions, server {index + 1}/{cell.repetitions}")
        elif event == "repetition-done":
            self.progress.advance(self.task)
            self.remaining[cell.cell_id] -= 1
            if self.remaining[cell.cell_id] <= 0:
                self.done_cells.add(cell.cell_id)
        elif event == "cell-failed":
            self.progress.advance(self.task, self.remaining.get(cell.cell_id, 0))
            self.remaining[cell.cell_id] = 0
            self.done_cells.add(cell.cell_id)
            self.progress.console.print(f"[red]cell failed:[/red] {cell.cell_id}")


def _fmt_rps(stat: dict | None) -> str:
    if not stat:
        return "-"
    text = f"{stat['median']:,.0f}"
    if stat.get("ci_low") is not None and stat["median"]:
        half = (stat["ci_high"] - stat["ci_low"]) / 2 / stat["median"]
        text += f" ±{half:.0%}"
    return text


def _fmt_ms(stat: dict | None) -> str:
    return f"{stat['median']:.3f}" if stat else "-"


def _print_instructions(report: RunReport, console: Console) -> None:
    """Instructions per operation and memory per key of the cells that counted them."""
    counted = [o for o in report.outcomes if o.result and (o.result.get("instructions") or o.result.get("memory"))]
    if not counted:
        return
    table = Table(title="instructions per operation and memory per key", title_justify="left")
    for col in ("cell", "cmd", "instr/op (code)", "CV %", "instr/op (total)", "servers", "counted by", "bytes/key"):
        table.add_column(col, justify="left" if col in ("cell", "cmd", "counted by") else "right")
    for outcome in counted:
        c, result = outcome.cell, outcome.result
        name = f"{c.server} P{c.pipeline} c{c.clients}"
        memory = result.get("memory") or {}
        per_key = f"{memory['bytes_per_key']:,.1f}" if memory.get("bytes_per_key") is not None else "-"
        commands = (result.get("instructions") or {}).get("commands") or {}
        # perf counts the total only (no per-function costs, no split): its code column is "-".
        tool = ((result.get("instructions") or {}).get("method") or {}).get("tool", "-")
        if not commands:
            table.add_row(name, "-", "-", "-", "-", "-", "-", per_key)
        for i, (command, block) in enumerate(commands.items()):
            # The code count (without libc's alignment-sensitive string routines) is what the
            # series record; results from before the split have only the total.
            code = f"{block['code_per_op']:,.1f}" if block.get("code_per_op") is not None else "-"
            cv = block.get("code_cv_pct", block["cv_pct"])
            table.add_row(name if i == 0 else "", command, code, f"{cv:.3f}", f"{block['per_op']:,.1f}",
                          str(len(block.get("per_server") or [])), tool if i == 0 else "", per_key if i == 0 else "")
    console.print(table)


def print_summary(report: RunReport, console: Console) -> None:
    table = Table(title=f"run {report.run_id}: results in {report.out_dir}/", title_justify="left")
    for col in ("cell", "cmd", "rps (±95% CI)", "p50 ms", "p99 ms", "flags"):
        table.add_column(col, justify="right" if col in ("rps (±95% CI)", "p50 ms", "p99 ms") else "left",
                         overflow="fold")
    for outcome in report.outcomes:
        c = outcome.cell
        name = f"{c.server} {c.topology} io{c.io_threads} P{c.pipeline}"
        if outcome.error:
            table.add_row(name, "-", "-", "-", "-", f"[red]FAILED[/red] {outcome.error.message}")
            continue
        validity = outcome.result["validity"]
        flags = ", ".join(("[red]" if f["severity"] == "invalid" else "[yellow]") + f["code"] + "[/]" for f in validity["flags"])
        for i, (command, metrics) in enumerate(outcome.result["summary"].items()):
            table.add_row(name if i == 0 else "", command, _fmt_rps(metrics.get("rps")), _fmt_ms(metrics.get("p50")),
                          _fmt_ms(metrics.get("p99")), flags if i == 0 else "")
    if any(o.error or o.result["summary"] for o in report.outcomes):   # not for instruction-only runs
        console.print(table)
    shown = {}
    for outcome in report.outcomes:
        for flag in (outcome.result or {}).get("validity", {}).get("flags", []):
            shown.setdefault(flag["code"], flag)
    for code, flag in shown.items():
        console.print(f"[bold]{code}[/bold]: {flag['message']}. Fix: {flag['fix']}")
    _print_instructions(report, console)
    if report.cleaned:
        console.print("cleaned up leftovers of an earlier run: " + "; ".join(report.cleaned))
