"""``vkbench matrix``: expand a matrix into cells."""

from __future__ import annotations

import json

import click
from rich.console import Console

from .console import make_console
from rich.table import Table

from ..matrix.cells import github_matrix
from ._options import cells_from, override_options


@click.command("matrix")
@click.argument("source", metavar="FILE_OR_PRESET")
@override_options
@click.option("--format", "fmt", type=click.Choice(["table", "github", "json"]), default="table", show_default=True,
              help="github: one line of {\"include\": [...]} for strategy.matrix.")
@click.option("--allowed-runners", "runner_classes_file", type=click.Path(dir_okay=False, exists=True),
              help="Refuse any cell whose runner is not a class declared in this file (runners/classes.yaml).")
def matrix_cmd(source: str, fmt: str, runner_classes_file: str | None, **kwargs) -> None:
    """Expand FILE_OR_PRESET (a matrix YAML file or a preset name) into cells.

    \b
    Examples:
      vkbench matrix smoke
      vkbench matrix nightly --runners pi-cm4,cloud-x86 --format github
    """
    cells = cells_from(source, (), kwargs)
    if runner_classes_file:
        from ..matrix.runner_classes import check_runners, load_hosted_classes, split_hosted

        check_runners(sorted({c.runner for c in cells}), runner_classes_file)
        own, hosted, _left_out = split_hosted(cells, load_hosted_classes(runner_classes_file))
        cells = own + hosted          # a hosted class gets its instruction-count cells only
    if fmt == "github":
        click.echo(json.dumps(github_matrix(cells), separators=(",", ":")))
        return
    if fmt == "json":
        click.echo(json.dumps([{"id": c.cell_id, **c.model_dump(mode="json")} for c in cells], indent=2))
        return
    print_plan(cells)


def print_plan(cells, console: Console | None = None) -> None:
    console = console or make_console()
    table = Table(title=f"{len(cells)} cells", title_justify="left")
    for col in ("#", "server", "topology", "io-threads", "tool", "tests", "P", "clients", "threads", "size", "keyspace", "requests", "reps", "runner"):
        table.add_column(col, justify="right" if col in ("#", "io-threads", "P", "clients", "threads", "size", "keyspace", "requests", "reps") else "left")
    for i, c in enumerate(cells, 1):
        table.add_row(str(i), c.server, c.topology, str(c.io_threads), c.tool, ",".join(c.tests), str(c.pipeline),
                      str(c.clients), str(c.client_threads or "-"), str(c.data_size), str(c.keyspace or "-"),
                      str(c.requests or f"{c.duration}s"), str(c.repetitions), c.runner)
    console.print(table)
