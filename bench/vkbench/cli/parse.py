"""``vkbench parse OUTPUT_FILE [--stdout STDOUT]``: show what the parsers make of a saved benchmark output.

Thin on purpose: all logic lives in :mod:`vkbench.parsers`. A ParseError propagates to
the CLI edge, which prints it (with its hint) and exits with its exit code (6).
memtier's JSON does not count error replies; ``--stdout`` adds memtier's stdout from the same
run, checked as the runner checks it. A JSON parsed alone gets a note on stderr saying so.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.table import Table

from vkbench.parsers import parse_file
from vkbench.parsers.dispatch import TOOLS, is_json_output, read_output
from vkbench.parsers.memtier_json import JSON_ALONE_NOTE
from vkbench.parsers.record import LATENCY_KEYS, Record


@click.command("parse")
@click.argument("output_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--tool", type=click.Choice(TOOLS), default=None,
              help="Tool that wrote the output (default: sniffed from the output).")
@click.option("--format", "output_format", type=click.Choice(["json", "table"]), default="table",
              show_default=True, help="json: the records as a JSON array; table: a readable table.")
@click.option("--stdout", "stdout_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="memtier's stdout from the run that wrote OUTPUT_FILE (its --json-out-file): checked for error "
                   "replies (READONLY, NOAUTH, MOVED), which memtier's JSON does not count.")
def parse_cmd(output_file: Path, tool: str | None, output_format: str, stdout_file: Path | None) -> None:
    """Parse a valkey-benchmark, redis-benchmark or memtier_benchmark OUTPUT_FILE."""
    records = parse_file(output_file, tool=tool, stdout_path=stdout_file)
    if stdout_file is None and is_json_output(read_output(output_file)):
        # On stderr: the JSON on stdout stays machine-readable.
        click.echo(f"note: {JSON_ALONE_NOTE}; without it, vkbench checked only what the JSON shows "
                   "(connection errors, redirects, the reply sizes of SET/GET)", err=True)
    if output_format == "json":
        click.echo(json.dumps([record.to_dict() for record in records], indent=2))
    else:
        _print_table(records, title=output_file.name)


def _print_table(records: list[Record], *, title: str) -> None:
    # Created here so it writes to the current stdout (CliRunner swaps it). Piped output
    # gets a fixed width: rich's 80-column default would cut the max column off.
    console = Console()
    if not console.is_terminal:
        console = Console(width=120)
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False,
                  caption="latencies in milliseconds; - = not in the output")
    table.add_column("command", overflow="fold", min_width=18)
    table.add_column("rps", justify="right", no_wrap=True)
    for key in LATENCY_KEYS:
        table.add_column(key, justify="right", no_wrap=True)
    for record in records:
        latency = [f"{record.latency_ms[key]:g}" if key in record.latency_ms else "-" for key in LATENCY_KEYS]
        table.add_row(record.command, f"{record.rps:.2f}", *latency)
    console.print(table)
    for warning in dict.fromkeys(w for record in records for w in record.warnings):
        console.print(f"warning: {warning}", style="yellow", markup=False, highlight=False)
