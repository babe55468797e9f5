"""``vkbench profile diff``: which functions' share of the server's CPU samples grew or shrank."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from ..profile.diff import profile_diff, to_json, to_markdown
from .console import make_console


@click.group("profile")
def profile_group() -> None:
    """CPU profiles recorded by `vkbench run --profile` (folded stacks)."""


@profile_group.command("diff")
@click.argument("before", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("after", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json"]), default="table", show_default=True)
@click.option("--limit", type=click.IntRange(1, 10_000), default=15, show_default=True, help="Rows to show.")
def diff_cmd(before: Path, after: Path, fmt: str, limit: int) -> None:
    """Compare two profiles (BEFORE, AFTER: .folded files or result files recorded with --profile):
    the functions whose share of samples changed most, in their own code (self) and with what they
    call (total).

    \b
    Example:
      vkbench profile diff good/cell.json bad/cell.json --format markdown
    """
    rows = profile_diff(before, after, limit=limit)
    if fmt == "json":
        click.echo(json.dumps(to_json(rows), indent=2))
        return
    if fmt == "markdown":
        click.echo(to_markdown(rows, limit=limit), nl=False)
        return
    table = Table(title=f"{before.name} -> {after.name}: share of CPU samples", title_justify="left")
    for col in ("function", "self before", "self after", "change", "total before", "total after"):
        table.add_column(col, justify="left" if col == "function" else "right")
    for r in rows:
        style = "red" if r.self_delta > 0 else ("green" if r.self_delta < 0 else "")
        table.add_row(r.function, f"{r.before_self:.1%}", f"{r.after_self:.1%}",
                      f"[{style}]{r.self_delta * 100:+.1f} pt[/]" if style else f"{r.self_delta * 100:+.1f} pt",
                      f"{r.before_total:.1%}", f"{r.after_total:.1%}")
    make_console().print(table)
