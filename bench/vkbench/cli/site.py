"""``vkbench site build`` and ``vkbench site serve``: the static trend site (docs/site.md)."""

from __future__ import annotations

import os
from pathlib import Path

import click


@click.group("site")
def site_group() -> None:
    """Build or serve the static trend site."""


@site_group.command("build")
@click.option("--history", "history_dir", required=True, type=click.Path(path_type=Path), help="History directory (index.json, series/, detect.json).")
@click.option("--out", "out_dir", required=True, type=click.Path(path_type=Path), help="Output directory; only its index.html, .nojekyll, assets/ and data/ are replaced (atomically, on success).")
@click.option("--reference", "reference_dir", type=click.Path(path_type=Path), default=None,
              help="Published figures for the overlay [default: the ones shipped with vkbench, results/reference of its repository].")
@click.option("--no-reference", is_flag=True, help="Draw no reference overlay.")
@click.option("--repo", default=None, help="owner/name for commit links [default: each engine's repository].")
@click.option("--full", is_flag=True, help="Rebuild every series (default: only those whose history changed since the previous build in --out).")
def build_cmd(history_dir: Path, out_dir: Path, reference_dir: Path | None, no_reference: bool, repo: str | None, full: bool) -> None:
    """Build the site from a history directory."""
    from ..site.build import build_site

    if no_reference:
        reference_dir = None
    elif reference_dir is None:
        from ..site.reference import packaged_reference_dir

        reference_dir = packaged_reference_dir()
    report = build_site(history_dir, out_dir, reference_dir=reference_dir, repo=repo or os.environ.get("VKBENCH_COMMIT_REPO"), full=full)
    click.echo(report.summary())


@site_group.command("serve")
@click.argument("site_dir", type=click.Path(path_type=Path))
@click.option("--port", default=8000, show_default=True, help="Port on 127.0.0.1; 0 picks a free one.")
def serve_cmd(site_dir: Path, port: int) -> None:
    """Serve a built site on 127.0.0.1 until Ctrl-C."""
    from ..site.serve import make_server

    server, url = make_server(site_dir, port)
    click.echo(f"serving {site_dir} at {url} (Ctrl-C to stop)")
    try:
        server.serve_forever()
    finally:
        server.server_close()
