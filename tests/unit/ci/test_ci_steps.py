"""vkbench ci fetch / cell / publish / export-gab / alert / digest / counts and the history's
location (vkbench.ci.pages): the decisions that were tools/ci/*.sh, called as the workflows do,
through the CLI (exit codes, messages) and, for the REST calls, the workflows' GitHub stand-in."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import pytest
from cli_outcome import vk  # tests/cli_outcome.py
from github_api_standin import FakeGitHub

from vkbench.ci import bench, issues, pages, publish
from vkbench.servers.resolve import is_moving_version

TOKEN = "ghs_unitTestToken0123456789abcdef"
OWNER_REPO = "vkbench-test/vkbench"
_ENV = ("GITHUB_ACTIONS", "GH_TOKEN", "GITHUB_TOKEN", "GITHUB_REPOSITORY", "GITHUB_RUN_ID", "VKBENCH_PROFILE", "VKBENCH_PAGES_REPO",
        "VKBENCH_PAGES_BRANCH", "VKBENCH_DATA_BRANCH", "VKBENCH_CHECKOUT", "VKBENCH_API_URL", "GITHUB_API_URL", "VKBENCH_CELL",
        "VKBENCH_ALERT_ACTIONS", "VKBENCH_GAB_OUT", "VKBENCH_RESULTS_DIR", "VKBENCH_KEEP_RAW_DAYS", "VKBENCH_KEEP_RESULTS_DAYS", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0",
        "GIT_CONFIG_VALUE_0", "GITHUB_SERVER_URL")


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=60).stdout


@pytest.fixture
def step(tmp_path, monkeypatch):
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    monkeypatch.chdir(tmp_path)

    def run(*args: str, **env: str) -> tuple[int, str]:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return vk("ci", *args)

    return run


# -- the bench job ------------------------------------------------------------------------------
@pytest.mark.parametrize("version, moving", [("unstable", True), ("feature/x", True), ("latest", True), ("8.0@source", False),
                                              ("8.1.1", False), ("9.0", False), ("a" * 40, False), ("/opt/valkey-server", False)])
def test_a_moving_version_is_one_that_can_name_other_bits_tomorrow(version, moving):
    assert is_moving_version(version) is moving


def test_fetch_rebuilds_a_moving_version_once_per_run(tmp_path):
    env = {"VKBENCH_CELL": '{"server":"valkey:unstable"}', "GITHUB_RUN_ID": "77"}
    (server, tools), stamp, run = bench.fetch_argvs(env, tmp_path)
    assert server == ["servers", "fetch", "valkey", "unstable", "--refresh"] and run == "77"
    assert stamp == tmp_path / "ci-stamps" / "valkey-unstable.run"
    assert tools == ["servers", "fetch", "--tool", "valkey-benchmark", "--tool", "valkey-cli"]
    stamp.parent.mkdir()
    stamp.write_text("77\n")                 # the first cell of run 77 built it
    (server, _), stamp, _ = bench.fetch_argvs(env, tmp_path)
    assert "--refresh" not in server and stamp is None
    (server, _), stamp, _ = bench.fetch_argvs({**env, "GITHUB_RUN_ID": "78"}, tmp_path)
    assert "--refresh" in server and stamp is not None      # tomorrow's run: tomorrow's commit


def test_fetch_of_a_release_with_another_tool(tmp_path):
    (server, tools), stamp, _ = bench.fetch_argvs({"VKBENCH_CELL": '{"server":"valkey:8.1.1","tool":"memtier"}'}, tmp_path)
    assert server == ["servers", "fetch", "valkey", "8.1.1"] and stamp is None and tools == ["servers", "fetch", "--tool", "memtier"]


@pytest.mark.parametrize("cell", ["", "not json", "[1]", '{"tool":"x"}'])
def test_fetch_refuses_what_is_not_a_cell(step, cell):
    code, text = step("fetch", VKBENCH_CELL=cell) if cell else step("fetch")
    assert code == 2 and "VKBENCH_CELL" in text


_CELL_ENV = {"VKBENCH_RUN_ID": "r1", "VKBENCH_MACHINE_CLASS": "cloud-x86", "VKBENCH_TRIGGER": "schedule"}


@pytest.mark.parametrize("server, profile, expected", [
    ("valkey:unstable", "", True), ("valkey:9.1.2", "", False), ("valkey:9.1.2", "always", True),
    ("valkey:unstable", "never", False), ("valkey:" + "c" * 40, "source", True)])
def test_cell_profiles_the_builds_from_source(step, server, profile, expected):
    code, text = step("cell", "--print-argv", VKBENCH_CELL=json.dumps({"server": server}), VKBENCH_PROFILE=profile, **_CELL_ENV)
    assert code == 0, text
    argv = json.loads(text)
    assert argv[:2] == ["run", "--cell"] and argv[argv.index("--backend") + 1] == "compose"
    assert ("--profile" in argv) is expected


def test_cell_refuses_an_unknown_profile_mode_and_a_missing_variable(step):
    code, text = step("cell", "--print-argv", VKBENCH_CELL='{"server":"valkey:8.1.1"}', VKBENCH_PROFILE="sometimes", **_CELL_ENV)
    assert code == 2 and "source, always or never" in text
    code, text = step("cell", "--print-argv", VKBENCH_CELL='{"server":"valkey:8.1.1"}', VKBENCH_RUN_ID="",
                      VKBENCH_MACHINE_CLASS="c", VKBENCH_TRIGGER="t")
    assert code == 2 and "VKBENCH_RUN_ID is empty" in text


# -- where the history is -------------------------------------------------------------------------
def test_git_auth_masks_the_encoded_token_and_keeps_it_out_of_git_config(monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    env = {"GITHUB_TOKEN": TOKEN, "GITHUB_ACTIONS": "true"}
    pages.git_auth(env)
    basic = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    assert capsys.readouterr().out == f"::add-mask::{basic}\n"
    assert env["GIT_CONFIG_KEY_0"] == "http.https://github.com/.extraheader" and env["GIT_CONFIG_VALUE_0"].endswith(basic)
    none: dict[str, str] = {}
    pages.git_auth(none)
    assert none == {}


def test_the_history_branch_and_remote():
    assert pages.history_branch({}) == "gh-pages" and pages.history_branch({"VKBENCH_PAGES_BRANCH": "p"}) == "p"
    assert pages.history_branch({"VKBENCH_PAGES_BRANCH": "p", "VKBENCH_DATA_BRANCH": "data"}) == "data"
    assert pages.pages_remote({"GITHUB_REPOSITORY": OWNER_REPO}) == f"https://github.com/{OWNER_REPO}.git"
    with pytest.raises(Exception, match="VKBENCH_PAGES_REPO"):
        pages.pages_remote({})


@pytest.fixture
def bare(tmp_path) -> Path:
    """A bare repository with a gh-pages branch holding history/detect.json (one waiting candidate)."""
    work, bare = tmp_path / "seed", tmp_path / "pages.git"
    git("init", "-q", "--bare", str(bare))
    git("init", "-q", "-b", "gh-pages", str(work))
    (work / "history").mkdir()
    (work / "history" / "detect.json").write_text(json.dumps({"confirmation": {"waiting": [
        {"id": "confirm-0123456789ab", "repository": "https://github.com/valkey-io/valkey", "good": {"commit": "a" * 40},
         "bad": {"commit": "b" * 40}, "machine_class": "cloud-x86", "cell": {}}]}}))
    git("add", "-A", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "-m", "seed", cwd=work)
    git("push", "-q", str(bare), "gh-pages", cwd=work)
    return bare


def test_dispatch_confirm_clones_the_history_itself(step, bare):
    with FakeGitHub() as api:
        code, text = step("dispatch", "confirm", GH_TOKEN=TOKEN, GITHUB_API_URL=api.url, GITHUB_REPOSITORY=OWNER_REPO,
                          VKBENCH_PAGES_REPO=str(bare))
    assert code == 0, text
    (call,) = api.calls
    assert call["path"].endswith("/actions/workflows/ab.yml/dispatches") and call["body"]["inputs"]["base"] == "a" * 40


def test_dispatch_confirm_of_a_missing_branch_fails_with_a_hint(step, bare):
    code, text = step("dispatch", "confirm", GITHUB_REPOSITORY=OWNER_REPO, VKBENCH_PAGES_REPO=str(bare), VKBENCH_DATA_BRANCH="nope")
    assert code == 1 and "cannot clone the history's branch nope" in text and "hint:" in text


def test_dispatch_bisect_without_alert_actions_clones_nothing(step, tmp_path):
    code, text = step("dispatch", "bisect", VKBENCH_PAGES_REPO=str(tmp_path / "missing.git"),
                      VKBENCH_ALERT_ACTIONS=str(tmp_path / "none.json"))
    assert code == 0, text
    assert "nothing to bisect" in (tmp_path / "summary.md").read_text()


# -- publish, alert, digest ------------------------------------------------------------------------
def test_publish_without_results_fails_before_touching_the_branch(step, tmp_path):
    (tmp_path / "vkbench-results").mkdir()
    code, text = step("publish", VKBENCH_PAGES_REPO=str(tmp_path / "missing.git"))
    assert code == 7 and "no result files in vkbench-results" in text


def test_publish_argv_names_the_branches_annotations_and_retention(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "annotations.yaml").write_text("[]\n")
    env = {"VKBENCH_PAGES_REPO": "/r.git", "VKBENCH_DATA_BRANCH": "data", "VKBENCH_KEEP_RAW_DAYS": "30", "VKBENCH_CHECKOUT": str(tmp_path)}
    argv = publish.publish_argv(env, Path("res"), Path("w"))
    assert argv[:3] == ["publish", "res", "--strict"] and argv[argv.index("--repo-dir") + 1] == "/r.git"
    assert argv[argv.index("--branch") + 1] == "data" and argv[argv.index("--site-branch") + 1] == "gh-pages"
    assert argv[argv.index("--annotations") + 1] == str(tmp_path / "results" / "annotations.yaml")
    assert argv[argv.index("--keep-raw-days") + 1] == "30" and "--keep-results-days" not in argv
    argv = publish.publish_argv({"VKBENCH_PAGES_REPO": "/r.git", "VKBENCH_CHECKOUT": str(tmp_path / "none")}, Path("res"), Path("w"))
    assert "--site-branch" not in argv and "--annotations" not in argv


def test_export_gab_writes_both_files_into_its_folder(step, tmp_path):
    (tmp_path / "vkbench-results").mkdir()
    code, text = step("export-gab", VKBENCH_GAB_OUT=str(tmp_path / "out"))
    assert code == 0, text
    assert json.loads((tmp_path / "out" / "rps.json").read_text()) == [] and (tmp_path / "out" / "latency.json").is_file()
    code, text = step("export-gab", VKBENCH_RESULTS_DIR=str(tmp_path / "missing"))
    assert code != 0


@pytest.mark.parametrize("command", ["alert", "digest"])
@pytest.mark.parametrize("repo", ["", "a/b/c", "../x"])
def test_issue_steps_refuse_a_repository_that_is_not_owner_name_before_cloning(step, tmp_path, command, repo):
    code, text = step(command, GITHUB_REPOSITORY=repo, VKBENCH_PAGES_REPO=str(tmp_path / "missing.git"))
    assert code == 2 and "GITHUB_REPOSITORY must be OWNER/NAME" in text


def test_alert_argv_follows_the_step_env():
    env = {"GITHUB_REPOSITORY": OWNER_REPO, "GITHUB_API_URL": "http://a", "VKBENCH_API_URL": "http://b",
           "VKBENCH_FAIL_ON_REGRESSION": "true", "VKBENCH_ALERT_ACTIONS": "x.json"}
    argv = issues.alert_argv(env, Path("h"))
    assert argv[argv.index("--api-url") + 1] == "http://b" and argv[argv.index("--fail-on") + 1] == "regression"
    assert argv[argv.index("--actions-out") + 1] == "x.json" and argv[argv.index("--token-env") + 1] == "GITHUB_TOKEN"
    argv = issues.alert_argv({"GITHUB_REPOSITORY": OWNER_REPO}, Path("h"))
    assert "--api-url" not in argv and "--fail-on" not in argv


def test_digest_argv_has_its_window():
    argv = issues.digest_argv({"GITHUB_REPOSITORY": OWNER_REPO, "VKBENCH_DIGEST_SINCE": "14d", "VKBENCH_CHECKOUT": "/nonexistent"},
                              Path("h"), Path("d.md"))
    assert argv[argv.index("--since") + 1] == "14d" and argv[argv.index("--repo") + 1] == OWNER_REPO


# -- pr-counts ------------------------------------------------------------------------------------
_COUNTS = {"VKBENCH_AB_REPOSITORY": "https://github.com/someone/valkey", "VKBENCH_AB_BASE": "a" * 40,
           "VKBENCH_AB_HEAD": "b" * 40, "VKBENCH_AB_PR": "1234"}


def test_counts_runs_the_instruction_ab_of_the_pinned_head(step):
    code, text = step("counts", "--print-argv", **_COUNTS)
    assert code == 0, text
    argv = json.loads(text)
    assert argv[0] == "ab" and argv[argv.index("--pr-head") + 1] == "b" * 40
    assert argv[argv.index("--instrument") + 1] == "instructions" and argv[argv.index("--machine-class") + 1] == "github-hosted"
    assert "--requests" not in argv, "no requests input: the preset's count"


def test_counts_passes_the_requests_input(step):
    code, text = step("counts", "--print-argv", **{**_COUNTS, "VKBENCH_AB_REQUESTS": "2000"})
    assert code == 0, text
    argv = json.loads(text)
    assert argv[argv.index("--requests") + 1] == "2000"


@pytest.mark.parametrize("bad", [{"VKBENCH_AB_REPOSITORY": "https://gitlab.com/g/valkey"},
                                 {"VKBENCH_AB_REPOSITORY": "https://github.com/a/b/c"}, {"VKBENCH_AB_REPOSITORY": "file:///etc"},
                                 {"VKBENCH_AB_BASE": "unstable"}, {"VKBENCH_AB_HEAD": "--upload-pack=x"},
                                 {"VKBENCH_AB_PR": "1; id"}, {"VKBENCH_AB_PR": ""},
                                 {"VKBENCH_AB_REQUESTS": "2000; id"}, {"VKBENCH_AB_REQUESTS": "99"},
                                 {"VKBENCH_AB_REQUESTS": "99999999"}, {"VKBENCH_AB_REQUESTS": "-5"}])
def test_counts_refuses_hostile_inputs_without_echoing_them(step, bad):
    code, text = step("counts", "--print-argv", **{**_COUNTS, **bad})
    value = next(iter(bad.values()))
    assert code == 2 and "must be" in text
    assert not value or value not in text
