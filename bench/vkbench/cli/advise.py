"""``vkbench advise``: which io-threads to set, from io-threads sweep results."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from ..advise import advise_paths, evidence_rows, to_json, to_markdown
from .console import make_console


@click.command("advise")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--history", "history_dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A history directory: advise on the newest point of every series.")
@click.option("--machine-class", help="Only this machine class (default: every class found).")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json"]), default="table", show_default=True)
def advise_cmd(paths: tuple[Path, ...], history_dir: Path | None, machine_class: str | None, fmt: str) -> None:
    """Recommend io-threads per machine class and workload from io-threads sweep results
    (result files, results directories, or --history): the smallest setting within noise of the
    best, its evidence (rps and tail latency with 95% intervals), and warnings for
    oversubscribed and client-bound cells.

    \b
    Examples:
      vkbench run --preset io-threads-sweep --out sweep/ && vkbench advise sweep/
      vkbench advise --history history --machine-class pi-cm4 --format markdown
    """
    inputs = list(paths) + ([history_dir] if history_dir else [])
    advice = advise_paths(inputs, machine_class=machine_class)
    if fmt == "json":
        click.echo(json.dumps(to_json(advice), indent=2))
        return
    if fmt == "markdown":
        click.echo(to_markdown(advice), nl=False)
        return
    console = make_console()
    if not advice:
        console.print("No workload was measured at two or more io-threads settings: nothing to advise "
                      "(run the io-threads-sweep preset).")
        return
    for a in advice:
        table = Table(title=f"{a.machine_class} · {a.label}", title_justify="left", caption=a.sentence + ".",
                      caption_justify="left")
        for col in ("io-threads", "rps [95% CI]", "latency [95% CI]", "vs best", "notes"):
            table.add_column(col, justify="right" if col != "notes" else "left")
        for row in evidence_rows(a):
            table.add_row(*row, style="bold" if row[0] == str(a.recommended) else "")
        console.print(table)
