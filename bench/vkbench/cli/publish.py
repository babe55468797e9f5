"""``vkbench publish``: ingest into a git branch (gh-pages) and push, retrying on races."""

from __future__ import annotations

import importlib
import json
import warnings
from pathlib import Path

import click


def _site_builder():
    """The trend site is an optional part (built by another module); absent -> None."""
    try:
        module = importlib.import_module("vkbench.site.build")
    except ImportError:
        return None
    return getattr(module, "build_site", None)


@click.command("publish")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--repo-dir", required=True, help="Git URL, bare repository, or a clean work tree whose origin to push to.")
@click.option("--branch", default="gh-pages", show_default=True)
@click.option("--history-subdir", default="history", show_default=True, help="Folder of the history inside the branch.")
@click.option("--message", help="Commit message (default: a count of what was ingested).")
@click.option("--max-retries", type=int, default=5, show_default=True, help="Retries after a rejected (non-fast-forward) push.")
@click.option("--detect/--no-detect", "run_detect", default=True, show_default=True, help="Write <history>/detect.json before committing.")
@click.option("--annotations", type=click.Path(dir_okay=False, path_type=Path), help="Annotations YAML for --detect.")
@click.option("--site-out", help="Also build the trend site into this folder of the branch (needs vkbench.site).")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), help="Keep the checkout here (default: a temporary directory).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def publish_cmd(results, repo_dir, branch, history_subdir, message, max_retries, run_detect, annotations, site_out, workdir, as_json):
    """Ingest RESULTS into the history on BRANCH and push (safe with concurrent publishers)."""
    from ..history.publish import publish

    build_site = _site_builder() if site_out else None
    if site_out and build_site is None:
        warnings.warn("vkbench.site.build.build_site is not available: --site-out skipped", stacklevel=1)
        click.echo("warning: the site builder (vkbench.site) is not installed; skipping --site-out", err=True)
    annotations = annotations.resolve() if annotations else None

    def before_commit(root: Path) -> None:
        history = root / history_subdir
        if run_detect:
            from ..detect.runner import run_detection

            run_detection(history, annotations)
        if build_site is not None:
            build_site(history, root / site_out)

    report = publish(
        results, repo_dir, branch, history_subdir=history_subdir, message=message,
        max_retries=max_retries, before_commit=before_commit, workdir=workdir,
    )
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=1))
        return
    ing = report.ingest
    if report.pushed:
        click.echo(f"pushed {report.commit[:12]} to {branch} (attempt {report.attempts}): {ing.added} new point(s) from {ing.files} file(s)")
    else:
        click.echo(f"nothing new to publish on {branch}: {ing.files} file(s) already in the history")
