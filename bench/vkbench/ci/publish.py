"""The publish job's steps (was tools/ci/publish.sh and export-gab.sh).

``vkbench ci publish`` ingests this run's results into the history's branch, detects change
points, rebuilds the site, commits and pushes (``vkbench publish --strict``: its own retry loop;
a result already on the branch with other numbers fails the job, exit 13, never dropped
silently), then writes the detection report and the io-threads advice to the job summary.

  VKBENCH_RESULTS_DIR   downloaded result files; default vkbench-results
  VKBENCH_PAGES_REPO, VKBENCH_PAGES_BRANCH, VKBENCH_DATA_BRANCH  where (:mod:`.pages`)
  VKBENCH_SITE_OUT      folder of the branch the site is built into; default site
  VKBENCH_KEEP_RAW_DAYS, VKBENCH_KEEP_RESULTS_DAYS  retention of raw outputs and result copies
                        in the history (default: kept forever; series points always are)
  GITHUB_TOKEN          a token that may push (contents: write), only in this step's env

``vkbench ci export-gab`` writes github-action-benchmark's input files for the coarse backstop
chart (rps.json, latency.json, and counts.json when the results were counted) into
VKBENCH_GAB_OUT (default gab), and sets the step output ``counts`` (``true``/``false``): the
workflow charts counts.json only when it exists (github-action-benchmark fails on a missing file).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Mapping

import click

from .. import markdown as md
from ..errors import ExportError, ResultFileError, VkbenchError
from . import pages
from .actions import append_summary, set_output
from .invoke import vkbench


def publish_argv(env: Mapping[str, str], results: Path, workdir: Path) -> list[str]:
    argv = ["publish", str(results), "--strict", "--repo-dir", pages.pages_remote(env), "--detect",
            "--site-out", env.get("VKBENCH_SITE_OUT") or "site", "--workdir", str(workdir)]
    if env.get("VKBENCH_DATA_BRANCH"):
        argv += ["--branch", env["VKBENCH_DATA_BRANCH"], "--site-branch", pages.pages_branch(env)]
    else:
        argv += ["--branch", pages.pages_branch(env)]
    annotations = pages.annotations_file(env)
    if annotations:     # detection honours the known changes recorded in the repository
        argv += ["--annotations", str(annotations)]
    for name, option in (("VKBENCH_KEEP_RAW_DAYS", "--keep-raw-days"), ("VKBENCH_KEEP_RESULTS_DAYS", "--keep-results-days")):
        if env.get(name):
            argv += [option, env[name]]
    return argv


@click.command("publish")
def publish_cmd() -> None:
    """Publish $VKBENCH_RESULTS_DIR into the history's branch and summarise what detection found."""
    env = os.environ
    results = Path(env.get("VKBENCH_RESULTS_DIR") or "vkbench-results")
    files = sorted(results.glob("*.json"))
    if not files:
        raise ResultFileError(f"no result files in {results}: every bench job failed or uploaded nothing",
                              hint="see the bench jobs' logs")
    pages.git_auth()
    with tempfile.TemporaryDirectory(prefix="vkbench-publish-") as work:
        checkout = Path(work) / "pages"       # kept so the summary reads exactly what was pushed
        vkbench(publish_argv(env, results, checkout))
        history = str(checkout / "history")
        annotations = pages.annotations_file(env)
        report = vkbench(["detect", "--history", history, "--format", "markdown", "--no-write",
                          *(["--annotations", str(annotations)] if annotations else [])], capture=True)
        # io-threads advice from the newest sweep of each machine class (empty when none swept);
        # a failure here must not hide the detection report.
        try:
            advice = vkbench(["advise", "--history", history, "--format", "markdown"], capture=True)
        except (VkbenchError, SystemExit):
            advice = "(io-threads advice unavailable: see the publish log)\n"
    append_summary(f"## Benchmark history updated\n\nPublished {len(files)} result file(s) to "
                   f"{md.code(pages.pages_branch(env))}.\n\n{report}{advice}")


@click.command("export-gab")
def export_gab_cmd() -> None:
    """Write rps.json, latency.json (and counts.json) for github-action-benchmark from $VKBENCH_RESULTS_DIR."""
    out = Path(os.environ.get("VKBENCH_GAB_OUT") or "gab")
    vkbench(["export", "gab", os.environ.get("VKBENCH_RESULTS_DIR") or "vkbench-results", "--out", str(out)])
    for name in ("rps.json", "latency.json"):
        path = out / name
        if not path.is_file() or not path.stat().st_size:
            raise ExportError(f"vkbench export gab wrote no {path}", hint="the results hold no throughput or latency to chart")
    counts = out / "counts.json"
    set_output("counts", "true" if counts.is_file() and counts.stat().st_size else "false")
