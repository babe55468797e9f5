"""``vkbench bisect-requests``: which incidents alert just opened an issue for get an automatic bisect."""

from __future__ import annotations

from pathlib import Path

import click

from ..detect import bisects
from ..files import write_json


@click.command("bisect-requests")
@click.option("--history", "history", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="History directory holding detect.json (the one alert read).")
@click.option("--actions", "actions_file", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="What `vkbench alert --actions-out FILE` wrote.")
@click.option("--repository", required=True, help="The trusted repository: only incidents built from it are bisected.")
@click.option("--runner-class", "runner_classes", multiple=True, required=True,
              help="A runner class bisect.yml can run on (repeat); other machine classes are skipped.")
@click.option("--ref", default="main", show_default=True, help="The ref bisect.yml is dispatched on.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Write one workflow_dispatch body per request here (0000.json, 0001.json, ...).")
def bisect_requests_cmd(history: Path, actions_file: Path, repository: str, runner_classes: tuple[str, ...], ref: str,
                        out_dir: Path) -> None:
    """Write one bisect.yml dispatch body per regression issue that alert opened whose incident
    lies between two commits of REPOSITORY; print what was chosen and what was skipped."""
    requests, skipped = bisects.requests_from_history(history, actions_file, trusted_repository=repository,
                                                      runner_classes=set(runner_classes))
    out_dir.mkdir(parents=True, exist_ok=True)
    for n, request in enumerate(requests):
        write_json(out_dir / f"{n:04d}.json", bisects.dispatch_body(request, ref))
        click.echo(bisects.describe(request))
    for line in skipped:
        click.echo(f"- not bisected: {line}")
