"""``vkbench export``: results in other tools' formats."""

from __future__ import annotations

from pathlib import Path

import click


@click.group("export")
def export_group():
    """Export results for other tools (github-action-benchmark)."""


@export_group.command("gab")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Directory for rps.json, latency.json (and counts.json).")
def gab_cmd(results, out_dir):
    """github-action-benchmark files: rps.json (customBiggerIsBetter), latency.json (customSmallerIsBetter, ms) and,
    when results have instruction counts or memory per key, counts.json (customSmallerIsBetter: instructions/op, bytes/key)."""
    from ..export.gab import write_gab

    export = write_gab(results, out_dir)
    click.echo(f"{out_dir}/rps.json: {len(export.rps)} series; {out_dir}/latency.json: {len(export.latency)} entries"
               + (f"; {out_dir}/counts.json: {len(export.counts)} entries" if export.counts else ""))
    if export.skipped_invalid:
        click.echo(f"skipped {export.skipped_invalid} invalid result(s) (validity.valid is false)", err=True)
