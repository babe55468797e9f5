"""``vkbench alert``: open, update or close GitHub issues for regression incidents."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from ..errors import AlertError


@click.command("alert")
@click.option("--repo", required=True, help="OWNER/NAME whose issues track regressions.")
@click.option("--history", "history_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="History directory holding detect.json.")
@click.option("--api-url", default="https://api.github.com", show_default=True, help="GitHub REST API root (GHES: https://HOST/api/v3).")
@click.option("--server-url", default="https://github.com", show_default=True, help="Web root for compare links.")
@click.option("--commits-repo", help="OWNER/NAME of the benchmarked commits, for compare links (default: the engine's, valkey-io/valkey).")
@click.option("--token-env", default="GITHUB_TOKEN", show_default=True, help="Name of the env var holding the token (never pass the token itself).")
@click.option("--fail-on", type=click.Choice(["regression", "never"]), default="never", show_default=True, help="Exit 10 when an open, unsilenced regression exists.")
@click.option("--dry-run", is_flag=True, help="Print what would be done; write nothing (reads issues if a token is set).")
@click.option("--detect/--no-detect", "run_detect", default=False, help="Run detection first instead of reading detect.json.")
@click.option("--annotations", type=click.Path(dir_okay=False, path_type=Path), help="Annotations YAML (with --detect).")
@click.option("--json", "as_json", is_flag=True, help="Print the actions as JSON.")
@click.option("--actions-out", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the actions as JSON (what --json prints) to this file, for a later job (bisects).")
def alert_cmd(repo, history_dir, api_url, server_url, commits_repo, token_env, fail_on, dry_run, run_detect, annotations, as_json,
              actions_out):
    """Open, update or close one GitHub issue per regression incident of detect.json."""
    from ..alerts.github import GitHubClient
    from ..alerts.issues import sync_issues
    from ..history.store import HistoryStore
    from .detect import fail_on_regression

    if run_detect:
        from ..detect.runner import run_detection

        detection = run_detection(history_dir, annotations)
    else:
        store = HistoryStore(history_dir)
        store.verify(deep=True)   # the history detect.json came from is whole (exit 7 naming the file)
        detection = store.read_detect(for_alerts=True)   # and detect.json has what the issues use (exit 7)
        if detection is None:
            raise AlertError(f"{history_dir}/detect.json: not found", hint="run `vkbench detect --history DIR` first, or pass --detect")
    token = os.environ.get(token_env) or None
    if token is None and not dry_run:
        raise AlertError(f"no token in ${token_env}", hint=f"export {token_env} (workflow: env: {token_env}: ${{{{ secrets.GITHUB_TOKEN }}}}) or use --dry-run")
    client = GitHubClient(repo, token, api_url=api_url)
    actions = sync_issues(detection, client, dry_run=dry_run, server_url=server_url, commits_repo=commits_repo)
    if actions_out is not None:
        from ..files import write_json

        write_json(actions_out, [a.to_dict() for a in actions], indent=1)
    if as_json:
        click.echo(json.dumps([a.to_dict() for a in actions], indent=1))
    else:
        prefix = "[dry-run] " if dry_run else ""
        if not actions:
            click.echo(f"{prefix}no regression incident: nothing to do")
        for a in actions:
            where = f"#{a.issue}" if a.issue else "(new)"
            click.echo(f"{prefix}{a.kind:<11} {where:<7} {a.incident_id}  {a.title}" + (f"  ({a.reason})" if a.reason else ""))
    if fail_on == "regression":
        fail_on_regression(detection)
