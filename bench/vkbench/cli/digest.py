"""``vkbench digest``: what moved in the last week, as Markdown (an issue or discussion) or JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from ..errors import AlertError


@click.command("digest")
@click.option("--history", "history_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="History directory (with detect.json, confirmations.json, bisects.json).")
@click.option("--since", default="7d", show_default=True, help="The window: 7d, 36h, 2w.")
@click.option("--annotations", type=click.Path(dir_okay=False, path_type=Path),
              help="Annotations YAML (results/annotations.yaml): entries whose `after` lies in the window are listed.")
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown", show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write here instead of stdout.")
@click.option("--site-url", help="The trend site's https URL, linked from the Markdown.")
@click.option("--repo", help="OWNER/NAME: open (or update) the window's digest issue there.")
@click.option("--api-url", default="https://api.github.com", show_default=True, help="GitHub REST API root.")
@click.option("--token-env", default="GITHUB_TOKEN", show_default=True, help="Name of the env var holding the token.")
@click.option("--dry-run", is_flag=True, help="With --repo: say what would be done, write nothing.")
def digest_cmd(history_dir, since, annotations, fmt, out, site_url, repo, api_url, token_env, dry_run):
    """Summarize a history's last days: regressions and improvements with their confirmations
    and bisects, annotations, flagged and noisy series, coverage."""
    from ..detect.annotations import load_annotations
    from ..digest import build_digest, parse_since, render_markdown, sync_issue
    from ..files import write_bytes_atomic

    digest = build_digest(history_dir, since=parse_since(since),
                          annotations=load_annotations(annotations) if annotations else None)
    text = json.dumps(digest, indent=1) + "\n" if fmt == "json" else render_markdown(digest, site_url=site_url)
    if out is not None:
        write_bytes_atomic(out, text.encode())
    else:
        click.echo(text, nl=False)
    if repo:
        from ..alerts.github import GitHubClient

        token = os.environ.get(token_env) or None
        if token is None and not dry_run:
            raise AlertError(f"no token in ${token_env}", hint=f"export {token_env} or use --dry-run")
        done = sync_issue(digest, GitHubClient(repo, token, api_url=api_url), site_url=site_url, dry_run=dry_run)
        where = f"#{done['issue']}" if done["issue"] else "(new)"
        click.echo(f"{'[dry-run] ' if dry_run else ''}{done['action']} {where} {done['title']}", err=out is None)
