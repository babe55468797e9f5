"""Fixtures of the workflow tests under nektos/act (act_harness.py explains the setting).

act is installed by tools/setup/act.sh (tools/setup.sh --test). Without it these tests FAIL with
the command that installs it: a skipped workflow suite would hide a broken workflow.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


import act_harness as ah  # noqa: E402


# Every test of this folder is marked `act` by tests/conftest.py (which also groups it for xdist).


@pytest.fixture(scope="session")
def act_bin() -> Path:
    if not ah.ACT.is_file():
        pytest.fail(f"{ah.ACT} is missing: run tools/setup/act.sh (or tools/setup.sh --test)", pytrace=False)
    return ah.ACT


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory) -> Path:
    """vkbench's dependencies (with the test extras), downloaded once per session.

    Every job installs vkbench into a fresh venv, as on GitHub; the package proxy here sends no
    cacheable responses, so pip would download numpy, scipy & co. again in each job. Jobs get this
    directory in PIP_FIND_LINKS: pip takes a file found there over the same version on the index,
    so the versions installed are still the index's newest."""
    import tomllib

    project = tomllib.loads((ah.REPO / "pyproject.toml").read_text())["project"]
    requirements = [*project["dependencies"], *project.get("optional-dependencies", {}).get("test", [])]
    dest = tmp_path_factory.mktemp("wheelhouse")
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                    "--prefer-binary", "-d", str(dest), *requirements],
                   check=True, capture_output=True, text=True, timeout=900)
    return dest


@pytest.fixture
def act_runner(act_bin, wheelhouse, tmp_path):
    """An ActRunner on a fresh clone of HEAD, with the pinned actions, a job HOME and the host's caches.

    Tests add the gh-pages stand-in (``pages``), secrets, variables and environment."""
    tree, sha = ah.committed_tree(tmp_path / "repo")
    actions = ah.local_actions(tree, tmp_path / "actions")
    env = ah.passthrough_env()
    env["PIP_FIND_LINKS"] = " ".join(filter(None, [os.environ.get("PIP_FIND_LINKS", ""), str(wheelhouse)]))
    runner = ah.ActRunner(tree=tree, work=tmp_path, actions=actions, env=env)
    runner.head_sha = sha  # type: ignore[attr-defined]
    return runner


@pytest.fixture
def pages(tmp_path):
    """A bare repository standing in for the GitHub repository's gh-pages branch."""
    return ah.bare_pages_repo(tmp_path / "pages.git")
