"""Every `uses:` pin names a real commit of its action's repository, and its comment is the tag there.

tools/verify_action_pins.py checks the pins against the action snapshots in
$VKBENCH_ACTIONS_SNAPSHOTS (.ci/run points it at the vendored snapshots when they exist) and, when
github.com answers, against the tags on GitHub. One of the two must be available: a pin checked
against nothing would pass for the wrong reason, so the test fails then and says what to set.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from workflow_paths import REPO, WORKFLOWS

TOOL = REPO / "tools" / "verify_action_pins.py"


def run_tool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), "--json", *args], capture_output=True, text=True, timeout=300)


def test_every_pin_is_a_commit_of_its_repository_at_its_tag():
    snapshots = os.environ.get("VKBENCH_ACTIONS_SNAPSHOTS")
    args = ["--snapshots", snapshots] if snapshots else []
    proc = run_tool(*args, "--online", "auto")
    report = json.loads(proc.stdout)
    if not snapshots and not report["online"]:
        pytest.fail("no source of truth for the action pins: set VKBENCH_ACTIONS_SNAPSHOTS to a directory of "
                    "<owner>+<repo>@<sha>.tar.gz snapshots, or run where github.com is reachable", pytrace=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pins = report["pins"]
    # Every distinct pin was checked against at least one source.
    assert pins and all(p["checked"] for p in pins), pins
    actions = {p["action"] for p in pins}
    assert "benchmark-action/github-action-benchmark" in actions


def test_a_wrong_sha_is_caught(tmp_path):
    """The pin this check exists for: v1.20.4 of github-action-benchmark with a SHA that shares
    only its first 18 hex digits with the real commit."""
    snapshots = os.environ.get("VKBENCH_ACTIONS_SNAPSHOTS")
    if not snapshots:
        pytest.fail("set VKBENCH_ACTIONS_SNAPSHOTS (see tools/verify_action_pins.py)", pytrace=False)
    wf = tmp_path / "wf"
    wf.mkdir()
    (wf / "x.yml").write_text(
        "jobs:\n  a:\n    steps:\n"
        "      - uses: benchmark-action/github-action-benchmark@d48d326b4ca9ba73ca32a28a0dbe91660ab6f6bd # v1.20.4\n"
        "      - uses: actions/checkout@v6\n"
    )
    proc = run_tool("--workflows", str(wf), "--snapshots", snapshots, "--online", "no")
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert any("no snapshot of that commit" in msg for p in report["pins"] for msg in p["problems"])
    assert any("actions/checkout@v6" in msg for msg in report["problems"])


def test_security_doc_pin_table_matches_the_workflows():
    """docs/security.md lists each pinned action with its tag and commit: the same as the workflows."""
    table = {}
    for line in (REPO / "docs" / "security.md").read_text().splitlines():
        m = re.match(r"^\|\s*`([^`]+/[^`]+)`\s*\|\s*(v[\d.]+)\s*\|\s*`([0-9a-f]{40})`", line)
        if m:
            table[m[1]] = (m[2], m[3])
    used = {}
    for path in WORKFLOWS.glob("*.yml"):
        for m in re.finditer(r"uses:\s*([\w.-]+/[\w.-]+)@([0-9a-f]{40})\s*#\s*(v[\d.]+)", path.read_text()):
            used[m[1]] = (m[3], m[2])
    assert table == used
