"""``vkbench ci comment pr|bisect``: post a Markdown report as a comment (was tools/ci/pr-comment.sh
and ``bisect.sh comment``, curl in shell), through the one GitHub client.

  pr:     the A/B table (VKBENCH_AB_DIR/ab.md, else compare.md) on pull request VKBENCH_PR_NUMBER of
          VKBENCH_PR_REPO (else the github.com repository of VKBENCH_AB_REPOSITORY, else
          GITHUB_REPOSITORY), with VKBENCH_AB_RESULT and VKBENCH_WORKFLOW_RUN_URL; then the trigger
          label VKBENCH_LABEL (default run-benchmark) is taken off, so adding it again starts a new
          run. No token (GH_TOKEN): a warning, nothing posted.
  bisect: VKBENCH_BISECT_DIR/bisect.md on issue VKBENCH_BISECT_ISSUE of GITHUB_REPOSITORY (no issue
          or no report: nothing to do).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import click

from ..errors import AlertError
from .actions import InvalidInput, annotate
from .github import client, owner_repo, token

#: A comment holds at most 65536 characters; the full table stays in the artifact.
MAX_TABLE = 60_000
_NUMBER = re.compile(r"[0-9]{1,9}", re.ASCII)
_LABEL = re.compile(r"[A-Za-z0-9_.-]{1,50}", re.ASCII)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() and path.stat().st_size else ""


def pr_comment_body(ab_dir: Path, result: str, run_url: str) -> str:
    table = _read(ab_dir / "ab.md") or _read(ab_dir / "compare.md")
    body = f"### vkbench A/B: base vs this PR\n\nJob result: **{result or 'unknown'}** · [workflow run]({run_url})\n\n"
    return body + (table[:MAX_TABLE] if table else "No comparison was produced; see the workflow run.\n")


def pr_repository(env) -> str | None:
    """The pull request's OWNER/NAME; None for a repository that is not on github.com."""
    if env.get("VKBENCH_PR_REPO"):
        return env["VKBENCH_PR_REPO"]
    url = env.get("VKBENCH_AB_REPOSITORY", "")
    if url:
        return url.removeprefix("https://github.com/") if url.startswith("https://github.com/") else None
    return env.get("GITHUB_REPOSITORY", "")


@click.command("comment")
@click.argument("what", type=click.Choice(["pr", "bisect"]))
def comment_cmd(what: str) -> None:
    """Comment the A/B table on its pull request (pr) or the bisect's report on its incident (bisect)."""
    env = os.environ
    if what == "bisect":
        issue = env.get("VKBENCH_BISECT_ISSUE", "")
        if not issue:
            return
        if not re.fullmatch(r"[1-9][0-9]{0,6}", issue, re.ASCII):
            raise InvalidInput("incident_issue", "incident_issue must be an issue number")
        report = _read(Path(env.get("VKBENCH_BISECT_DIR") or "vkbench-bisect") / "bisect.md")
        if not report:
            annotate("warning", "bisect", "no bisect.md was produced; nothing to comment")
            click.echo("no bisect.md was produced; nothing to comment", err=True)
            return
        repo = owner_repo(env.get("GITHUB_REPOSITORY", ""), "GITHUB_REPOSITORY")
        client(repo, env).comment(int(issue), report)
        return
    number = env.get("VKBENCH_PR_NUMBER", "")
    if not _NUMBER.fullmatch(number):
        raise InvalidInput("VKBENCH_PR_NUMBER", "VKBENCH_PR_NUMBER must be a number")
    repo = pr_repository(env)
    if repo is None:
        annotate("notice", "comment", "only github.com pull requests get a comment; the table is in the summary")
        return
    repo = owner_repo(repo, "VKBENCH_PR_REPO")
    label = env.get("VKBENCH_LABEL") or "run-benchmark"
    if not _LABEL.fullmatch(label):
        raise InvalidInput("VKBENCH_LABEL", "VKBENCH_LABEL must be a plain label name")
    if not token(env):
        annotate("warning", "comment", f"no token for {repo} is configured: the table is in the job summary only")
        click.echo(f"no token for {repo} is configured: the table is in the job summary only", err=True)
        return
    github = client(repo, env)
    body = pr_comment_body(Path(env.get("VKBENCH_AB_DIR") or "vkbench-ab"), env.get("VKBENCH_AB_RESULT", ""),
                           env.get("VKBENCH_WORKFLOW_RUN_URL", ""))
    github.comment(int(number), body)
    try:
        github.remove_label(int(number), label)
    except AlertError as exc:
        annotate("warning", "label", f"could not remove the {label} label: {exc.message}")
        click.echo(f"warning: could not remove the {label} label: {exc.message}", err=True)
