"""``vkbench publish``: ingest into a git branch (gh-pages) and push, retrying on races."""

from __future__ import annotations

import gc
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
@click.option("--retry-for", type=click.FloatRange(0, 86400), default=900.0, show_default=True, help="Seconds to keep retrying rejected (non-fast-forward) pushes, with jittered backoff.")
@click.option("--max-retries", type=click.IntRange(0, 10000), default=None, help="Also stop after this many retries (default: bounded by --retry-for only).")
@click.option("--detect/--no-detect", "run_detect", default=True, show_default=True, help="Write <history>/detect.json before committing.")
@click.option("--annotations", type=click.Path(dir_okay=False, path_type=Path), help="Annotations YAML for --detect.")
@click.option("--site-out", help="Also build the trend site into this folder of the branch (needs vkbench.site).")
@click.option("--reference", "reference_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Published figures for the site's overlay [default: the ones shipped with vkbench].")
@click.option("--no-reference", is_flag=True, help="Draw no reference overlay on the site.")
@click.option("--full-site", is_flag=True, help="Rebuild every series of the site (default: only what the new results changed).")
@click.option("--site-branch", default=None,
              help="Put only the site (--site-out) on this branch (the one Pages serves) and keep the history on --branch, "
                   "which is then not published; both are pushed atomically. Migrate with `vkbench history split`.")
@click.option("--keep-raw-days", type=click.IntRange(0, 36500), default=None,
              help="Retention: remove raw outputs older than this before committing (incident profiles stay; default: keep forever).")
@click.option("--keep-results-days", type=click.IntRange(0, 36500), default=None,
              help="Retention: remove full result copies older than this (series points stay forever; default: keep forever).")
@click.option("--shallow/--full-fetch", default=True, show_default=True,
              help="Fetch only the branch tips (--depth 1) and check out only the months the night touches (a partial "
                   "clone; the rest is fetched when read): the publish costs the night's work, not the history's.")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), help="Keep the checkout here (default: a temporary directory).")
@click.option("--strict", is_flag=True,
              help="A result already in the history (same run_id/cell_id) with other numbers is an error (exit 13), not a warning.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def publish_cmd(results, repo_dir, branch, history_subdir, message, retry_for, max_retries, run_detect, annotations, site_out,
                reference_dir, no_reference, full_site, site_branch, keep_raw_days, keep_results_days, shallow, workdir, strict,
                as_json):
    """Ingest RESULTS into the history on BRANCH and push (safe with concurrent publishers)."""
    from ..history.publish import SiteBuild, publish
    from ..paths import check_apart, check_branch_name, check_repo_arg, safe_subpath

    # every name from a flag is checked before anything is read or written
    check_branch_name(branch)
    check_repo_arg(repo_dir)
    safe_subpath(history_subdir, "--history-subdir")
    if site_out:
        safe_subpath(site_out, "--site-out")
        check_apart(Path("/checkout") / site_out, Path("/checkout") / history_subdir, "--site-out")
    build_site = _site_builder() if site_out else None
    if site_out and build_site is None:
        warnings.warn("vkbench.site.build.build_site is not available: --site-out skipped", stacklevel=1)
        click.echo("warning: the site builder (vkbench.site) is not installed; skipping --site-out", err=True)
    annotations = annotations.resolve() if annotations else None
    if Path(repo_dir).exists():  # a local bare repository or work tree: git runs in another directory
        repo_dir = str(Path(repo_dir).resolve())
    if no_reference:
        reference_dir = None
    elif reference_dir is None:
        from ..site.reference import packaged_reference_dir

        reference_dir = packaged_reference_dir()
    else:
        reference_dir = reference_dir.resolve()

    def before_commit(root: Path, store) -> None:
        # one store for detection and the site: the shards the ingest parsed are not parsed again
        history = root / history_subdir
        # The points the ingest parsed (millions of objects at ten years) live until this
        # process ends and hold no garbage: keep the cyclic collector from walking them again at
        # every full collection (seconds each, measured at 132 series x 10 years).
        gc.freeze()
        if run_detect:
            from ..detect.runner import run_detection

            run_detection(history, annotations, store=store)
        if keep_raw_days is not None or keep_results_days is not None:
            from ..history.retain import retain

            click.echo(retain(history, keep_raw_days=keep_raw_days, keep_results_days=keep_results_days).summary(), err=True)

    def build(site_dir: Path, store, sparse: bool):
        # after detection and retention (publish's hooks); sparse on a separate, partial site branch
        site = build_site(store.path, site_dir, reference_dir=reference_dir, full=full_site, store=store, sparse=sparse)
        click.echo(site.summary(), err=True)
        return site

    site = None
    if build_site is not None:
        from ..site.build import MANIFEST, site_inputs

        site = SiteBuild(build=build, reads=site_inputs, manifest=f"data/{MANIFEST}")
    report = publish(
        results, repo_dir, branch, history_subdir=history_subdir, message=message,
        max_retries=max_retries, retry_for=retry_for, before_commit_store=before_commit, workdir=workdir,
        site_branch=site_branch, site_subdir=site_out, shallow=shallow, strict=strict,
        run_days=[d for d in (keep_raw_days, keep_results_days) if d is not None], site=site,
    )
    from .ingest import warn_conflicts

    warn_conflicts(report.ingest.conflicts)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=1))
        return
    ing = report.ingest
    if report.pushed:
        where = f"{branch} and {site_branch}" if site_branch else branch
        click.echo(f"pushed {report.commit[:12]} to {where} (attempt {report.attempts}): {ing.added} new point(s) from {ing.files} file(s)")
    else:
        click.echo(f"nothing new to publish on {branch}: {ing.files} file(s) already in the history")
