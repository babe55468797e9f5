"""The playbook parses and the roles pass ansible-lint's production profile, offline."""

from __future__ import annotations

import os
import subprocess

from .conftest import REPO, RUNNERS, venv_tool


def run(cmd: list[str], **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        cmd, cwd=REPO, capture_output=True, text=True, timeout=300, env={**os.environ, **env}
    )


def test_playbook_syntax_check():
    result = run(
        [
            venv_tool("ansible-playbook"),
            "--syntax-check",
            "-i",
            str(RUNNERS / "inventory.example.yml"),
            str(RUNNERS / "site.yml"),
        ]
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ansible_lint_production_profile():
    # runners/.ansible-lint sets profile production and offline (no Galaxy on this network).
    result = run(
        [venv_tool("ansible-lint"), "-c", str(RUNNERS / ".ansible-lint"), "--nocolor", "runners/"],
        ANSIBLE_LINT_SKIP_VERSION_CHECK="1",
        ANSIBLE_LINT_NODEPS="1",
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Profile 'production' was required, and it passed" in output, output
