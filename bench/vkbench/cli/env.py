"""``vkbench env``: the machine fingerprint stored in every result."""

from __future__ import annotations

import json

import click
from .console import make_console
from rich.table import Table

from ..envinfo import fingerprint


@click.command("env")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
@click.option("--container-runtime/--no-container-runtime", default=True, show_default=True,
              help="Ask the container engine's API (GET /version on DOCKER_HOST or the usual sockets) who it is; bounded, never part of fingerprint_id.")
def env_cmd(as_json: bool, container_runtime: bool) -> None:
    """Print this machine's fingerprint (what every result records)."""
    env = fingerprint(probe_container_runtime=container_runtime)
    if as_json:
        click.echo(json.dumps(env, indent=2))
        return
    table = Table(show_header=False, title="machine fingerprint", title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value")
    for key, value in env.items():
        if key == "memory_bytes" and value:
            value = f"{value / 2**30:.1f} GiB"
        table.add_row(key, "-" if value is None else str(value))
    make_console().print(table)
