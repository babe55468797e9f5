"""``vkbench compare``: a per-cell table of two result directories."""

from __future__ import annotations

import json
from pathlib import Path

import click
from .console import make_console
from rich.table import Table

from ..compare import (COUNT_METRICS, COUNT_MIN_EFFECT, MEMORY_MIN_EFFECT, METRICS, TARGET_MDE, Row, build_warnings,
                       compare_dirs, rows_to_json)
from ..verdicts import BETTER, WORSE

_UNITS = {"rps": "rps", "instructions_per_op": "instructions/op", "instructions_per_op_total": "instructions/op",
          "bytes_per_key": "bytes/key"}


def _value(metric: str, v: float) -> str:
    if metric == "rps":
        return f"{v:,.0f}"
    if metric in ("instructions_per_op", "instructions_per_op_total"):
        return f"{v:,.1f}"
    return f"{v:.2f}" if metric == "bytes_per_key" else f"{v:.3f}"


def _pct(v: float | None) -> str:
    from ..markdown import change

    return "-" if v is None else change(v)       # +0.32% where counts resolve it, +8.0% else


def _ci(row: Row) -> str:
    return "-" if row.ci_low is None else f"[{_pct(row.ci_low)}, {_pct(row.ci_high)}]"


def _verdict(row: Row) -> str:
    text = row.verdict
    return text + " (flagged)" if row.flagged else text


def _mde(row: Row) -> str:
    return "-" if row.mde is None else f"{row.mde:.1%}"


def markdown(rows: list[Row], unmatched: list[str], target_mde: float | None = TARGET_MDE) -> str:
    """A PR comment: every value from the result files is escaped (vkbench.markdown)."""
    from .. import markdown as md

    lines = []
    base_label, cand_label = md.text(rows[0].base_label), md.text(rows[0].candidate_label)
    cells = []
    for r in rows:
        p = "-" if r.p_value is None else f"{r.p_value:.3f}"
        cells.append([md.text(r.key), md.text(r.command), md.text(r.metric), _value(r.metric, r.base), _value(r.metric, r.candidate),
                      _pct(r.change), _ci(r), p, _mde(r), _verdict(r)])
    lines += md.table(["cell", "command", "metric", base_label, cand_label, "change", "95% CI", "p", "MDE", "verdict"],
                      "lllrrrlrrl", cells)
    lines.append("")
    gate = (f" and an MDE (the smallest change these repetitions detect, power 80%) of at most {target_mde:.1%}, "
            "else \"inconclusive\"") if target_mde else ""
    lines.append("rps: bigger is better; latencies (ms): smaller is better. Verdicts need p < 0.05 (Welch's t-test "
                 f"on the repetitions), a change of at least 2%{gate}. \"flagged\": a validity check failed on one side.")
    if any(r.metric in COUNT_METRICS for r in rows):
        lines.append("")
        lines.append(f"instructions_per_op (instructions/op: the code count, without libc's alignment-sensitive "
                     f"string routines, where both sides have it; instructions_per_op_total: the total) and "
                     f"bytes_per_key (bytes/key): smaller is better. "
                     f"Instructions: the servers of both sides paired by seed, p < 0.05 on the per-seed ratios and "
                     f"a change of at least {COUNT_MIN_EFFECT:.1%}; memory per key (one value a side): a change of "
                     f"at least {MEMORY_MIN_EFFECT:.0%}.")
    for u in unmatched:
        lines.append(f"- {md.text(u)}")
    return "\n".join(lines) + "\n"


@click.command("compare")
@click.argument("base_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("candidate_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json"]), default="table", show_default=True)
@click.option("--metrics", default="rps,avg,min,p50,p95,p99,max,instructions_per_op,instructions_per_op_total,bytes_per_key", show_default=True,
              help=f"Comma-separated metrics among {', '.join(METRICS)}.")
@click.option("--target-mde", type=float, default=TARGET_MDE, show_default=True,
              help="A verdict needs the repetitions' MDE (Welch, power 80%) at or below this fraction; else inconclusive.")
def compare_cmd(base_dir: Path, candidate_dir: Path, fmt: str, metrics: str, target_mde: float) -> None:
    """Compare BASE_DIR with CANDIDATE_DIR (result directories of `vkbench run`), cell by cell:
    medians, % change, 95% confidence interval and a verdict (better / worse / no significant change)."""
    wanted = tuple(m.strip() for m in metrics.split(",") if m.strip() in METRICS)
    rows, unmatched = compare_dirs(base_dir, candidate_dir, metrics=wanted, target_mde=target_mde)
    warnings = build_warnings(base_dir, candidate_dir)
    if fmt == "json":
        click.echo(json.dumps(rows_to_json(rows, unmatched, warnings), indent=2))
        return
    if fmt == "markdown":
        click.echo(markdown(rows, unmatched, target_mde) + "".join(f"\n> warning: {w}\n" for w in warnings), nl=False)
        return
    table = Table(title=_shown(f"{rows[0].base_label} -> {rows[0].candidate_label}"), title_justify="left")
    for col in ("cell", "cmd", "metric", "base", "candidate", "change", "95% CI", "p", "MDE", "verdict"):
        table.add_column(col, justify="right" if col in ("base", "candidate", "change", "p", "MDE") else "left")
    colour = {BETTER: "green", WORSE: "red"}
    for r in rows:
        style = colour.get(r.verdict, "")
        table.add_row(_shown(r.key), _shown(r.command), r.metric, _value(r.metric, r.base), _value(r.metric, r.candidate),
                      _pct(r.change), _ci(r), "-" if r.p_value is None else f"{r.p_value:.3f}", _mde(r),
                      f"[{style}]{_verdict(r)}[/]" if style else _verdict(r))
    console = make_console()
    console.print(table)
    for u in unmatched:
        console.print(f"[yellow]{_shown(u)}[/yellow]")
    for w in warnings:
        console.print(f"[yellow]warning: {_shown(w)}[/yellow]")


def _shown(value) -> str:
    """A value from a result file in the terminal: controls escaped, right-to-left text
    isolated (vkbench.bidi), and no rich markup of its own."""
    from rich.markup import escape

    from ..bidi import isolate

    return escape(isolate(value))
