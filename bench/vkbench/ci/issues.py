"""The steps that write GitHub issues from the published history (was tools/ci/alert.sh and
digest.sh). Each runs in its own job, so that ``issues: write`` is granted nowhere else.

``vkbench ci alert``: open, update or close one issue per regression incident.
``vkbench ci digest``: the weekly digest, opened (or, on a re-run, updated) as one issue.

  GITHUB_REPOSITORY             where the issues go (OWNER/NAME)
  GITHUB_TOKEN                  a token with issues: write, only in this step's env
  VKBENCH_API_URL               default $GITHUB_API_URL (the local chain test points it at a stand-in)
  VKBENCH_PAGES_REPO/_BRANCH, VKBENCH_DATA_BRANCH  where the history is (:mod:`.pages`)
  VKBENCH_FAIL_ON_REGRESSION    alert, "true": fail the job (exit 10) while a regression is open
  VKBENCH_ALERT_ACTIONS         alert: also write what was done (--actions-out) to this file: the
                                next job dispatches bisects of the issues opened
  VKBENCH_DIGEST_SINCE          digest: the window (default 7d)
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from pathlib import Path
from typing import Mapping

import click

from . import pages
from .actions import append_summary
from .github import owner_repo
from .invoke import vkbench


def _api(env: Mapping[str, str]) -> list[str]:
    api = env.get("VKBENCH_API_URL") or env.get("GITHUB_API_URL")
    return ["--api-url", api] if api else []


def alert_argv(env: Mapping[str, str], history: Path) -> list[str]:
    argv = ["alert", "--repo", owner_repo(env.get("GITHUB_REPOSITORY", ""), "GITHUB_REPOSITORY"),
            "--history", str(history), "--token-env", "GITHUB_TOKEN", *_api(env)]
    if env.get("GITHUB_SERVER_URL"):
        argv += ["--server-url", env["GITHUB_SERVER_URL"]]
    if env.get("VKBENCH_FAIL_ON_REGRESSION", "false") == "true":
        argv += ["--fail-on", "regression"]
    if env.get("VKBENCH_ALERT_ACTIONS"):
        argv += ["--actions-out", env["VKBENCH_ALERT_ACTIONS"]]
    return argv


def digest_argv(env: Mapping[str, str], history: Path, out: Path) -> list[str]:
    argv = ["digest", "--history", str(history), "--since", env.get("VKBENCH_DIGEST_SINCE") or "7d", "--out", str(out),
            "--repo", owner_repo(env.get("GITHUB_REPOSITORY", ""), "GITHUB_REPOSITORY"), "--token-env", "GITHUB_TOKEN",
            *_api(env)]
    annotations = pages.annotations_file(env)
    if annotations:
        argv += ["--annotations", str(annotations)]
    return argv


@click.command("alert")
def alert_cmd() -> None:
    """Open, update or close one GitHub issue per regression incident of the published history."""
    env = os.environ
    owner_repo(env.get("GITHUB_REPOSITORY", ""), "GITHUB_REPOSITORY")     # refused before any clone
    pages.git_auth()
    with tempfile.TemporaryDirectory(prefix="vkbench-alert-") as work:
        history = pages.clone_history(Path(work) / "pages")
        argv, buffer = alert_argv(env, history), io.StringIO()
        try:
            with contextlib.redirect_stdout(buffer):
                vkbench(argv)
        finally:
            # Also when a regression is open (exit 10, annotated by vkbench with its hint).
            output = buffer.getvalue()
            click.echo(output, nl=False)
            append_summary(f"## Regression alerts\n\n{output.strip() or 'no incident changed'}\n")


@click.command("digest")
def digest_cmd() -> None:
    """Open (or update) the weekly digest issue and write the digest to the job summary."""
    env = os.environ
    owner_repo(env.get("GITHUB_REPOSITORY", ""), "GITHUB_REPOSITORY")
    pages.git_auth()
    with tempfile.TemporaryDirectory(prefix="vkbench-digest-") as work:
        history = pages.clone_history(Path(work) / "pages")
        out = Path(work) / "digest.md"
        vkbench(digest_argv(env, history, out))
        append_summary(out.read_text(encoding="utf-8"))
