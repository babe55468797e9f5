"""``vkbench ci record confirm|bisect``: record a follow-up's verdict in the history on its branch
and push (was ``ci_record_in_history`` in tools/ci/lib.sh, a second retry loop in shell). The
branch update is :func:`vkbench.history.publish.update_branch`: publish's own loop, bounded by
time, with full jitter; each attempt starts from the branch's new tip and records again.

  confirm: ``vkbench confirm`` of VKBENCH_CONFIRM_ID (confirm-<12 hex>) with VKBENCH_AB_DIR/ab.json
  bisect:  ``vkbench bisect-record`` of VKBENCH_BISECT_INCIDENT with VKBENCH_BISECT_DIR/bisect.json
           (run URL VKBENCH_WORKFLOW_RUN_URL), then the site rebuilt into --site-out

Detection honours the known changes recorded in the repository (``--annotations``, as publish
does). What the record printed goes to the job summary when it was pushed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable

import click

from ..errors import UsageError, VkbenchError
from ..paths import CONFIRM_ID, INCIDENT_ID
from . import pages
from .actions import InvalidInput, append_summary
from .invoke import vkbench

_FOLDER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}", re.ASCII)


def _vkbench(argv: list[str], *, quiet: bool = False) -> str:
    """Run one vkbench command in this process; its stdout (``quiet``: dropped)."""
    return vkbench(argv, capture=not quiet, quiet=quiet)


def confirm_step(env, annotations: Path | None) -> tuple[str, str, Callable[[Path], str]]:
    rid = env.get("VKBENCH_CONFIRM_ID", "")
    if not CONFIRM_ID.fullmatch(rid):
        raise InvalidInput("VKBENCH_CONFIRM_ID", "VKBENCH_CONFIRM_ID must be confirm-<12 hex>", title="confirm")
    ab = Path(env.get("VKBENCH_AB_DIR") or "vkbench-ab") / "ab.json"
    if not ab.is_file() or not ab.stat().st_size:
        raise VkbenchError("no ab.json: the A/B failed, the candidate stays waiting")
    extra = ["--annotations", str(annotations)] if annotations else []

    def apply(root: Path) -> str:
        return _vkbench(["confirm", "--history", str(root / "history"), "--id", rid, "--ab", str(ab.resolve()), *extra])

    return f"confirm {rid}", "Confirmation", apply


def bisect_step(env, annotations: Path | None, site_out: str) -> tuple[str, str, Callable[[Path], str]]:
    incident = env.get("VKBENCH_BISECT_INCIDENT", "")
    if not INCIDENT_ID.fullmatch(incident):
        raise InvalidInput("incident", "record needs VKBENCH_BISECT_INCIDENT (the incident id: 12 hex or inc-<12 hex>)",
                           title="bisect inputs")
    report = Path(env.get("VKBENCH_BISECT_DIR") or "vkbench-bisect") / "bisect.json"
    if not report.is_file() or not report.stat().st_size:
        raise VkbenchError("no bisect.json: the bisect failed, nothing to record")
    if not _FOLDER.fullmatch(site_out):
        raise UsageError(f"--site-out {site_out[:80]!r} must be a folder name of the pages branch", hint="e.g. --site-out site")
    extra = ["--annotations", str(annotations)] if annotations else []
    if env.get("VKBENCH_WORKFLOW_RUN_URL"):
        extra += ["--run-url", env["VKBENCH_WORKFLOW_RUN_URL"]]

    def apply(root: Path) -> str:
        out = _vkbench(["bisect-record", "--history", str(root / "history"), "--incident", incident,
                        "--bisect", str(report.resolve()), *extra])
        # The site's overview shows the culprit: rebuild it (incremental: only detect.json changed).
        _vkbench(["site", "build", "--history", str(root / "history"), "--out", str(root / site_out)], quiet=True)
        return out

    return f"bisect {incident}", "Bisect recorded", apply


@click.command("record")
@click.argument("what", type=click.Choice(["confirm", "bisect"]))
@click.option("--remote", default=None, help="The git URL or path of the repository the history's branch is in "
              "(default: $VKBENCH_PAGES_REPO, else this repository on GitHub).")
@click.option("--branch", default=None, help="The branch history/ lives on (default: $VKBENCH_DATA_BRANCH, else "
              "$VKBENCH_PAGES_BRANCH, else gh-pages).")
@click.option("--annotations", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Known changes (default: the checkout's results/annotations.yaml); skipped when the file does not exist.")
@click.option("--site-out", default=lambda: os.environ.get("VKBENCH_SITE_OUT") or "site", show_default="site",
              help="bisect: the folder of the branch the site is built into.")
@click.option("--retry-for", type=float, default=900.0, show_default=True, help="Seconds to keep retrying a push that lost a race.")
def record_cmd(what: str, remote: str | None, branch: str | None, annotations: Path | None, site_out: str,
               retry_for: float) -> None:
    """Record a confirmation A/B's verdict (confirm) or a bisect's culprit (bisect) in the history and push
    (with the step's GITHUB_TOKEN, contents: write)."""
    from ..history.publish import update_branch

    annotations = annotations or pages.annotations_file()
    annotations = annotations.resolve() if annotations and annotations.is_file() else None
    remote, branch = remote or pages.pages_remote(), branch or pages.history_branch()
    pages.git_auth()
    if what == "confirm":
        message, title, apply = confirm_step(os.environ, annotations)
    else:
        message, title, apply = bisect_step(os.environ, annotations, site_out)
    report = update_branch(remote, branch, apply, message, retry_for=retry_for)
    for line in report.messages:
        click.echo(line, err=True)
    if report.pushed:
        append_summary(f"## {title}\n\n{report.output}\n")
    else:
        click.echo(report.output, nl=False)
