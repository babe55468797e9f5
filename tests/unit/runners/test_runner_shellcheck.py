"""Every shell script in the repository passes shellcheck (runners/, tools/, .ci/ and the rest)."""

from __future__ import annotations

import subprocess

from .conftest import REPO, venv_tool

SKIP_DIRS = {".venv", "node_modules", ".git", ".cache"}


def shell_scripts():
    scripts = []
    for path in sorted(REPO.rglob("*.sh")):
        if SKIP_DIRS.isdisjoint(path.relative_to(REPO).parts):
            scripts.append(path)
    # CI entry points such as .ci/run are shell scripts without the .sh suffix.
    for path in sorted((REPO / ".ci").glob("*")):
        if path.is_file() and path.suffix == "" and is_shell(path):
            scripts.append(path)
    return scripts


def is_shell(path) -> bool:
    with path.open("rb") as f:
        first = f.readline()
    return first.startswith(b"#!") and (b"bash" in first or first.rstrip().endswith(b"/sh"))


def test_the_runner_scripts_are_found():
    names = {p.name for p in shell_scripts()}
    assert {"register-runner.sh", "cleanup-after-job.sh", "check-pi-throttling.sh"} <= names


def test_shellcheck_passes_on_every_script():
    scripts = shell_scripts()
    result = subprocess.run(
        [venv_tool("shellcheck"), "--external-sources", *map(str, scripts)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_runner_scripts_are_strict_bash():
    for path in sorted((REPO / "runners" / "scripts").glob("*.sh")):
        text = path.read_text()
        assert text.startswith("#!/usr/bin/env bash\n"), path
        assert "set -euo pipefail" in text, path
        assert "set -x" not in text, f"{path}: tracing would print the credential"
