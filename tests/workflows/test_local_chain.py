"""The workflow chain, run locally: the same tools/ci scripts the workflows call, in their order.

plan (smoke, narrowed to two cells) -> each cell with the native backend -> publish into a local
bare repository standing in for gh-pages -> export for github-action-benchmark -> alert against a
fake GitHub API on 127.0.0.1. GitHub-only steps (checkout, artifacts, github-action-benchmark)
are replaced by their local equivalent: the results of every cell land in one directory, as
download-artifact's merge-multiple leaves them.

A second test publishes two result sets at once into the same bare repository and checks that
neither is lost (vkbench publish retries a rejected push).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from github_api_standin import FakeGitHub
from workflow_paths import REPO, WORKFLOWS

CI = REPO / "tools" / "ci"
FAKE_TOKEN = "ghs_fakeTokenForTheLocalChain0123456789"
OWNER_REPO = "vkbench-test/vkbench"

pytestmark = pytest.mark.integration


# -- what the workflow runs --------------------------------------------------------------------
def workflow_scripts(workflow: str) -> dict[str, list[str]]:
    """job id -> the tools/ci scripts its run: steps call, in order."""
    data = yaml.safe_load((WORKFLOWS / workflow).read_text())
    out = {}
    for job_id, job in data["jobs"].items():
        out[job_id] = [step["run"].strip() for step in job.get("steps", []) if "run" in step]
    return out


def test_chain_matches_the_workflow():
    """This test runs the scripts benchmark.yml runs; fail here first if the workflow changes."""
    scripts = workflow_scripts("benchmark.yml")
    assert scripts["plan"][-1] == "tools/ci/plan.sh"
    assert scripts["bench"] == ["tools/setup.sh", "tools/ci/fetch-binaries.sh", "tools/ci/run-cell.sh", "tools/ci/teardown.sh"]
    assert scripts["publish"][-2:] == ["tools/ci/publish.sh", "tools/ci/export-gab.sh"]
    assert scripts["alert"][-1] == "tools/ci/alert.sh"


# -- helpers -----------------------------------------------------------------------------------
def base_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "ACTIONS_"))}
    env.update(
        GITHUB_OUTPUT=str(tmp / "github_output"),
        GITHUB_STEP_SUMMARY=str(tmp / "step_summary.md"),
        GITHUB_REPOSITORY=OWNER_REPO,
        GITHUB_RUN_ID="4242",
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )
    env.pop("GITHUB_TOKEN", None)
    return env


class Logs:
    """Everything the scripts print, to check that no token ever shows up."""

    def __init__(self) -> None:
        self.text = ""

    def run(self, script: str, env: dict[str, str], cwd: Path, check: bool = True,
            args: list[str] | None = None) -> subprocess.CompletedProcess:
        proc = subprocess.run([str(CI / script), *(args or [])], env=env, cwd=cwd, capture_output=True, text=True, timeout=1800)
        self.text += f"\n$ {script} {' '.join(args or [])}\n{proc.stdout}{proc.stderr}"
        if check and proc.returncode != 0:
            pytest.fail(f"{script} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        return proc


def read_outputs(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition("=")
        out[key] = value
    return out


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def bare_repo(path: Path) -> Path:
    git("init", "-q", "--bare", str(path))
    return path


def seed_regression(result_file: Path, dest: Path, *, machine_class: str = "cloud-arm64") -> Path:
    """Earlier nights in the history: 14 runs of one cell on another class, -40% from run 10.

    Built from a real result file of this chain (same schema, same dimensions) with the run
    identity, timestamp and throughput changed, so detection has a regression to report and
    the alert job has an issue to open: the slower runs carry another build id, as a code change
    would (the same build on both sides is not a code change, and alerts nobody). A separate
    machine class keeps these series apart from the chain's own results."""
    src = json.loads(result_file.read_text())
    rng = random.Random(7)
    start = datetime(2026, 10, 1, 2, 0, tzinfo=timezone.utc)
    dest.mkdir(parents=True)
    for i in range(14):
        data = copy.deepcopy(src)
        level = 500_000.0 * (1.0 if i < 9 else 0.6)
        data["run"].update(run_id=f"seed-{i:02d}", machine_class=machine_class,
                           timestamp=(start + timedelta(days=i)).strftime("%Y-%m-%dT%H:%M:%SZ"))
        data["dimensions"]["runner"] = machine_class
        if i >= 9:
            data["subject"]["build"]["id"] = "sha256:" + hashlib.sha256(b"a slower build").hexdigest()
        for metrics in data["summary"].values():
            samples = [level * (1 + rng.uniform(-0.01, 0.01)) for _ in range(3)]
            metrics["rps"].update(median=sorted(samples)[1], ci_low=min(samples), ci_high=max(samples),
                                  cv=0.01, n=3, samples=samples)
        for rep in data["repetitions"]:
            for record in rep["records"]:
                record["rps"] = level
        (dest / f"seed-{i:02d}.json").write_text(json.dumps(data))
    return dest


def branch_checkout(bare: Path, dest: Path) -> Path:
    git("clone", "-q", "--branch", "gh-pages", str(bare), str(dest))
    return dest


# -- the chain ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cells_run(tmp_path_factory):
    """plan + every cell, as the plan and bench jobs run them. Shared by both tests."""
    tmp = tmp_path_factory.mktemp("chain")
    logs = Logs()
    env = base_env(tmp)

    # plan job: the dispatch inputs, narrowed to two quick cells.
    plan_env = dict(env, VKBENCH_PRESET="smoke", VKBENCH_VERSIONS="valkey:9.0.0,valkey:9.1.2",
                    VKBENCH_IO_THREADS="1", VKBENCH_TOPOLOGIES="standalone", VKBENCH_TOOL="",
                    VKBENCH_RUNNERS="cloud-x86", VKBENCH_REPETITIONS="2")
    logs.run("plan.sh", plan_env, REPO)
    outputs = read_outputs(tmp / "github_output")
    matrix = json.loads(outputs["matrix"])
    assert int(outputs["cells"]) == len(matrix["include"]) == 2
    assert "Benchmark plan: 2 cells" in (tmp / "step_summary.md").read_text()

    # bench job, once per matrix entry; results land in one directory (as merge-multiple does).
    results = tmp / "results"
    for entry in matrix["include"]:
        cell_env = dict(env, VKBENCH_CELL=entry["cell"], VKBENCH_BACKEND="native", VKBENCH_OUT=str(results),
                        VKBENCH_MACHINE_CLASS=entry["runner"], VKBENCH_RUN_ID="gh-4242",
                        VKBENCH_TRIGGER="workflow_dispatch",
                        VKBENCH_WORKFLOW_RUN_URL=f"https://github.invalid/{OWNER_REPO}/actions/runs/4242")
        logs.run("fetch-binaries.sh", cell_env, REPO)
        proc = logs.run("run-cell.sh", cell_env, REPO, check=False)
        logs.run("teardown.sh", cell_env, REPO)  # the `if: always()` step
        if proc.returncode != 0:
            pytest.fail(f"run-cell.sh exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        assert (results / f"{entry['id']}.json").is_file(), f"no result for {entry['id']}"
    return {"tmp": tmp, "results": results, "matrix": matrix, "logs": logs}


def test_chain_plan_run_publish_alert(cells_run, tmp_path):
    logs: Logs = cells_run["logs"]
    env = base_env(tmp_path)
    bare = bare_repo(tmp_path / "pages.git")
    results = cells_run["results"]

    # Earlier nights, already on gh-pages: a history with a regression in it.
    seed = seed_regression(sorted(results.glob("*.json"))[0], tmp_path / "seed")
    subprocess.run([str(REPO / ".venv" / "bin" / "vkbench"), "publish", str(seed), "--repo-dir", str(bare),
                    "--branch", "gh-pages"], check=True, capture_output=True, text=True, env=env, timeout=600)

    # publish job
    pub_env = dict(env, VKBENCH_RESULTS_DIR=str(results), VKBENCH_PAGES_REPO=str(bare),
                   VKBENCH_PAGES_BRANCH="gh-pages", VKBENCH_SITE_OUT="site")
    logs.run("publish.sh", pub_env, tmp_path)
    logs.run("export-gab.sh", dict(pub_env, VKBENCH_GAB_OUT=str(tmp_path / "gab")), tmp_path)
    for name in ("rps.json", "latency.json"):
        entries = json.loads((tmp_path / "gab" / name).read_text())
        assert entries and {"name", "unit", "value"} <= set(entries[0])

    # alert job, against the fake API, with a token that must never be printed
    with FakeGitHub() as api:
        alert_env = dict(env, VKBENCH_PAGES_REPO=str(bare), VKBENCH_PAGES_BRANCH="gh-pages",
                         VKBENCH_API_URL=api.url, GITHUB_TOKEN=FAKE_TOKEN)
        logs.run("alert.sh", alert_env, tmp_path)
    assert api.calls, "vkbench alert made no call to the (fake) GitHub API"
    assert all(call["path"].startswith(f"/repos/{OWNER_REPO}/issues") for call in api.calls), api.calls
    assert all(FAKE_TOKEN in call["auth"] for call in api.calls), "the token did not reach the API"
    created = [c for c in api.calls if c["method"] == "POST" and c["path"] == f"/repos/{OWNER_REPO}/issues"]
    assert len(created) == 1, api.calls
    assert created[0]["body"]["title"].startswith("Performance regression:")
    assert "cloud-arm64" in created[0]["body"]["title"]
    assert created[0]["body"]["labels"] == ["vkbench-regression"]

    # the branch: history updated, detection written, site built
    pages = branch_checkout(bare, tmp_path / "check")
    index = json.loads((pages / "history" / "index.json").read_text())
    assert index["runs"] >= 1 and index["series"], index
    stored = {p.stem for p in (pages / "history" / "runs").rglob("*.json")}
    assert {e["id"] for e in cells_run["matrix"]["include"]} <= stored
    assert (pages / "history" / "detect.json").is_file()
    assert (pages / "site" / "index.html").is_file(), sorted(p.name for p in (pages / "site").iterdir())

    summary = (tmp_path / "step_summary.md").read_text()
    assert "Benchmark history updated" in summary and "Regression alerts" in summary
    assert "1 open regression" in summary, summary

    assert FAKE_TOKEN not in logs.text


def test_two_concurrent_publishes_lose_nothing(cells_run, tmp_path):
    env = base_env(tmp_path)
    bare = bare_repo(tmp_path / "pages.git")
    files = sorted(cells_run["results"].glob("*.json"))
    assert len(files) == 2
    # Two result sets (one cell each, with its raw folder), as two workflow runs would publish.
    sets = []
    for i, file in enumerate(files):
        folder = tmp_path / f"results-{i}"
        folder.mkdir()
        (folder / file.name).write_bytes(file.read_bytes())
        sets.append(folder)

    def publish(folder: Path) -> subprocess.CompletedProcess:
        pub_env = dict(env, VKBENCH_RESULTS_DIR=str(folder), VKBENCH_PAGES_REPO=str(bare),
                       VKBENCH_PAGES_BRANCH="gh-pages", VKBENCH_SITE_OUT="site",
                       GITHUB_STEP_SUMMARY=str(folder / "summary.md"))
        return subprocess.run([str(CI / "publish.sh")], env=pub_env, cwd=folder, capture_output=True, text=True,
                              timeout=900)

    with ThreadPoolExecutor(max_workers=2) as pool:
        procs = list(pool.map(publish, sets))
    for proc in procs:
        assert proc.returncode == 0, proc.stdout + proc.stderr

    pages = branch_checkout(bare, tmp_path / "check")
    stored = {p.stem for p in (pages / "history" / "runs").rglob("*.json")}
    assert {f.stem for f in files} <= stored, f"a publish was lost: {stored}"
    index = json.loads((pages / "history" / "index.json").read_text())
    points = sum(series["points"] for series in index["series"].values())
    # Each cell measures SET and GET: two series per cell, one point each.
    assert points == 2 * len(files), index


# -- the A/B and bisect of Valkey commits ---------------------------------------------------------
def _script(name: str, mode: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(CI / name), mode], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def _run_argv(name: str, env: dict[str, str], cwd: Path) -> list[str]:
    """The vkbench command `NAME run` would run (`run --print-argv`: checked, not run)."""
    proc = subprocess.run([str(CI / name), "run", "--print-argv"], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def test_ab_and_bisect_inputs_are_checked_and_the_comments_posted(tmp_path):
    """ab.yml and bisect.yml: the hosted job validates the dispatch inputs before a runner is
    used; the comment jobs post the Markdown with their own token. (The A/B and bisect
    themselves run for real in tests/sourcebuild.)"""
    ab, bisect = workflow_scripts("ab.yml"), workflow_scripts("bisect.yml")
    # The hosted job checks the inputs first (the checkout's vkbench run from source, with only the
    # packages the check imports), then builds the wheel every later job installs: a refused
    # dispatch ends before any wheel is built or uploaded.
    for steps, script in ((ab["inputs"], "tools/ci/ab.sh check"), (bisect["inputs"], "tools/ci/bisect.sh check")):
        check = steps.index(script)
        assert " pip wheel " in steps[-1] and check < len(steps) - 1, steps
        before = steps[:check]
        assert all(re.fullmatch(r'python -m pip install --disable-pip-version-check( "[a-z]+>=[0-9.]+")+', s) for s in before), before
    assert ab["ab"] == ["tools/setup.sh", "tools/ci/ab.sh run", "tools/ci/teardown.sh"]
    assert bisect["bisect"] == ["tools/setup.sh", "tools/ci/bisect.sh run", "tools/ci/teardown.sh"]
    assert ab["comment"][-1] == "tools/ci/pr-comment.sh" and "tools/ci/bisect.sh comment" in bisect["alert"]

    # The caller template pins what was approved: the base commit, the PR's number and its head's
    # full SHA, which `ab.sh run` hands to vkbench as --pr-head (vkbench refuses a pull request that
    # moved since). A fork's branch, or a PR without its head, could build code pushed after approval.
    pinned = dict(base_env(tmp_path), VKBENCH_AB_REPOSITORY="https://github.com/someone/valkey", VKBENCH_AB_BASE="c" * 40,
                  VKBENCH_AB_PR="1234", VKBENCH_AB_CANDIDATE="4fd5645d80ae" * 3 + "4fd5", VKBENCH_MACHINE_CLASS="cloud-x86")
    assert _script("ab.sh", "check", pinned, tmp_path).returncode == 0
    for unpinned in ({"VKBENCH_AB_CANDIDATE": ""}, {"VKBENCH_AB_BASE": "unstable"},
                     {"VKBENCH_AB_PR": "", "VKBENCH_AB_CANDIDATE": "feature"}):
        proc = _script("ab.sh", "check", {**pinned, **unpinned}, tmp_path)
        assert proc.returncode == 2 and "full" in proc.stderr, (unpinned, proc.stderr)
    recorder = tmp_path / "vkbench-args"
    (tmp_path / "fake-vkbench").write_text(f'#!/usr/bin/env bash\nprintf "%s\\n" "$@" > {recorder}\n')
    (tmp_path / "fake-vkbench").chmod(0o755)
    argv = _run_argv("ab.sh", {**pinned, "VKBENCH_MACHINE_CLASS": "cloud-x86"}, tmp_path)
    assert argv[argv.index("--pr") + 1] == "1234" and argv[argv.index("--pr-head") + 1] == pinned["VKBENCH_AB_CANDIDATE"]
    assert "--candidate" not in argv and "--require-branch" not in argv      # a PR: the reviewer's gate
    # The trusted path (the nightly's confirmation of upstream's commits, or the inputs job saying
    # so): both commits must be on upstream's default branch, checked by vkbench before building.
    confirm = {**pinned, "VKBENCH_AB_REPOSITORY": "https://github.com/valkey-io/valkey", "VKBENCH_AB_PR": "",
               "VKBENCH_AB_BASE": "a" * 40, "VKBENCH_AB_CANDIDATE": "b" * 40, "VKBENCH_AB_CONFIRM": "confirm-0123456789ab"}
    for extra, branch in (({}, "unstable"), ({"VKBENCH_VALKEY_BRANCH": "main"}, "main"),
                          ({"VKBENCH_AB_CONFIRM": "", "VKBENCH_AB_TRUSTED": "true"}, "unstable"),
                          ({"VKBENCH_AB_CONFIRM": ""}, None)):
        argv = _run_argv("ab.sh", {**confirm, **extra}, tmp_path)
        assert (argv[argv.index("--require-branch") + 1] if "--require-branch" in argv else None) == branch, (extra, argv)
    for bad in ({"VKBENCH_AB_REPOSITORY": "file:///etc"}, {"VKBENCH_AB_REPOSITORY": "https://evil.example/x/y"},
                {"VKBENCH_AB_BASE": "--upload-pack=touch /tmp/x"}, {"VKBENCH_AB_BASE": "a..b"},
                {"VKBENCH_AB_PR": "1; id"}, {"VKBENCH_AB_CANDIDATE": "feature"},
                {"VKBENCH_AB_CONFIRM": "confirm-0123456789ab"},     # a PR's numbers never reach the history
                {"VKBENCH_AB_PR": "", "VKBENCH_AB_CANDIDATE": "$(id)"}, {"VKBENCH_AB_MAX_ROUNDS": "1000"}):
        proc = _script("ab.sh", "check", {**pinned, **bad}, tmp_path)
        assert proc.returncode == 2, (bad, proc.stdout, proc.stderr)
    bisect_env = dict(base_env(tmp_path), VKBENCH_BISECT_REPOSITORY="https://gitlab.com/g/valkey",
                      VKBENCH_BISECT_GOOD="c" * 40, VKBENCH_BISECT_BAD="d" * 40, VKBENCH_MACHINE_CLASS="cloud-x86")
    assert _script("bisect.sh", "check", bisect_env, tmp_path).returncode == 0
    assert _script("bisect.sh", "check", {**bisect_env, "VKBENCH_BISECT_ISSUE": "x"}, tmp_path).returncode == 2
    for unpinned in ({"VKBENCH_BISECT_GOOD": "c419524"}, {"VKBENCH_BISECT_BAD": "unstable"}):
        assert _script("bisect.sh", "check", {**bisect_env, **unpinned}, tmp_path).returncode == 2, unpinned
    # Upstream (the trusted repository) may still name its branch.
    assert _script("bisect.sh", "check", {**bisect_env, "VKBENCH_BISECT_REPOSITORY": "https://github.com/valkey-io/valkey",
                                          "VKBENCH_BISECT_BAD": "unstable"}, tmp_path).returncode == 0
    # The nightly's bisect of an incident: the cell and --require-branch reach vkbench bisect.
    incident_env = {**bisect_env, "VKBENCH_BISECT_REPOSITORY": "https://github.com/valkey-io/valkey",
                    "VKBENCH_BISECT_INCIDENT": "0123456789ab", "VKBENCH_BISECT_ISSUE": "4",
                    "VKBENCH_BISECT_CELL": '{"io_threads":4}'}
    argv = _run_argv("bisect.sh", incident_env, tmp_path)
    assert argv[0] == "bisect" and argv[argv.index("--cell") + 1] == '{"io_threads":4}'
    assert argv[argv.index("--require-branch") + 1] == "unstable"
    assert "--require-branch" not in _run_argv("bisect.sh", {**incident_env, "VKBENCH_BISECT_INCIDENT": "", "VKBENCH_BISECT_ISSUE": ""},
                                               tmp_path)

    # The self-hosted jobs run native servers, and their `if: always()` teardown cleans up that
    # same backend (teardown.sh's own default is compose, the nightly's backend).
    for workflow, job_id, script in (("ab.yml", "ab", "ab.sh"), ("bisect.yml", "bisect", "bisect.sh")):
        job_env = {k: str(v) for k, v in yaml.safe_load((WORKFLOWS / workflow).read_text())["jobs"][job_id]["env"].items()}
        run_env = {**(confirm if script == "ab.sh" else incident_env), **job_env}
        argv = _run_argv(script, run_env, tmp_path)
        assert "--backend" not in argv or argv[argv.index("--backend") + 1] == "native", argv
        assert _script("teardown.sh", "", {**run_env, "VKBENCH_BIN": str(tmp_path / "fake-vkbench")}, tmp_path).returncode == 0
        argv = recorder.read_text().splitlines()
        assert argv[:2] == ["run", "--backend"] and argv[2] == "native" and "--cleanup-only" in argv, (workflow, argv)

    ab_dir = tmp_path / "ab"
    ab_dir.mkdir()
    (ab_dir / "ab.md").write_text("### A/B: `b` vs `a`\n| cell | command |\n")
    with FakeGitHub() as api:
        comment_env = dict(base_env(tmp_path), GH_TOKEN=FAKE_TOKEN, GITHUB_API_URL=api.url,
                           VKBENCH_PR_REPO="someone/valkey", VKBENCH_PR_NUMBER="17", VKBENCH_AB_DIR=str(ab_dir),
                           VKBENCH_AB_RESULT="success",
                           VKBENCH_WORKFLOW_RUN_URL=f"https://github.invalid/{OWNER_REPO}/actions/runs/1")
        logs = Logs()
        logs.run("pr-comment.sh", comment_env, tmp_path)
        # The table, as a comment on the pull request of the Valkey repository, then the label off.
        (comment, unlabel) = api.calls
        assert (comment["method"], comment["path"]) == ("POST", "/repos/someone/valkey/issues/17/comments")
        assert "### A/B:" in comment["body"]["body"] and "workflow run" in comment["body"]["body"]
        assert (unlabel["method"], unlabel["path"]) == ("DELETE", "/repos/someone/valkey/issues/17/labels/run-benchmark")
        assert all(c["auth"] == f"Bearer {FAKE_TOKEN}" for c in api.calls)
        assert FAKE_TOKEN not in logs.text
        # No token for the Valkey repository: a warning, no call, the job still succeeds.
        api.calls.clear()
        logs.run("pr-comment.sh", {**comment_env, "GH_TOKEN": ""}, tmp_path)
        assert api.calls == []
        # The repository becomes part of the API path: exactly OWNER/NAME, no . or .. segment.
        for repo in ("someone/valkey/x", "../valkey", "someone/..", "someone/.", "./valkey", "some..one/valkey", "someone",
                     "someone/valkey/../../other/repo", "/someone/valkey"):
            proc = logs.run("pr-comment.sh", {**comment_env, "VKBENCH_PR_REPO": repo}, tmp_path, check=False)
            assert proc.returncode == 2 and "OWNER/NAME" in proc.stdout + proc.stderr, (repo, proc.stderr)
        assert api.calls == []

        (tmp_path / "bisect").mkdir()
        (tmp_path / "bisect" / "bisect.md").write_text("### Bisect\n**Culprit:** x\n")
        proc = _script("bisect.sh", "comment", {**comment_env, "VKBENCH_BISECT_ISSUE": "42", "GITHUB_REPOSITORY": OWNER_REPO,
                                                 "VKBENCH_BISECT_DIR": str(tmp_path / "bisect")}, tmp_path)
        assert proc.returncode == 0, proc.stderr
        (posted,) = api.calls
        assert (posted["method"], posted["path"]) == ("POST", f"/repos/{OWNER_REPO}/issues/42/comments")
        assert posted["body"]["body"].startswith("### Bisect")


def test_confirm_dispatches_one_ab_per_waiting_candidate(tmp_path):
    """benchmark.yml's confirm job: each candidate waiting in the published detect.json becomes one
    workflow_dispatch of ab.yml (REST, with the job's token), its inputs taken from the candidate."""
    # The job installs vkbench's wheel (the dispatch reads detect.json with the library), then dispatches.
    confirm = yaml.safe_load((WORKFLOWS / "benchmark.yml").read_text())["jobs"]["confirm"]["steps"]
    assert [s.get("uses") or s["run"] for s in confirm][1:] == ["./.github/actions/install-vkbench", "tools/ci/confirm.sh dispatch"]
    good, bad = "a" * 40, "b" * 40
    waiting = [{"id": "confirm-0123456789ab", "repository": "https://github.com/valkey-io/valkey", "good": {"commit": good},
                "bad": {"commit": bad}, "machine_class": "cloud-x86", "cell": {"server": "valkey:unstable", "pipeline": 16}},
               # malformed (not a full SHA): skipped, never dispatched
               {"id": "confirm-ba9876543210", "repository": "https://github.com/valkey-io/valkey", "good": {"commit": "$(id)"},
                "bad": {"commit": bad}, "machine_class": "cloud-x86", "cell": {}}]
    work = tmp_path / "pages-work"
    git("init", "-q", "-b", "gh-pages", str(work))
    (work / "history").mkdir()
    (work / "history" / "detect.json").write_text(json.dumps({"confirmation": {"waiting": waiting}}))
    git("add", "-A", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "-m", "pages", cwd=work)
    bare = bare_repo(tmp_path / "pages.git")
    git("push", "-q", str(bare), "gh-pages", cwd=work)
    with FakeGitHub() as api:
        env = dict(base_env(tmp_path), GITHUB_TOKEN=FAKE_TOKEN, GH_TOKEN=FAKE_TOKEN, GITHUB_API_URL=api.url,
                   GITHUB_REF_NAME="main", VKBENCH_PAGES_REPO=str(bare), VKBENCH_PAGES_BRANCH="gh-pages")
        proc = _script("confirm.sh", "dispatch", env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    (call,) = api.calls
    assert (call["method"], call["path"]) == ("POST", f"/repos/{OWNER_REPO}/actions/workflows/ab.yml/dispatches")
    assert call["auth"] == f"Bearer {FAKE_TOKEN}" and call["body"]["ref"] == "main"
    inputs = call["body"]["inputs"]
    assert inputs == {"repository": "https://github.com/valkey-io/valkey", "base": good, "candidate": bad,
                      "runner_class": "cloud-x86", "cell": '{"server":"valkey:unstable","pipeline":16}',
                      "confirm": "confirm-0123456789ab", "comment": "false", "instrument": "wallclock"}
    assert "1 candidate(s) dispatched" in (tmp_path / "step_summary.md").read_text()
    assert FAKE_TOKEN not in proc.stdout + proc.stderr


# -- the automatic bisect of a new incident ----------------------------------------------------------
UPSTREAM = "https://github.com/valkey-io/valkey"


def source_nights(dest: Path, nights: int = 14, drop_from: int = 8) -> tuple[Path, list[str]]:
    """Result files of a nightly of upstream's unstable built from source (one commit a night),
    20 % slower from night ``drop_from``: detection reports an incident between two commits."""
    from factory import make_result, write_result

    commits = [hashlib.sha1(f"night {n}".encode()).hexdigest() for n in range(nights)]
    rng = random.Random(11)
    for night, commit in enumerate(commits):
        level = 0.8 if night >= drop_from else 1.0
        result = make_result(run_id=f"gh-{1000 + night}", cell_id="io1", io_threads=1, spread=0.003, commit=commit,
                             rps={"SET": 400_000 * level * (1 + rng.uniform(-0.004, 0.004))},
                             timestamp=f"2026-10-{night + 1:02d}T02:17:00Z",
                             workflow_run_url=f"https://github.com/{OWNER_REPO}/actions/runs/{1000 + night}")
        result["subject"]["code"] = {"url": UPSTREAM, "commit": commit, "ref": "unstable"}
        write_result(dest, result)
    return dest, commits


def test_a_new_incident_is_bisected_and_its_culprit_recorded(tmp_path):
    """benchmark.yml: publish -> alert (opens the issue, writes what it did) -> dispatch-bisect (one
    bisect.yml dispatch, REST, with the incident's commits, class, issue, id and cell); bisect.yml
    with those inputs: the check says trusted, the (simulated) bisect's report is recorded by the
    publish job (bisects.json, detect.json, the site), and the alert job comments and updates the
    issue body with the culprit (the issue opened that night: no second one). Nothing is
    dispatched twice."""
    scripts, bisect_jobs = workflow_scripts("benchmark.yml"), workflow_scripts("bisect.yml")
    assert scripts["alert"][-1] == "tools/ci/alert.sh" and scripts["dispatch-bisect"][-1] == "tools/ci/bisect.sh dispatch"
    assert bisect_jobs["publish"][-1] == "tools/ci/bisect.sh record"
    assert bisect_jobs["alert"].index("tools/ci/bisect.sh comment") < bisect_jobs["alert"].index("tools/ci/alert.sh") \
        == len(bisect_jobs["alert"]) - 1
    assert workflow_scripts("ab.yml")["dispatch-bisect"][-1] == "tools/ci/bisect.sh dispatch"

    logs = Logs()
    env = base_env(tmp_path)
    bare = bare_repo(tmp_path / "pages.git")
    pages = dict(env, VKBENCH_PAGES_REPO=str(bare), VKBENCH_PAGES_BRANCH="gh-pages")
    results, commits = source_nights(tmp_path / "results")
    logs.run("publish.sh", dict(pages, VKBENCH_RESULTS_DIR=str(results), VKBENCH_SITE_OUT="site"), tmp_path)

    actions = tmp_path / "vkbench-alert" / "actions.json"
    with FakeGitHub() as api:
        logs.run("alert.sh", dict(pages, VKBENCH_API_URL=api.url, GITHUB_TOKEN=FAKE_TOKEN, VKBENCH_ALERT_ACTIONS=str(actions)),
                 tmp_path)
        (created,) = [c for c in api.calls if c["method"] == "POST" and c["path"] == f"/repos/{OWNER_REPO}/issues"]
        assert "culprit" not in created["body"]["body"]
        assert list(api.issues) == [1] and api.issues[1]["state"] == "open"
        api.calls.clear()
        dispatch_env = dict(pages, GITHUB_TOKEN=FAKE_TOKEN, GH_TOKEN=FAKE_TOKEN, GITHUB_API_URL=api.url, GITHUB_REF_NAME="main",
                            VKBENCH_ALERT_ACTIONS=str(actions))
        logs.run("bisect.sh", dispatch_env, tmp_path, args=["dispatch"])
        (dispatch,) = api.calls
        issues_after_the_nightly = api.issues        # what GitHub holds from here on
    (action,) = json.loads(actions.read_text())
    assert action["kind"] == "create" and action["issue"] == 1
    assert (dispatch["method"], dispatch["path"]) == ("POST", f"/repos/{OWNER_REPO}/actions/workflows/bisect.yml/dispatches")
    assert dispatch["auth"] == f"Bearer {FAKE_TOKEN}" and dispatch["body"]["ref"] == "main"
    inputs = dispatch["body"]["inputs"]
    assert {k: v for k, v in inputs.items() if k != "cell"} == {
        "repository": UPSTREAM, "good": commits[7], "bad": commits[8], "runner_class": "cloud-x86",
        "incident_issue": "1", "incident": action["incident_id"]}
    cell = json.loads(inputs["cell"])
    assert cell["io_threads"] == 1 and cell["tests"] == ["set", "get"] and cell["server"] == "valkey:unstable"
    assert "1 incident(s) dispatched to bisect.yml" in (tmp_path / "step_summary.md").read_text()

    # bisect.yml's inputs job, with exactly what was dispatched: trusted (benchmark-nightly).
    check_env = dict(base_env(tmp_path), GITHUB_OUTPUT=str(tmp_path / "check_output"), VKBENCH_BISECT_REPOSITORY=inputs["repository"],
                     VKBENCH_BISECT_GOOD=inputs["good"], VKBENCH_BISECT_BAD=inputs["bad"], VKBENCH_BISECT_PRESET="ab",
                     VKBENCH_BISECT_ISSUE=inputs["incident_issue"], VKBENCH_BISECT_INCIDENT=inputs["incident"],
                     VKBENCH_BISECT_CELL=inputs["cell"], VKBENCH_MACHINE_CLASS=inputs["runner_class"])
    logs.run("bisect.sh", check_env, tmp_path, args=["check"])
    assert read_outputs(tmp_path / "check_output") == {"trusted": "true"}

    # The bisect job's artifact (its real run is tests/sourcebuild's): the first bad commit is the culprit.
    from vkbench.bisect import BisectReport, Step

    out = tmp_path / "vkbench-bisect"
    out.mkdir()
    steps = [Step(commits[8], "night 8", -0.2, -0.22, -0.18, 0.02, 6, "reproduced", 50.0)]
    report = BisectReport(UPSTREAM, commits[7], commits[8], "standalone io1 P16 c50 d3 / SET", 1, commits[8],
                          "server: an extra loop in call()", -0.2, (-0.22, -0.18), steps, 51.0)
    (out / "bisect.json").write_text(json.dumps(report.to_json()))
    (out / "bisect.md").write_text(report.markdown())
    run_url = f"https://github.com/{OWNER_REPO}/actions/runs/77"
    record_env = dict(pages, GITHUB_TOKEN=FAKE_TOKEN, VKBENCH_BISECT_INCIDENT=inputs["incident"], VKBENCH_BISECT_DIR=str(out),
                      VKBENCH_SITE_OUT="site", VKBENCH_WORKFLOW_RUN_URL=run_url)
    logs.run("bisect.sh", record_env, tmp_path, args=["record"])
    assert f"{inputs['incident']}: culprit `{commits[8][:12]}`" in (tmp_path / "step_summary.md").read_text()

    branch = branch_checkout(bare, tmp_path / "check")
    entry = json.loads((branch / "history" / "bisects.json").read_text())["bisects"][inputs["incident"]]
    assert entry["culprit"] == commits[8] and entry["workflow_run_url"] == run_url and len(entry["steps"]) == 1
    (incident,) = [i for i in json.loads((branch / "history" / "detect.json").read_text())["incidents"]
                   if i["id"] == inputs["incident"]]
    assert incident["bisect"]["culprit"] == commits[8] and incident["bisect"]["effect"] == -0.2
    (shown,) = [i for i in json.loads((branch / "site" / "data" / "detect.json").read_text())["incidents"]
                if i["id"] == inputs["incident"]]
    assert shown["bisect"]["culprit_url"] == f"{UPSTREAM}/commit/{commits[8]}"

    # bisect.yml's alert job: the comment, then the issue the nightly opened (issue 1, found by its
    # label and marker) gets the culprit in its body; no second issue; dispatch again: nothing.
    with FakeGitHub(issues=issues_after_the_nightly) as api:
        comment_env = dict(pages, GH_TOKEN=FAKE_TOKEN, GITHUB_API_URL=api.url, VKBENCH_BISECT_ISSUE="1", VKBENCH_BISECT_DIR=str(out))
        logs.run("bisect.sh", comment_env, tmp_path, args=["comment"])
        logs.run("alert.sh", dict(pages, VKBENCH_API_URL=api.url, GITHUB_TOKEN=FAKE_TOKEN), tmp_path)
        comment = api.calls[0]
        listed = [c for c in api.calls if c["method"] == "GET" and c["path"].startswith(f"/repos/{OWNER_REPO}/issues?")]
        (update,) = [c for c in api.calls if c["method"] == "PATCH"]
        assert [c for c in api.calls if c["method"] == "POST" and c["path"] == f"/repos/{OWNER_REPO}/issues"] == [], api.calls
        api.calls.clear()
        logs.run("bisect.sh", dict(dispatch_env, GITHUB_API_URL=api.url), tmp_path, args=["dispatch"])
        assert api.calls == []
    assert comment["path"] == f"/repos/{OWNER_REPO}/issues/1/comments" and "**Culprit:**" in comment["body"]["body"]
    assert listed and all("labels=vkbench-regression" in c["path"] for c in listed), listed
    culprit = f"**culprit** ([bisect]({run_url}) (1 A/B step)): [`{commits[8][:10]}`]({UPSTREAM}/commit/{commits[8]})"
    assert update["path"] == f"/repos/{OWNER_REPO}/issues/1" and culprit in update["body"]["body"], update
    assert list(api.issues) == [1] and culprit in api.issues[1]["body"] and api.issues[1]["state"] == "open"
    assert f"{inputs['incident']}: already bisected" in (tmp_path / "step_summary.md").read_text()
    assert FAKE_TOKEN not in logs.text


def test_ab_preset_specs_from_changes_runs_the_specs_the_pull_request_touches(tmp_path):
    """ab.yml's preset `specs-from-changes` (issue 20): vkbench ab selects catalog specs from the
    files changed between the approved base and head, instead of a preset; never with a cell."""
    pinned = dict(base_env(tmp_path), VKBENCH_AB_REPOSITORY="https://github.com/someone/valkey", VKBENCH_AB_BASE="c" * 40,
                  VKBENCH_AB_PR="1234", VKBENCH_AB_CANDIDATE="d" * 40, VKBENCH_MACHINE_CLASS="cloud-x86",
                  VKBENCH_AB_PRESET="specs-from-changes")
    assert _script("ab.sh", "check", pinned, tmp_path).returncode == 0
    with_cell = _script("ab.sh", "check", {**pinned, "VKBENCH_AB_CELL": '{"server": "valkey:9.1.2"}'}, tmp_path)
    assert with_cell.returncode == 2 and "specs-from-changes" in with_cell.stderr
    argv = _run_argv("ab.sh", pinned, tmp_path)
    assert argv[argv.index("--specs-from-changes") + 1] == f"{'c' * 40}..{'d' * 40}" and "--preset" not in argv
