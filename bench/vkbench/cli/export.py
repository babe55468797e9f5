"""``vkbench export``: results in other tools' formats."""

from __future__ import annotations

from pathlib import Path

import click


@click.group("export")
def export_group():
    """Export results for other tools (github-action-benchmark, PostgreSQL)."""


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


@export_group.command("postgres")
@click.argument("history", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--dsn", required=True, envvar="VKBENCH_POSTGRES_DSN",
              help="libpq connection string or URL (env VKBENCH_POSTGRES_DSN), e.g. postgresql://vkbench@db:5432/benchmarks.")
@click.option("--no-create", is_flag=True, help="Do not create the tables (they exist, made by valkey-perf-benchmark's schema.sql).")
def postgres_cmd(history, dsn, no_create):
    """Every point of HISTORY into PostgreSQL's benchmark_metrics (Valkey's dashboards' schema), once each."""
    from ..export.postgres import export_postgres

    click.echo(export_postgres(history, dsn, create_schema=not no_create).summary())
