"""``vkbench ci plan``: the benchmark workflow's plan job (was tools/ci/plan.sh).

Inputs arrive as environment variables (the workflow maps ``inputs.*`` into ``env:``; they are
never pasted into a script's text, which would let a dispatch input inject shell):

  VKBENCH_PRESET       preset name or matrix file (required)
  VKBENCH_VERSIONS     e.g. valkey:9.1.2,valkey:unstable    (empty: the preset's)
  VKBENCH_IO_THREADS   e.g. 1,2,4                           (empty: the preset's)
  VKBENCH_TOPOLOGIES   e.g. standalone,cluster:3            (empty: the preset's)
  VKBENCH_TOOL         valkey-benchmark | redis-benchmark | memtier_benchmark (empty: preset's)
  VKBENCH_RUNNERS      runner classes, e.g. cloud-x86,pi-cm4 (empty: the preset's)
  VKBENCH_REPETITIONS  repetitions per cell                 (empty: the preset's)

Every input is checked against an allow-list (a bounded length and an alphabet per input) before
it is used, and never echoed back: a hostile value ends here with an error naming what is
allowed (exit 2). Output: step outputs ``matrix`` ({"include": [...]}) and ``cells``; a table of
cells per runner class in the job summary.
"""

from __future__ import annotations

import collections
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import click

from .. import markdown as md
from ..errors import UsageError
from . import pages
from .actions import InvalidInput, append_summary, set_output

#: GitHub queues at most this many jobs in one concurrency group (``queue: max``); the bench
#: job's group is the runner class, so more cells than this on one class would be cancelled.
QUEUE_LIMIT = 100

_TOPOLOGY = r"(standalone|cluster:[0-9]{1,2}(:[0-9])?|replication:[0-9])"
_VERSION = r"(valkey|redis):[A-Za-z0-9._+-]{1,64}"


@dataclass(frozen=True)
class InputRule:
    env: str
    name: str
    max_length: int
    pattern: str
    allowed: str


RULES = (
    InputRule("VKBENCH_PRESET", "preset", 128, r"[A-Za-z0-9][A-Za-z0-9._/-]*",
              "a preset name (smoke, nightly, ...) or a matrix file path in the repository: letters, digits, . _ / -, "
              "not starting with - or /"),
    InputRule("VKBENCH_VERSIONS", "versions", 512, rf"{_VERSION}(,{_VERSION}){{0,15}}",
              "up to 16 comma-separated engine:version values, engine valkey or redis, e.g. valkey:9.1.2,valkey:unstable"),
    InputRule("VKBENCH_IO_THREADS", "io_threads", 128, r"[0-9]{1,3}(,[0-9]{1,3}){0,31}",
              "up to 32 comma-separated integers, e.g. 1,2,4"),
    InputRule("VKBENCH_TOPOLOGIES", "topologies", 256, rf"{_TOPOLOGY}(,{_TOPOLOGY}){{0,15}}",
              "up to 16 comma-separated topologies: standalone, cluster:N, cluster:N:R, replication:R"),
    InputRule("VKBENCH_TOOL", "tool", 32, r"valkey-benchmark|redis-benchmark|memtier_benchmark",
              "valkey-benchmark, redis-benchmark, memtier_benchmark (or empty: the preset's)"),
    InputRule("VKBENCH_RUNNERS", "runner_classes", 256, r"[a-z0-9-]+(,[a-z0-9-]+){0,15}",
              "comma-separated runner classes from runners/classes.yaml (self-hosted or hosted): {classes}"),
    InputRule("VKBENCH_REPETITIONS", "repetitions", 3, r"[1-9][0-9]?", "an integer from 1 to 99"),
)


class InvalidPlan(UsageError):
    def __init__(self, title: str, message: str, hint: str):
        super().__init__(message, hint=hint)
        self.title = title


def checked_inputs(env: Mapping[str, str], runner_classes: list[str]) -> dict[str, str]:
    """The non-empty inputs by name, each within its rule; else :class:`InvalidInput`."""
    if not env.get("VKBENCH_PRESET"):
        raise InvalidInput("preset", "no preset given (VKBENCH_PRESET is empty)")
    values = {}
    for rule in RULES:
        value = env.get(rule.env, "")
        if not value:
            continue
        allowed = rule.allowed.format(classes=",".join(runner_classes))
        if len(value) > rule.max_length:
            raise InvalidInput(rule.name, f"{rule.name} is {len(value)} characters long; at most {rule.max_length} are allowed ({allowed})")
        if not re.fullmatch(rule.pattern, value, flags=re.ASCII):
            raise InvalidInput(rule.name, f"{rule.name} has characters or a form that is not allowed; allowed: {allowed}")
        values[rule.name] = value
    if ".." in values["preset"]:
        raise InvalidInput("preset", "preset must not contain '..'; allowed: a preset name or a matrix file path in the repository")
    for runner in values.get("runner_classes", "").split(",") if "runner_classes" in values else []:
        if runner not in runner_classes:
            raise InvalidInput("runner_classes", f"runner class {runner} is not declared in runners/classes.yaml; "
                                                 f"allowed: {','.join(runner_classes)}")
    return values


def plan_matrix(values: dict[str, str], runner_classes_file: Path) -> dict:
    """The GitHub matrix of the checked inputs' self-hosted cells (runners checked against the
    declared classes); :func:`plan_matrices` also gives the hosted ones."""
    return plan_matrices(values, runner_classes_file)[0]


def plan_matrices(values: dict[str, str], runner_classes_file: Path) -> tuple[dict, dict, int]:
    """``(self-hosted matrix, hosted matrix, cells left out)``. A hosted class (GitHub-hosted:
    shared, no quiet hardware) gets only the instruction-count cells; its wall-clock cells are left
    out (counted, for the summary). Hosted entries carry ``runs_on``."""
    from ..cli._options import cells_from
    from ..matrix.cells import github_matrix
    from ..matrix.runner_classes import check_runners, load_hosted_classes, split_hosted

    overrides = {"versions": values.get("versions"), "io_threads": values.get("io_threads"),
                 "topologies": values.get("topologies"), "tool": values.get("tool"),
                 "runners": values.get("runner_classes"),
                 "repetitions": int(values["repetitions"]) if "repetitions" in values else None}
    cells = cells_from(values["preset"], (), overrides)
    check_runners(sorted({c.runner for c in cells}), runner_classes_file)
    hosted_classes = load_hosted_classes(runner_classes_file)
    own, hosted, left_out = split_hosted(cells, hosted_classes)
    hosted_matrix = github_matrix(hosted)
    for entry in hosted_matrix["include"]:
        entry["runs_on"] = hosted_classes[entry["runner"]]["runs_on"]
    return github_matrix(own), hosted_matrix, len(left_out)


def cells_per_runner(matrix: dict, hosted: dict | None = None) -> dict[str, int]:
    """Cells per runner class (self-hosted); an empty plan (hosted cells included) or a class past
    the queue limit is refused."""
    counts = collections.Counter(cell["runner"] for cell in matrix["include"])
    if not counts and not (hosted or {}).get("include"):
        raise InvalidPlan("The benchmark plan is empty", "the preset and filters select no cell",
                          hint="widen versions, io_threads, topologies or runner_classes")
    for runner, n in sorted(counts.items()):
        if n > QUEUE_LIMIT:
            raise InvalidPlan("Too many cells for one runner class",
                              f"{runner} has {n} cells; one concurrency group queues at most {QUEUE_LIMIT}",
                              hint="narrow the matrix or split the run")
    return dict(sorted(counts.items()))


def summary(counts: dict[str, int], hosted: dict[str, int] | None = None, left_out: int = 0) -> str:
    lines = [f"### Benchmark plan: {sum(counts.values())} cells", ""]
    if counts:
        lines += md.table(["runner class", "cells"], "lr", ([md.code(runner), str(n)] for runner, n in counts.items()))
    if hosted or left_out:
        lines += ["", f"GitHub-hosted: {sum((hosted or {}).values())} instruction-count cells"
                      + (f" ({', '.join(f'{md.code(r)} {n}' for r, n in hosted.items())})" if hosted else "")
                      + (f"; {left_out} wall-clock cells left out there (no quiet hardware)" if left_out else "")]
    return "\n".join(lines) + "\n\n"


@click.command("plan")
@click.option("--runner-classes", "runner_classes_file", type=click.Path(dir_okay=False, path_type=Path),
              default=lambda: str(pages.runner_classes_file()), show_default="runners/classes.yaml",
              help="The declared runner classes [default: $VKBENCH_RUNNER_CLASSES_FILE or the checkout's].")
def plan_cmd(runner_classes_file: Path) -> None:
    """Check the plan job's inputs (VKBENCH_* variables), expand the matrix, check it, write
    the step outputs `matrix` and `cells` and the summary."""
    from ..matrix.runner_classes import load_hosted_classes, load_runner_classes

    classes, _ = load_runner_classes(runner_classes_file)
    values = checked_inputs(os.environ, classes + sorted(load_hosted_classes(runner_classes_file)))
    matrix, hosted, left_out = plan_matrices(values, runner_classes_file)
    counts = cells_per_runner(matrix, hosted)
    hosted_counts = dict(sorted(collections.Counter(cell["runner"] for cell in hosted["include"]).items()))
    set_output("matrix", json.dumps(matrix, separators=(",", ":")))
    set_output("cells", str(sum(counts.values())))
    # Instruction-count cells of GitHub-hosted classes: a job on `runs_on`, never a self-hosted runner.
    set_output("hosted_matrix", json.dumps(hosted, separators=(",", ":")))
    set_output("hosted_cells", str(len(hosted["include"])))
    append_summary(summary(counts, hosted_counts, left_out))
