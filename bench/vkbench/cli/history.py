"""``vkbench history``: keep a long history bounded (retention) and off the Pages branch (split)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import click

DAYS = click.IntRange(0, 36500)


def parse_now(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as err:
        raise click.BadParameter(f"{value!r} is not an RFC 3339 time (2026-11-28T00:00:00Z)") from err
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


@click.group("history")
def history_group():
    """Retention, format and layout of the history (see docs/history-format.md)."""


@history_group.command("retain")
@click.option("--history", "history_dir", required=True, type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--keep-raw-days", type=DAYS, default=None, help="Remove raw outputs older than this (incident profiles stay). Default: keep forever.")
@click.option("--keep-results-days", type=DAYS, default=None, help="Remove full result copies older than this (series points stay forever). Default: keep forever.")
@click.option("--now", "now_text", default=None, help="Reference time (RFC 3339; default: now).")
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
@click.option("--json", "as_json", is_flag=True)
def retain_cmd(history_dir, keep_raw_days, keep_results_days, now_text, dry_run, as_json):
    """Prune raw outputs and result copies past their retention; series points are never removed."""
    from ..history.retain import retain

    report = retain(history_dir, keep_raw_days=keep_raw_days, keep_results_days=keep_results_days, now=parse_now(now_text), dry_run=dry_run)
    if as_json:
        click.echo(json.dumps(dict(report.to_dict(), dry_run=dry_run), indent=1))
    else:
        click.echo(("would have " if dry_run else "") + report.summary())


@history_group.command("migrate")
@click.option("--history", "history_dir", required=True, type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--dry-run", is_flag=True, help="Check and count only.")
@click.option("--json", "as_json", is_flag=True)
def migrate_cmd(history_dir, dry_run, as_json):
    """Bring a history to this vkbench's format (renames only; every point counted before and after)."""
    from ..history.migrate import migrate_history

    report = migrate_history(history_dir, dry_run=dry_run)
    click.echo(json.dumps(report.to_dict(), indent=1) if as_json else report.summary())


@history_group.command("split")
@click.option("--repo-dir", required=True, help="Git URL or bare repository whose Pages branch holds history/.")
@click.option("--from", "source_branch", default="gh-pages", show_default=True, help="The Pages branch that holds history/ today.")
@click.option("--data-branch", default="vkbench-data", show_default=True, help="The new, unpublished branch for history/.")
@click.option("--history-subdir", default="history", show_default=True)
@click.option("--dry-run", is_flag=True, help="Check and count, push nothing.")
@click.option("--json", "as_json", is_flag=True)
def split_cmd(repo_dir, source_branch, data_branch, history_subdir, dry_run, as_json):
    """Move history/ off the Pages branch onto a data branch (same tree, every point checked; one atomic push)."""
    from ..history.split import split_history

    if Path(repo_dir).exists():
        repo_dir = str(Path(repo_dir).resolve())
    report = split_history(repo_dir, source_branch=source_branch, data_branch=data_branch, history_subdir=history_subdir, dry_run=dry_run)
    if as_json:
        click.echo(json.dumps(dict(report.to_dict(), dry_run=dry_run), indent=1))
        return
    verb = "would move" if dry_run else "moved"
    click.echo(f"{verb} {history_subdir}/ ({report.series} series, {report.points} points, tree {report.history_tree[:12]}) "
               f"from {source_branch} to {data_branch}")
    if not dry_run:
        click.echo(f"publish from now on with: vkbench publish ... --branch {data_branch} --site-branch {source_branch} --site-out SITE")
