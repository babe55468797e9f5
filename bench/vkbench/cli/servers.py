"""``vkbench servers list`` and ``vkbench servers fetch``: the binary cache from the command line."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import click
from rich import box
from rich.console import Console
from rich.table import Table

from ..errors import UsageError
from ..servers import Binary, cache_dir, resolve_server, resolve_tool
from ..servers.inventory import aliases, rows


@click.group("servers")
def servers_group() -> None:
    """List and fetch server and tool binaries (cache: $VKBENCH_CACHE, default ~/.cache/vkbench)."""


@servers_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_cmd(as_json: bool) -> None:
    """Every known server and tool: where it comes from, where it is, whether it is cached and
    whether it runs on this machine ("usable here": probed; "?" until fetched)."""
    table_rows = rows()
    if as_json:
        click.echo(json.dumps({"cache": str(cache_dir()), "binaries": [r.as_dict() for r in table_rows],
                               "aliases": aliases()}, indent=2))
        return
    root = cache_dir()
    console = Console()
    with_paths = console.width >= 110   # below that the path column is unreadable; --json has it
    table = Table(title=f"servers and tools (cache: {root})", box=box.SIMPLE_HEAD,
                  caption="relative paths are inside the cache" if with_paths else "paths: widen the terminal or use --json")
    # Short columns never wrap; the long ones fold.
    for column in ("engine", "version", "binary", "source", "cached", "usable here", "fetchable here"):
        table.add_column(column, no_wrap=column not in ("fetchable here", "usable here"))
    if with_paths:
        table.add_column("path", overflow="fold")
    for r in table_rows:
        cells = [r.engine, r.version, r.name, r.source, "yes" if r.cached else "no", r.usable_text, r.fetchable]
        if with_paths:
            cells.append(r.path[len(str(root)) + 1:] if r.path.startswith(f"{root}/") else r.path)
        table.add_row(*cells)
    console.print(table)
    console.print("aliases: " + ", ".join(f"{k} -> {v}" for k, v in aliases().items()))


@contextlib.contextmanager
def _progress(quiet: bool) -> Iterator:
    """A rich spinner on stderr that fetchers update with what they are doing."""
    if quiet:
        yield None
        return
    console = Console(stderr=True, log_path=False)
    with console.status("resolving") as status:
        def report(message: str) -> None:
            console.log(message)
            status.update(message)
        yield report


def _describe(binary: Binary) -> dict:
    return {
        "engine": binary.engine, "name": binary.name, "version": binary.version, "source": binary.source,
        "path": str(binary.path), "build_id": binary.build_id, "env": binary.env, "detail": binary.detail,
    }


@servers_group.command("fetch")
@click.argument("engine", required=False)
@click.argument("version", required=False)
@click.option("--tool", "tools", multiple=True, metavar="NAME",
              help="A client tool (valkey-benchmark, valkey-cli, redis-benchmark, redis-cli); repeatable.")
@click.option("--refresh", is_flag=True, help="Fetch again even when cached (rebuilds a moving git ref).")
@click.option("--tls", is_flag=True, help="The build TLS cells use: a source build with BUILD_TLS=yes "
              "(cached apart from the plain build); no effect on releases.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output; progress stays on stderr.")
def fetch_cmd(engine: str | None, version: str | None, tools: tuple[str, ...], refresh: bool, tls: bool,
              as_json: bool) -> None:
    """Put ENGINE VERSION (e.g. `valkey 9.1.2`, `valkey:9.1`, `redis 7.0.15`) and/or tools into the cache.

    Idempotent: what is cached is only checked (fast).
    """
    if engine and version is None and ":" in engine:
        engine, version = engine.split(":", 1)
    if bool(engine) != bool(version):
        raise UsageError("give both ENGINE and VERSION", hint="e.g. vkbench servers fetch valkey 9.1.2")
    if not engine and not tools:
        raise UsageError("nothing to fetch", hint="e.g. vkbench servers fetch valkey 9.1.2, or --tool valkey-benchmark")
    fetched: list[Binary] = []
    with _progress(quiet=False) as report:
        if engine and version:
            fetched.append(resolve_server(engine, version, refresh=refresh, progress=report, tls=tls))
        for tool in tools:
            fetched.append(resolve_tool(tool, refresh=refresh, progress=report))
    if as_json:
        click.echo(json.dumps([_describe(b) for b in fetched], indent=2))
        return
    for binary in fetched:
        click.echo(f"{binary.name} {binary.version} [{binary.source}] {binary.path} {binary.build_id[:19]}")
