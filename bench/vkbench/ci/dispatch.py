"""``vkbench ci dispatch confirm|bisect``: the nightly's follow-ups, one ``workflow_dispatch`` each
(was ``tools/ci/confirm.sh dispatch`` with inline Python and ``bisect.sh dispatch``, curl in shell).

  confirm: one ab.yml run per detection candidate waiting in the history's detect.json
           (:func:`vkbench.detect.confirmations.dispatch_bodies`).
  bisect:  one bisect.yml run per regression issue that ``vkbench alert`` opened
           (VKBENCH_ALERT_ACTIONS, its --actions-out) whose incident lies between two commits of
           the trusted repository (:func:`vkbench.detect.bisects.bisect_requests`).

The history is a checkout of the branch it lives on (``--history``, else a shallow clone made here
by :mod:`.pages`, only when there is something to dispatch from); the
calls go to GITHUB_REPOSITORY with the step's token (GH_TOKEN, else GITHUB_TOKEN, ``actions:
write``), on GITHUB_REF_NAME (default main). The dispatched workflow checks every input again.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click

from ..errors import ResultFileError
from . import pages
from .actions import append_summary
from .github import client, owner_repo
from .trust import trusted_source


def confirm_bodies(history: Path, ref: str) -> tuple[list[dict], list[str]]:
    import json

    from ..detect import confirmations

    # read as it is: every field a body takes is checked by dispatch_bodies (a malformed request is skipped)
    path = history / "detect.json"
    if path.stat().st_size > 64 * 1024 * 1024:
        raise ResultFileError(f"{path}: larger than 64 MiB", hint="the history's detect.json is damaged")
    try:
        detection = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ResultFileError(f"{path}: not JSON ({exc})", hint="the history's detect.json is damaged") from None
    return confirmations.dispatch_bodies(detection, ref)


def bisect_bodies(history: Path, actions_file: Path, ref: str, runner_classes: list[str], env) -> tuple[list[dict], list[str]]:
    from ..detect import bisects

    requests, skipped = bisects.requests_from_history(history, actions_file, trusted_repository=trusted_source(env).repository,
                                                      runner_classes=set(runner_classes))
    lines = [bisects.describe(r) for r in requests] + [f"- not bisected: {line}" for line in skipped]
    return [bisects.dispatch_body(r, ref) for r in requests], lines


@click.command("dispatch")
@click.argument("what", type=click.Choice(["confirm", "bisect"]))
@click.option("--history", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The history directory of a checkout of its branch (default: a shallow clone of the history's "
              "branch, see vkbench.ci.pages, made only when there is something to dispatch from).")
@click.option("--runner-classes", "runner_classes_file", type=click.Path(dir_okay=False, path_type=Path),
              default=lambda: str(pages.runner_classes_file()),
              show_default="runners/classes.yaml", help="bisect: the classes bisect.yml can run on.")
def dispatch_cmd(what: str, history: Path | None, runner_classes_file: Path) -> None:
    """Dispatch ab.yml per waiting confirmation candidate (confirm) or bisect.yml per new incident (bisect)."""
    with tempfile.TemporaryDirectory(prefix="vkbench-dispatch-") as work:
        _dispatch(what, history, runner_classes_file, Path(work))


def _dispatch(what: str, history: Path | None, runner_classes_file: Path, work: Path) -> None:
    env = os.environ
    ref = env.get("GITHUB_REF_NAME") or "main"
    if what == "confirm":
        if history is None:
            pages.git_auth()
            history = pages.clone_history(work / "pages")
        if not (history / "detect.json").is_file():
            click.echo("no detect.json: nothing to confirm")
            return
        bodies, notes = confirm_bodies(history, ref)
        workflow, heading = "ab.yml", "## Confirmation A/Bs\n\n{n} candidate(s) dispatched to ab.yml.\n"
    else:
        actions = Path(env.get("VKBENCH_ALERT_ACTIONS") or "vkbench-alert/actions.json")
        if not actions.is_file() or not actions.stat().st_size:
            append_summary("## Bisects\n\nalert recorded no actions: nothing to bisect.\n")
            return
        if history is None:
            pages.git_auth()
            history = pages.clone_history(work / "pages")
        from ..matrix.runner_classes import load_runner_classes

        bodies, notes = bisect_bodies(history, actions, ref, load_runner_classes(runner_classes_file)[0], env)
        workflow, heading = "bisect.yml", "## Bisects\n\n{n} incident(s) dispatched to bisect.yml.\n"
    for note in notes if what == "confirm" else ():
        click.echo(note, err=True)
    if bodies:
        github = client(owner_repo(env.get("GITHUB_REPOSITORY", ""), "GITHUB_REPOSITORY"), env)
        for body in bodies:
            github.dispatch_workflow(workflow, body)
    summary = heading.format(n=len(bodies))
    if what == "bisect":
        summary += "\n" + "\n".join(notes) + "\n"
    append_summary(summary)
