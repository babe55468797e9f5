"""vkbench ci record / dispatch / comment: the branch update with publish's retry loop
(history.publish.update_branch), and the REST calls through the one GitHub client, against the
workflow tests' GitHub stand-in (tests/workflows/github_api_standin.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_outcome import vk  # tests/cli_outcome.py
from github_api_standin import FakeGitHub

from vkbench.detect.confirmations import dispatch_bodies
from vkbench.history.publish import update_branch

TOKEN = "ghs_unitTestToken0123456789abcdef"
OWNER_REPO = "vkbench-test/vkbench"


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=60).stdout


@pytest.fixture
def bare(tmp_path) -> Path:
    """A bare repository with a gh-pages branch holding history/detect.json."""
    work, bare = tmp_path / "seed", tmp_path / "pages.git"
    git("init", "-q", "--bare", str(bare))
    git("init", "-q", "-b", "gh-pages", str(work))
    (work / "history").mkdir()
    (work / "history" / "note.txt").write_text("0\n")
    git("add", "-A", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "-m", "seed", cwd=work)
    git("push", "-q", str(bare), "gh-pages", cwd=work)
    return bare


def test_update_branch_retries_a_lost_race_from_the_new_tip(bare, tmp_path):
    rival = tmp_path / "rival"
    git("clone", "-q", "-b", "gh-pages", str(bare), str(rival))
    seen = []

    def apply(root: Path) -> str:
        seen.append((root / "history" / "note.txt").read_text())
        if len(seen) == 1:      # another writer pushes while this attempt works: its push is rejected
            (rival / "history" / "note.txt").write_text("rival\n")
            git("-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qam", "rival", cwd=rival)
            git("push", "-q", "origin", "gh-pages", cwd=rival)
        (root / "history" / "mine.txt").write_text("mine\n")
        return "recorded"

    report = update_branch(str(bare), "gh-pages", apply, "record mine", backoff=0.01, max_backoff=0.05, retry_for=120)
    assert report.pushed and report.attempts == 2 and report.output == "recorded"
    assert seen == ["0\n", "rival\n"]                      # the second attempt started from the rival's tip
    assert "push rejected" in report.messages[0]
    assert git("show", "gh-pages:history/mine.txt", cwd=bare) == "mine\n"
    assert git("show", "gh-pages:history/note.txt", cwd=bare) == "rival\n"


def test_update_branch_without_a_change_pushes_nothing(bare):
    tip = git("rev-parse", "gh-pages", cwd=bare)
    report = update_branch(str(bare), "gh-pages", lambda root: "nothing", "noop", retry_for=5)
    assert not report.pushed and git("rev-parse", "gh-pages", cwd=bare) == tip


def test_confirm_dispatch_bodies_skip_malformed_requests():
    good, bad = "a" * 40, "b" * 40
    detection = {"confirmation": {"waiting": [
        {"id": "confirm-0123456789ab", "repository": "https://github.com/valkey-io/valkey", "good": {"commit": good},
         "bad": {"commit": bad}, "machine_class": "cloud-x86", "cell": {"pipeline": 16}},
        {"id": "confirm-ba9876543210", "good": {"commit": "$(id)"}, "bad": {"commit": bad}},
        "not a request"]}}
    bodies, skipped = dispatch_bodies(detection, "main")
    assert [b["inputs"]["confirm"] for b in bodies] == ["confirm-0123456789ab"] and len(skipped) == 2
    assert bodies[0]["inputs"]["cell"] == '{"pipeline":16}' and bodies[0]["inputs"]["comment"] == "false"


@pytest.fixture
def step(tmp_path, monkeypatch):
    for name in ("GITHUB_ACTIONS", "GH_TOKEN", "GITHUB_TOKEN", "VKBENCH_PR_REPO", "VKBENCH_AB_REPOSITORY", "GITHUB_REPOSITORY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))

    def run(*args: str, **env: str) -> tuple[int, str]:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return vk("ci", *args)

    return run


def test_dispatch_confirm_posts_one_dispatch_per_candidate(step, tmp_path):
    history = tmp_path / "history"
    history.mkdir()
    (history / "detect.json").write_text(json.dumps({"confirmation": {"waiting": [
        {"id": "confirm-0123456789ab", "repository": "https://github.com/valkey-io/valkey", "good": {"commit": "a" * 40},
         "bad": {"commit": "b" * 40}, "machine_class": "cloud-x86", "cell": {}}]}}))
    with FakeGitHub() as api:
        code, text = step("dispatch", "confirm", "--history", str(history), GH_TOKEN=TOKEN, GITHUB_API_URL=api.url,
                          GITHUB_REPOSITORY=OWNER_REPO, GITHUB_REF_NAME="main")
    assert code == 0, text
    (call,) = api.calls
    assert (call["method"], call["path"]) == ("POST", f"/repos/{OWNER_REPO}/actions/workflows/ab.yml/dispatches")
    assert call["auth"] == f"Bearer {TOKEN}" and call["body"]["inputs"]["base"] == "a" * 40
    assert "1 candidate(s) dispatched" in (tmp_path / "summary.md").read_text()


def test_comment_pr_posts_then_takes_the_label_off(step, tmp_path):
    (tmp_path / "ab").mkdir()
    (tmp_path / "ab" / "ab.md").write_text("### A/B\n| cell |\n")
    with FakeGitHub() as api:
        code, text = step("comment", "pr", GH_TOKEN=TOKEN, GITHUB_API_URL=api.url, VKBENCH_AB_REPOSITORY="https://github.com/someone/valkey",
                          VKBENCH_PR_NUMBER="17", VKBENCH_AB_DIR=str(tmp_path / "ab"), VKBENCH_AB_RESULT="success")
    assert code == 0, text
    comment, unlabel = api.calls
    assert comment["path"] == "/repos/someone/valkey/issues/17/comments" and "### A/B" in comment["body"]["body"]
    assert (unlabel["method"], unlabel["path"]) == ("DELETE", "/repos/someone/valkey/issues/17/labels/run-benchmark")
    assert TOKEN not in text


@pytest.mark.parametrize("repo", ["someone/valkey/x", "../valkey", "someone/..", "someone/.", "someone", "/someone/valkey"])
def test_comment_refuses_a_repository_that_is_not_owner_name(step, repo):
    with FakeGitHub() as api:
        code, text = step("comment", "pr", GH_TOKEN=TOKEN, GITHUB_API_URL=api.url, VKBENCH_PR_REPO=repo, VKBENCH_PR_NUMBER="17")
    assert code == 2 and "OWNER/NAME" in text and api.calls == []


def test_comment_pr_of_a_gitlab_repository_posts_nothing(step):
    with FakeGitHub() as api:
        code, text = step("comment", "pr", GH_TOKEN=TOKEN, GITHUB_API_URL=api.url, VKBENCH_AB_REPOSITORY="https://gitlab.com/g/valkey",
                          VKBENCH_PR_NUMBER="17")
    assert code == 0 and api.calls == []
