"""``vkbench ci inputs ab|bisect``: the dispatch inputs of ab.yml and bisect.yml, checked on a
GitHub-hosted runner before any self-hosted runner is used and before the wheel is built
(was tools/ci/ab.sh check, tools/ci/bisect.sh check).

Inputs arrive as environment variables (the workflow maps ``inputs.*`` into ``env:``, never into
a script's text). Every value is checked against a strict pattern and never echoed back in an
error; a refused dispatch ends here (exit 2, an ``::error::`` naming what is allowed) with no
step output and no summary. An accepted one writes the step output ``trusted`` (see
:mod:`.trust`: true only for the nightly's own follow-ups of the trusted repository) and, in the
job summary a reviewer of ``benchmark`` reads before approving, exactly the commits that will be
built.

  ab:     VKBENCH_AB_REPOSITORY, _BASE, _CANDIDATE, _PR, _PRESET, _MAX_ROUNDS, _CONFIRM, _CELL, _INSTRUMENT
  bisect: VKBENCH_BISECT_REPOSITORY, _GOOD, _BAD, _PRESET, _ISSUE, _INCIDENT, _CELL
  both:   VKBENCH_MACHINE_CLASS (a class of runners/classes.yaml), VKBENCH_VALKEY_REPOSITORY/_BRANCH

``vkbench ci run ab|bisect`` checks the same inputs again on the self-hosted runner and runs
``vkbench ab`` / ``vkbench bisect`` with them as separate arguments.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import click

from .. import markdown as md
from ..matrix.server_settings import CELL_INPUT, CELL_INPUT_MAX, ServerSettingError, check_cell_json
from ..paths import CONFIRM_ID, INCIDENT_ID
from . import pages
from .actions import InvalidInput, append_summary, set_output, untrusted_log
from .invoke import vkbench
from .trust import TrustedSource, check_commit, check_repository, is_full_sha, trusted_source

# The ab preset that selects the catalog specs the changed files touch (vkbench ab --specs-from-changes).
SPECS_FROM_CHANGES = "specs-from-changes"
_PRESET = re.compile(r"[a-z0-9][a-z0-9-]{0,39}", re.ASCII)
_NUMBER = re.compile(r"[1-9][0-9]{0,6}", re.ASCII)
_RUNNER_CLASS = re.compile(r"[a-z0-9][a-z0-9-]*", re.ASCII)


def check_runner_class(value: str, classes: list[str]) -> None:
    """One runner class of runners/classes.yaml: it becomes a runs-on label and part of a
    concurrency group, where self-hosted, ubuntu-latest or a role label would route a job."""
    allowed = ",".join(classes)
    if len(value) > 64 or not _RUNNER_CLASS.fullmatch(value):
        raise InvalidInput("runner_class", f"runner_class must be one runner class declared in runners/classes.yaml; allowed: {allowed}")
    if value not in classes:
        raise InvalidInput("runner_class", f"runner class {value} is not declared in runners/classes.yaml; allowed: {allowed}")


def check_cell(value: str) -> None:
    """Empty, or one cell as one line of JSON in a plain alphabet, whose server settings are
    ones a cell may change (:mod:`vkbench.matrix.server_settings`)."""
    if len(value) > CELL_INPUT_MAX:
        raise InvalidInput("cell", f"cell is too long (at most {CELL_INPUT_MAX} characters)")
    if not value:
        return
    if not CELL_INPUT.fullmatch(value):
        raise InvalidInput("cell", 'cell must be one line of JSON: letters, digits, spaces and " { } [ ] : , . _ + = / @ -')
    try:
        check_cell_json(value)
    except ServerSettingError as exc:
        raise InvalidInput("cell", f"cell: {exc}") from None


def _check(pattern: re.Pattern, value: str, name: str, message: str, title: str) -> None:
    if not pattern.fullmatch(value):
        raise InvalidInput(name, message, title=title)


@dataclass(frozen=True)
class AbInputs:
    repository: str
    base: str
    candidate: str
    pr: str
    preset: str
    max_rounds: int
    confirm: str
    cell: str
    runner_class: str
    source: TrustedSource
    instrument: str = "wallclock"

    @property
    def trusted(self) -> bool:
        return self.source.is_follow_up(self.repository, self.confirm)


@dataclass(frozen=True)
class BisectInputs:
    repository: str
    good: str
    bad: str
    preset: str
    issue: str
    incident: str
    cell: str
    runner_class: str
    source: TrustedSource

    @property
    def trusted(self) -> bool:
        return self.source.is_follow_up(self.repository, self.incident)


def check_ab(env: Mapping[str, str], classes: list[str]) -> AbInputs:
    title = "A/B inputs"
    get = lambda name, default="": env.get(f"VKBENCH_AB_{name}") or default  # noqa: E731
    repo, base, cand, pr = get("REPOSITORY"), get("BASE"), get("CANDIDATE"), get("PR")
    check_repository(repo, title)
    source = trusted_source(env)
    check_commit("base", base, repo, source)
    if pr:
        _check(_NUMBER, pr, "pr", "pr must be a pull request number", title)
        if not is_full_sha(cand):
            raise InvalidInput("candidate", "with pr, candidate must be the full SHA of the pull request's head commit that was approved", title=title)
    else:
        if not cand:
            raise InvalidInput("candidate", "candidate must be a commit (or give pr)", title=title)
        check_commit("candidate", cand, repo, source)
    preset = get("PRESET", "ab")
    _check(_PRESET, preset, "preset", "preset must be a preset name (letters, digits and -, not starting with -)", title)
    confirm = get("CONFIRM")
    if confirm:
        _check(CONFIRM_ID, confirm, "confirm", "confirm must be confirm-<12 hex>", title)
        # A confirmation's verdict goes into the history: never from a pull request's code, and
        # only for the nightly's own candidates, which are commits of the trusted repository.
        if pr:
            raise InvalidInput("confirm", "confirm is for the nightly's own candidates, never a pull request", title=title)
        if repo != source.repository:
            raise InvalidInput("confirm", "confirm is for the nightly's own candidates: the repository must be the trusted one "
                                          "(VKBENCH_VALKEY_REPOSITORY)", title=title)
    cell = env.get("VKBENCH_AB_CELL", "")
    check_cell(cell)
    rounds = get("MAX_ROUNDS", "20")
    if not re.fullmatch(r"[0-9]{1,3}", rounds, re.ASCII) or not 4 <= int(rounds) <= 200:
        raise InvalidInput("max_rounds", "max_rounds must be 4..200", title=title)
    if preset == SPECS_FROM_CHANGES and cell:
        raise InvalidInput("cell", f"give one of cell and preset {SPECS_FROM_CHANGES}", title=title)
    # wallclock (default), instructions or both: the nightly's confirmation of a counted series
    # asks for instructions (vkbench ab --instrument).
    instrument = get("INSTRUMENT", "wallclock")
    if instrument not in ("wallclock", "instructions", "both"):
        raise InvalidInput("instrument", "instrument must be wallclock, instructions or both", title=title)
    runner_class = env.get("VKBENCH_MACHINE_CLASS", "")
    check_runner_class(runner_class, classes)
    return AbInputs(repo, base, cand, pr, preset, int(rounds), confirm, cell, runner_class, source, instrument)


def check_bisect(env: Mapping[str, str], classes: list[str]) -> BisectInputs:
    title = "bisect inputs"
    get = lambda name, default="": env.get(f"VKBENCH_BISECT_{name}") or default  # noqa: E731
    issue, incident = get("ISSUE"), get("INCIDENT")
    if issue:
        _check(_NUMBER, issue, "incident_issue", "incident_issue must be an issue number", title)
    if incident:
        # an incident id of detect.json: 12 hex, or inc-<12 hex> for one a confirmation A/B opened
        _check(INCIDENT_ID, incident, "incident", "incident must be an incident id (12 hex or inc-<12 hex>)", title)
    repo, good, bad = get("REPOSITORY"), get("GOOD"), get("BAD")
    check_repository(repo, title)
    source = trusted_source(env)
    check_commit("good", good, repo, source)
    check_commit("bad", bad, repo, source)
    preset = get("PRESET", "ab")
    _check(_PRESET, preset, "preset", "preset must be a preset name (letters, digits and -, not starting with -)", title)
    cell = env.get("VKBENCH_BISECT_CELL", "")
    check_cell(cell)
    # An incident's culprit goes into the history: only with the issue it belongs to.
    if incident and not issue:
        raise InvalidInput("incident", "incident needs incident_issue (the incident's issue number)", title=title)
    runner_class = env.get("VKBENCH_MACHINE_CLASS", "")
    check_runner_class(runner_class, classes)
    return BisectInputs(repo, good, bad, preset, issue, incident, cell, runner_class, source)


# -- what the reviewer reads ------------------------------------------------------------------
def _commit_words(value: str) -> str:
    if is_full_sha(value):
        return f"commit {md.text(value)}"
    return f"{md.text(value)} of the trusted repository (its tip when the job starts)"


def _approval_table(heading: str, rows: list[tuple[str, str]], trusted_line: str | None) -> str:
    lines = [f"## {heading}", "", *md.table(["", ""], "ll", [[name, value] for name, value in rows])]
    if trusted_line:
        lines += ["", trusted_line]
    return "\n".join(lines) + "\n\n"


def ab_summary(inputs: AbInputs) -> str:
    if inputs.pr:
        candidate = f"pull request #{inputs.pr} at commit {md.text(inputs.candidate)} (refused if its head moved)"
    else:
        candidate = _commit_words(inputs.candidate)
    trusted = (f"Trusted: the confirmation {md.text(inputs.confirm)} of two commits of the trusted repository "
               "(runs without a reviewer once both are checked on its branch).") if inputs.trusted else None
    return _approval_table("A/B to approve", [("repository", md.text(inputs.repository)),
                                              ("base", _commit_words(inputs.base)), ("candidate", candidate)], trusted)


def bisect_summary(inputs: BisectInputs) -> str:
    trusted = (f"Trusted: the bisect of incident {md.text(inputs.incident)} between two commits of the trusted repository "
               "(runs without a reviewer once both are checked on its branch).") if inputs.trusted else None
    return _approval_table("Bisect to approve", [("repository", md.text(inputs.repository)),
                                                 ("good", _commit_words(inputs.good)), ("bad", _commit_words(inputs.bad))], trusted)


# -- the self-hosted job's command --------------------------------------------------------------
def ab_argv(inputs: AbInputs, env: Mapping[str, str]) -> list[str]:
    argv = ["ab", "--repo", inputs.repository, "--base", inputs.base,
            "--max-rounds", str(inputs.max_rounds), "--machine-class", inputs.runner_class,
            "--out", env.get("VKBENCH_AB_DIR") or "vkbench-ab", "--backend", env.get("VKBENCH_BACKEND") or "native",
            "--instrument", inputs.instrument]
    if inputs.preset == SPECS_FROM_CHANGES:
        # The candidate is a commit here (with pr: the approved head's full SHA): what the PR changes.
        argv += ["--specs-from-changes", f"{inputs.base}..{inputs.candidate}"]
    else:
        argv += ["--preset", inputs.preset]
    if inputs.pr:
        argv += ["--pr", inputs.pr, "--pr-head", inputs.candidate]
    else:
        argv += ["--candidate", inputs.candidate]
    if inputs.cell:
        argv += ["--cell", inputs.cell]
    # The inputs job chose the environment from the same inputs (VKBENCH_AB_TRUSTED, its output):
    # either one saying "trusted" means both commits must be on the trusted repository's branch.
    if inputs.trusted or env.get("VKBENCH_AB_TRUSTED") == "true":
        argv += ["--require-branch", inputs.source.branch]
    return argv


def bisect_argv(inputs: BisectInputs, env: Mapping[str, str]) -> list[str]:
    argv = ["bisect", "--repo", inputs.repository, "--good", inputs.good, "--bad", inputs.bad, "--preset", inputs.preset,
            "--machine-class", inputs.runner_class, "--out", env.get("VKBENCH_BISECT_DIR") or "vkbench-bisect"]
    if inputs.cell:
        argv += ["--cell", inputs.cell]
    if inputs.trusted or env.get("VKBENCH_BISECT_TRUSTED") == "true":
        argv += ["--require-branch", inputs.source.branch]
    return argv


def _load_classes(path: Path) -> list[str]:
    from ..matrix.runner_classes import load_runner_classes

    return load_runner_classes(path)[0]


_WORKFLOWS = click.Choice(["ab", "bisect"])
_CLASSES_OPTION = click.option(
    "--runner-classes", "runner_classes_file", type=click.Path(dir_okay=False, path_type=Path),
    default=lambda: str(pages.runner_classes_file()), show_default="runners/classes.yaml",
    help="The declared runner classes [default: $VKBENCH_RUNNER_CLASSES_FILE or runners/classes.yaml].")


@click.command("inputs")
@click.argument("workflow", type=_WORKFLOWS)
@_CLASSES_OPTION
def inputs_cmd(workflow: str, runner_classes_file: Path) -> None:
    """Check ab.yml's or bisect.yml's dispatch inputs (VKBENCH_* variables); write the step output
    `trusted` and the summary a reviewer approves."""
    classes = _load_classes(runner_classes_file)
    if workflow == "ab":
        ab = check_ab(os.environ, classes)
        untrusted_log(f"A/B of {ab.repository}: base {ab.base}, candidate {f'pull request #{ab.pr} ' if ab.pr else ''}{ab.candidate}")
        if ab.trusted:
            click.echo("trusted: a confirmation of two commits of the nightly's repository (checked on its branch before building)")
        append_summary(ab_summary(ab))
        trusted = ab.trusted
    else:
        bisect = check_bisect(os.environ, classes)
        untrusted_log(f"bisect {bisect.repository}: {bisect.good}..{bisect.bad}")
        if bisect.trusted:
            click.echo("trusted: the bisect of an incident between commits of the nightly's repository (checked on its branch before building)")
        append_summary(bisect_summary(bisect))
        trusted = bisect.trusted
    set_output("trusted", "true" if trusted else "false")


@click.command("run")
@click.argument("workflow", type=_WORKFLOWS)
@_CLASSES_OPTION
@click.option("--print-argv", is_flag=True, help="Print the vkbench command (JSON) instead of running it.")
def run_cmd(workflow: str, runner_classes_file: Path, print_argv: bool) -> None:
    """Check the inputs again and run `vkbench ab` or `vkbench bisect` with them."""
    classes = _load_classes(runner_classes_file)
    if workflow == "ab":
        argv = ab_argv(check_ab(os.environ, classes), os.environ)
    else:
        argv = bisect_argv(check_bisect(os.environ, classes), os.environ)
    if print_argv:
        click.echo(json.dumps(argv))
        return
    # in this process: its errors reach vkbench's own edge (message, hint, annotation, exit code)
    vkbench(argv)
