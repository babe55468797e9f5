"""The declared runner classes (runners/classes.yaml): the only labels a cell may be routed to.

A cell's ``runner`` reaches ``runs-on: [self-hosted, <runner>, bench-client]`` and the bench
job's concurrency group, so the plan refuses anything not declared there: ``self-hosted``,
``ubuntu-latest``, a role label (``bench-server``) or an unknown class would route a job to a
machine it was never meant for.
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


def check_runners(runners: list[str], path: str | os.PathLike) -> None:
    """Every runner is a declared class (not a role, not a GitHub label)."""
    classes, _ = load_runner_classes(path)
    for runner in runners:
        if runner not in classes:
            shown = runner if len(runner) <= 40 else runner[:37] + "..."
            raise ConfigError(
                f"runner class {shown!r} is not declared in {Path(path).name}; allowed: {', '.join(classes)}",
                hint="pick one of the allowed classes (runner_classes input / --runners), or declare a new class in runners/classes.yaml",
            )
