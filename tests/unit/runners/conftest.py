"""Shared paths for the runner-provisioning tests (runners/: Ansible, cloud-init, scripts)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
RUNNERS = REPO / "runners"
SCRIPTS = RUNNERS / "scripts"
ROLES = RUNNERS / "roles"
# The linters come from the venv running pytest, not from whatever PATH holds.
VENV_BIN = Path(sys.executable).parent


def venv_tool(name: str) -> str:
    tool = VENV_BIN / name
    if not tool.exists():
        pytest.fail(f"{tool} missing: install the test extras (pip install -e '.[test]')")
    return str(tool)


def load_yaml(path: Path):
    return yaml.safe_load(path.read_text())


def role_tasks(role: str) -> list[tuple[Path, dict]]:
    """Every task (and handler) of a role, with the file it is in."""
    found = []
    for sub in ("tasks", "handlers"):
        for path in sorted((ROLES / role / sub).glob("*.yml")):
            for task in load_yaml(path) or []:
                found.append((path, task))
    return found
