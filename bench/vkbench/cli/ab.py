"""``vkbench ab``: A/B two commits (or a pull request) of a Valkey repository on this machine."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import click

from ..ab import DEFAULT_PRESET, TARGET_MDE, ABOptions, pr_ref, run_ab
from ..errors import UsageError
from ..matrix.cells import cell_from_arg
from ..servers import source_build
from ._options import instrument_options
from .console import make_console


@click.command("ab")
@click.option("--repo", "url", default=None, help="Valkey repository URL [default: $VKBENCH_VALKEY_GIT_URL or upstream].")
@click.option("--base", default="unstable", show_default=True, help="Base ref: branch, tag or (short) SHA.")
@click.option("--candidate", default=None, help="Candidate ref: branch, tag or (short) SHA.")
@click.option("--pr", type=int, default=None, help="Pull request number of --repo: the candidate is its head.")
@click.option("--pr-head", default=None, metavar="SHA",
              help="With --pr: the full SHA of the head commit that was approved; refuse to run if the pull request moved since.")
@click.option("--require-branch", default=None, metavar="BRANCH",
              help="Refuse, before building, unless both commits are on BRANCH of --repo (its tip or an ancestor).")
@click.option("--preset", default=DEFAULT_PRESET, show_default=True, help="Matrix whose cells both sides run.")
@click.option("--cell", "cells", multiple=True, help="One cell (JSON, as `vkbench run --cell`) instead of --preset.")
@click.option("--requests", type=int, default=None, help="Override the request count of every cell.")
@click.option("--specs-from-changes", "specs_from_changes", default=None, metavar="BASE..HEAD",
              help="Instead of --preset: the catalog specs the files changed in BASE..HEAD touch "
                   "(files-to-groups.json; the core set for broad files). Prints which and why.")
@click.option("--changed-files", "changed_files", type=click.File("r"), default=None, metavar="FILE",
              help="Like --specs-from-changes, from a file listing the changed paths (one a line; - for stdin).")
@click.option("--spec-duration", default=10, show_default=True, type=click.IntRange(1, 600),
              help="Seconds each selected spec runs per side and round.")
@click.option("--min-rounds", default=4, show_default=True, help="Pilot rounds (each: every cell on A then B).")
@click.option("--max-rounds", default=20, show_default=True, help="Rounds at most, however noisy the machine.")
@click.option("--target-mde", default=TARGET_MDE, show_default=True, help="Minimum detectable effect to aim for.")
@click.option("--backend", type=click.Choice(["native", "compose"]), default="native", show_default=True)
@click.option("--machine-class", default=None)
@instrument_options
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("vkbench-ab"), show_default=True)
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown", show_default=True)
@click.option("--summary/--no-summary", default=True, show_default=True,
              help="Also append the table to $GITHUB_STEP_SUMMARY when it is set.")
def ab_cmd(url, base, candidate, pr, pr_head, require_branch, preset, cells, requests, specs_from_changes, changed_files,
           spec_duration, min_rounds, max_rounds, target_mde, backend, machine_class, instrument, pairs, counts_target,
           out_dir, fmt, summary) -> None:
    """Build BASE and CANDIDATE of a Valkey repository from source, run the same cells interleaved
    (ABAB...) with enough rounds for the target MDE at this machine's noise, and print the table."""
    url = url or source_build.repo_url()
    if (candidate is None) == (pr is None):
        raise UsageError("give exactly one of --candidate and --pr", hint="e.g. --base unstable --pr 1234")
    if pr_head is not None and (pr is None or not re.fullmatch(r"[0-9a-fA-F]{40}", pr_head)):
        # A prefix could match another commit pushed since (one built unreviewed): the whole SHA only.
        raise UsageError(f"--pr-head {pr_head!r}: needs --pr and the full 40-hex commit SHA",
                         hint="e.g. --pr 1234 --pr-head 4fd5645d80ae5f1c2a0e6bd2d5c3a5e9f1b7c0de")
    options = ABOptions(
        base=base, candidate=candidate or pr_ref(url, pr), url=url, preset=preset,
        cells=[cell_from_arg(c) for c in cells] or None, out_dir=out_dir, backend=backend, target_mde=target_mde,
        min_rounds=min_rounds, max_rounds=max_rounds, requests=requests, machine_class=machine_class,
        expect_candidate=pr_head, require_branch=require_branch, specs_from_changes=specs_from_changes,
        changed_files=read_changed_files(changed_files), spec_duration=spec_duration,
        instrument=instrument, pairs=pairs, counts_target_mde=counts_target,
    )
    if specs_from_changes and changed_files:
        raise UsageError("give one of --specs-from-changes and --changed-files", hint="both name the changed files")
    console = make_console(stderr=True)
    report = run_ab(options, progress=lambda text: console.print(text))
    text = report.markdown()
    if summary and os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a") as handle:
            handle.write(text)
    click.echo(json.dumps(report.to_json(), indent=2) if fmt == "json" else text, nl=False)


MAX_CHANGED_FILES = 10000


def read_changed_files(handle) -> list[str] | None:
    """Paths from a --changed-files file: one a line, blank lines and # comments skipped, bounded."""
    if handle is None:
        return None
    paths: list[str] = []
    for line in handle:
        line = line.strip()
        if line and not line.startswith("#"):
            if len(paths) >= MAX_CHANGED_FILES or len(line) > 4096:
                raise UsageError(f"--changed-files: more than {MAX_CHANGED_FILES} paths, or a line over 4096 characters",
                                 hint="give the output of git diff --name-only")
            paths.append(line)
    return paths
