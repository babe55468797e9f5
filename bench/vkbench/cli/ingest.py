"""``vkbench ingest``: add result files to a history directory (idempotent, all or nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command("ingest")
@click.argument("results", nargs=-1, type=click.Path(path_type=Path))
@click.option("--history", "history_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="History directory (created if missing).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--strict", is_flag=True,
              help="A result already in the history (same run_id/cell_id) with other numbers is an error (exit 13, "
                   "nothing written), not a warning. The workflows use it.")
@click.option("--rebuild-index", is_flag=True, help="Recompute index.json whole from the shards (repair after a lost index or a crash; checksums are re-recorded), then ingest RESULTS if any.")
def ingest_cmd(results, history_dir, as_json, strict, rebuild_index):
    """Add result files (or directories of them) to a history directory.

    Every file is validated first: one corrupt or newer-schema file stops the ingest and
    nothing is written. Ingesting the same results again adds nothing.
    """
    from ..errors import UsageError
    from ..history.ingest import ingest
    from ..history.store import HistoryStore

    store = HistoryStore(history_dir)
    if rebuild_index:
        index = store.rebuild_index()
        click.echo(f"{history_dir}: index rebuilt from the shards: {len(index['series'])} series, {index['runs']} runs", err=as_json)
        for note in store.rebuild_notes:
            click.echo(f"{history_dir}: {note}", err=True)
        if not results:
            return
    elif not results:
        raise UsageError("no RESULTS given", hint="vkbench ingest vkbench-results/ --history vkbench-history")
    report = ingest(store, results, strict=strict)
    for note in report.notes:
        click.echo(f"{history_dir}: {note}", err=True)
    warn_conflicts(report.conflicts)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=1))
        return
    from rich.console import Console

    console = Console(highlight=False, soft_wrap=True)
    console.print(
        f"[bold]{history_dir}[/]: {report.files} result file(s), "
        f"[green]{report.added} point(s) added[/] to {len(report.series)} series "
        f"({report.new_series} new), {report.skipped} already present."
    )


def warn_conflicts(conflicts: list[str]) -> None:
    """Each conflict on stderr (and as a ::warning:: under GitHub Actions): the history kept its
    numbers and dropped the new ones, which must not pass without a word."""
    import sys

    from ..ci.actions import annotate

    for line in conflicts:
        click.echo(f"warning: {line}", err=True)
    if conflicts:
        annotate("warning", "Result already in the history with other numbers",
                 "\n".join(conflicts[:20]) + "\nhint: rerun with --strict to make this an error", out=sys.stderr)
