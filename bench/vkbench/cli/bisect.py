"""``vkbench bisect``: name the commit of a regression between a good and a bad commit."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from ..ab import DEFAULT_PRESET, ABOptions
from ..bisect import run_bisect
from ..matrix.cells import cell_from_arg
from ..servers import source_build
from ._options import instrument_options
from .console import make_console


@click.command("bisect")
@click.option("--repo", "url", default=None, help="Valkey repository URL [default: $VKBENCH_VALKEY_GIT_URL or upstream].")
@click.option("--good", required=True, help="A commit (or ref) without the regression.")
@click.option("--bad", required=True, help="A later commit (or ref) with it.")
@click.option("--require-branch", default=None, metavar="BRANCH",
              help="Refuse, before building, unless GOOD and BAD are on BRANCH of --repo (its tip or an ancestor).")
@click.option("--preset", default=DEFAULT_PRESET, show_default=True, help="Matrix whose cells each A/B runs.")
@click.option("--cell", "cells", multiple=True, help="One cell (JSON, as `vkbench run --cell`) instead of --preset.")
@click.option("--requests", type=int, default=None, help="Override the request count of every cell.")
@click.option("--min-rounds", default=3, show_default=True, help="Pilot rounds of each A/B step.")
@click.option("--max-rounds", default=10, show_default=True, help="Rounds at most per A/B step.")
@click.option("--target-mde", default=0.02, show_default=True)
@click.option("--machine-class", default=None)
@instrument_options
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("vkbench-bisect"), show_default=True)
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown", show_default=True)
def bisect_cmd(url, good, bad, require_branch, preset, cells, requests, min_rounds, max_rounds, target_mde, machine_class, instrument, pairs,
               counts_target, out_dir, fmt) -> None:
    """A/B GOOD vs BAD (the regression must reproduce), then build and A/B midpoints against GOOD
    until one commit remains; print the culprit, its effect and every step."""
    url = url or source_build.repo_url()
    template = ABOptions(base=good, candidate=bad, url=url, preset=preset, cells=[cell_from_arg(c) for c in cells] or None,
                         min_rounds=min_rounds, max_rounds=max_rounds, target_mde=target_mde, requests=requests,
                         machine_class=machine_class, trigger="bisect", require_branch=require_branch,
                         instrument=instrument, pairs=pairs, counts_target_mde=counts_target)
    console = make_console(stderr=True)
    report = run_bisect(url, good, bad, template, out_dir, progress=lambda text: console.print(text))
    text = report.markdown()
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a") as handle:
            handle.write(text)
    click.echo(json.dumps(report.to_json(), indent=2) if fmt == "json" else text, nl=False)
