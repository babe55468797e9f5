"""The declared runner classes (runners/classes.yaml): the only labels a cell may be routed to.

A cell's ``runner`` reaches ``runs-on: [self-hosted, <runner>, bench-client]`` and the bench
job's concurrency group, so the plan refuses anything not declared there: ``self-hosted``,
``ubuntu-latest``, a role label (``bench-server``) or an unknown class would route a job to a
machine it was never meant for.

A *hosted* class (``hosted:`` in the file, e.g. ``github-hosted``) is a GitHub-hosted runner: shared
hardware, no quiet, no counters. Only instruction-count cells are scheduled there
(:func:`split_hosted`): a count does not depend on the machine's load, a wall-clock number does.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from ..errors import ConfigError


def load_runner_classes(path: str | os.PathLike) -> tuple[list[str], list[str]]:
    """``(classes, roles)`` declared in the file; a malformed file is a ConfigError naming it."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read the runner classes ({exc})", hint="see docs/workflows.md, 'Adding a runner class'") from None
    classes = (data or {}).get("classes") if isinstance(data, dict) else None
    roles = (data or {}).get("roles", []) if isinstance(data, dict) else None
    if not isinstance(classes, dict) or not classes or not isinstance(roles, list):
        raise ConfigError(f"{path}: expected 'classes:' (a mapping) and 'roles:' (a list)", hint="see docs/workflows.md, 'Adding a runner class'")
    return sorted(str(c) for c in classes), [str(r) for r in roles]


def load_hosted_classes(path: str | os.PathLike) -> dict[str, dict]:
    """The hosted classes declared in the file (``{name: {runs_on, arch, description}}``); a
    malformed entry is a ConfigError naming it."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read the runner classes ({exc})", hint="see docs/workflows.md, 'Adding a runner class'") from None
    hosted = (data or {}).get("hosted", {}) if isinstance(data, dict) else {}
    if not isinstance(hosted, dict):
        raise ConfigError(f"{path}: 'hosted:' must be a mapping of class names", hint="see docs/workflows.md, 'Adding a runner class'")
    classes = (data or {}).get("classes") or {}
    for name, entry in hosted.items():
        if not isinstance(entry, dict) or entry.get("runs_on") not in HOSTED_LABELS or name in classes:
            raise ConfigError(f"{path}: hosted class {str(name)[:40]!r} needs runs_on one of {', '.join(HOSTED_LABELS)} "
                              "and a name that is not a self-hosted class", hint="see runners/classes.yaml")
    return {str(k): dict(v) for k, v in hosted.items()}


#: The GitHub-hosted labels a hosted class may run on.
HOSTED_LABELS = ("ubuntu-latest", "ubuntu-24.04", "ubuntu-22.04")


def split_hosted(cells: list, hosted: dict[str, dict]) -> tuple[list, list, list]:
    """``(self_hosted, hosted, left_out)``: cells of a hosted class run there only when they count
    instructions (``instrument: instructions``); its wall-clock and ``both`` cells are left out -
    a shared runner without quiet hardware has no wall-clock number worth a series."""
    own, on_hosted, left_out = [], [], []
    for cell in cells:
        if cell.runner not in hosted:
            own.append(cell)
        elif cell.instrument == "instructions":
            on_hosted.append(cell)
        else:
            left_out.append(cell)
    return own, on_hosted, left_out


def check_runners(runners: list[str], path: str | os.PathLike) -> None:
    """Every runner is a declared class, self-hosted or hosted (not a role, not a GitHub label)."""
    own, _ = load_runner_classes(path)
    classes = sorted(own + list(load_hosted_classes(path)))
    for runner in runners:
        if runner not in classes:
            shown = runner if len(runner) <= 40 else runner[:37] + "..."
            raise ConfigError(
                f"runner class {shown!r} is not declared in {Path(path).name}; allowed: {', '.join(classes)}",
                hint="pick one of the allowed classes (runner_classes input / --runners), or declare a new class in runners/classes.yaml",
            )
