"""The A/B of a Valkey pull request from a fork, run by act on this host: the path a maintainer starts.

1. A pull request from a fork reaches no self-hosted job: act lists the jobs that `pull_request`
   and `pull_request_target` events start in vkbench's workflows, and none runs on a self-hosted
   runner.
2. In the Valkey repository (a local copy with docs/templates/valkey-vkbench-ab.yml committed as
   .github/workflows/vkbench-ab.yml, as a Valkey maintainer would add it), the label
   `run-benchmark` on the fork's pull request runs the caller under act: on a GitHub-hosted
   runner, checking nothing out, it dispatches ab.yml through the REST API (the fake one, which
   records it) with the pull request's number and both commits pinned. Another label does nothing.
3. ab.yml, dispatched with exactly the inputs the caller sent: the inputs check and the wheel
   (hosted) -> the A/B on the self-hosted runner (base and the fork's head built from source,
   interleaved rounds, no secret in the job) -> the comment job posts the table on the pull
   request with the Valkey repository's token and takes the label off (fake API); the
   confirmation jobs are skipped.

The Valkey repository stands behind ``https://github.com/valkey-io/valkey`` through git's
insteadOf in the jobs' HOME (act_harness.job_home): its ``unstable`` is BASE_COMMIT and
``refs/pull/7/head`` a commit of the fork (a README change, so its build is the base's plus
ccache hits). Stand-ins: act_harness.py (setup-python, the REST API).
"""

from __future__ import annotations

import json
import shutil

import act_harness as ah
import pytest
import yaml
from source_builds import BASE_COMMIT, BUILD_ENV, commit_readme_note, git

VALKEY = "https://github.com/valkey-io/valkey"
PR = 7
DISPATCH_TOKEN = "github_pat_actHarnessDispatch0123456789abcdef"
PR_TOKEN = "github_pat_actHarnessValkeyComment0123456789ab"
#: One small cell, both sides, four interleaved rounds: what the A/B measures is not the point here.
CELL = {"server": "valkey:unstable", "topology": "standalone", "pipeline": 16, "clients": 50, "requests": 50000,
        "keyspace": 10000, "warmup": 5000, "tests": ["set", "get"]}


@pytest.fixture
def valkey(tmp_path) -> dict:
    """Valkey's repository with a fork's pull request #7, and a work tree with the caller committed."""
    bare = tmp_path / "valkey.git"
    _, commits = ah.valkey_repository(bare, {"unstable": BASE_COMMIT})
    base = commits["unstable"]
    tree = tmp_path / "valkey-tree"
    git(tmp_path, "clone", "-q", "--no-local", str(bare), str(tree))
    git(tree, "checkout", "-q", "-b", "feature", base)
    head = commit_readme_note(tree, "a fork's change", "docs: a fork's change")
    git(tree, "push", "-q", str(bare), f"HEAD:refs/pull/{PR}/head")
    # The maintainers' side: the caller committed on unstable, the remote named as on GitHub.
    git(tree, "checkout", "-q", "-B", "unstable", base)
    (tree / ".github" / "workflows").mkdir(parents=True, exist_ok=True)   # Valkey has its own workflows
    shutil.copy(ah.REPO / "docs" / "templates" / "valkey-vkbench-ab.yml", tree / ".github" / "workflows" / "vkbench-ab.yml")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "ci: vkbench A/B on a label")
    git(tree, "remote", "set-url", "origin", VALKEY)
    return {"bare": bare, "tree": tree, "base": base, "head": head}


def labeled_event(valkey: dict, label: str) -> dict:
    """pull_request_target `labeled` on a pull request whose head is in a fork."""
    repo = {"name": "valkey", "full_name": "valkey-io/valkey", "owner": {"login": "valkey-io"}, "html_url": VALKEY,
            "default_branch": "unstable", "private": False, "fork": False}
    fork = {**repo, "full_name": "mallory/valkey", "owner": {"login": "mallory"}, "fork": True,
            "html_url": "https://github.com/mallory/valkey"}
    return {"action": "labeled", "number": PR, "label": {"name": label}, "repository": repo,
            "sender": {"login": "a-maintainer"},
            "pull_request": {"number": PR, "state": "open", "title": "a fork's change",
                             "head": {"sha": valkey["head"], "ref": "feature", "repo": fork},
                             "base": {"sha": valkey["base"], "ref": "unstable", "repo": repo}}}


def self_hosted(workflow: str, job: str) -> bool:
    runs_on = yaml.safe_load((ah.REPO / ".github" / "workflows" / workflow).read_text())["jobs"][job]["runs-on"]
    return "self-hosted" in (runs_on if isinstance(runs_on, list) else [runs_on])


def test_a_fork_pull_request_reaches_no_self_hosted_job(act_runner, valkey, tmp_path):
    act_runner.env["HOME"] = str(ah.job_home(tmp_path, None))
    event = labeled_event(valkey, "run-benchmark")
    started = {name: act_runner.jobs_for(name, event) for name in ("pull_request", "pull_request_target")}
    assert started["pull_request"], "ci.yml runs on pull requests: act listed nothing, so the listing is broken"
    assert {workflow for workflow, _ in started["pull_request"]} == {"ci.yml"}, started
    assert started["pull_request_target"] == [], started
    assert [(w, j) for jobs in started.values() for w, j in jobs if self_hosted(w, j)] == []


def test_a_label_on_a_fork_pull_request_runs_a_pinned_ab_and_comments(act_runner, valkey, tmp_path):
    # -- 2. the caller, in the Valkey repository ----------------------------------------------
    caller = ah.ActRunner(tree=valkey["tree"], work=tmp_path / "caller", actions=[], env=dict(act_runner.env))
    caller.work.mkdir()
    caller.env["HOME"] = str(ah.job_home(caller.work, None))
    caller.secrets["VKBENCH_DISPATCH_TOKEN"] = DISPATCH_TOKEN
    caller.variables["VKBENCH_REPOSITORY"] = ah.OWNER_REPO
    with ah.FakeGitHub(act_runner.head_sha) as api:
        caller.env["GITHUB_API_URL"] = api.url
        other = caller.run("pull_request_target", "vkbench-ab.yml", labeled_event(valkey, "bug"), timeout=300)
        assert other.returncode == 0, other.describe()
        assert api.calls == [] and other.names().get("dispatch") in (None, "skipped"), other.describe()
        asked = caller.run("pull_request_target", "vkbench-ab.yml", labeled_event(valkey, "run-benchmark"), timeout=300)
    assert asked.returncode == 0 and asked.names() == {"dispatch": "success"}, asked.describe()
    (dispatch,) = api.calls
    assert (dispatch["method"], dispatch["path"]) == ("POST", f"/repos/{ah.OWNER_REPO}/actions/workflows/ab.yml/dispatches")
    assert dispatch["auth"] == f"Bearer {DISPATCH_TOKEN}"
    sent = dispatch["body"]
    assert sent == {"ref": "main", "inputs": {"repository": VALKEY, "base": valkey["base"], "pr": str(PR),
                                              "candidate": valkey["head"]}}, sent
    assert ah.secret_leaks(asked, [DISPATCH_TOKEN]) == []

    # -- 3. ab.yml, with what the caller sent ---------------------------------------------------
    act_runner.env.update(BUILD_ENV)
    act_runner.env["HOME"] = str(ah.job_home(tmp_path, None, {VALKEY: str(valkey["bare"])}))
    act_runner.secrets.update(GITHUB_TOKEN=ah.FAKE_TOKEN, VKBENCH_PR_TOKEN=PR_TOKEN)
    inputs = {"repository": VALKEY, "base": "unstable", "candidate": "", "pr": "", "runner_class": "cloud-x86",
              "preset": "ab", "max_rounds": "4", "comment": "true", "cell": json.dumps(CELL), "confirm": "",
              **sent["inputs"]}
    with ah.FakeGitHub(act_runner.head_sha) as api:
        act_runner.env["GITHUB_API_URL"] = api.url
        result = act_runner.run("workflow_dispatch", "ab.yml", ah.dispatch_event(inputs, "ab.yml"), timeout=1800)
    print(f"ab.yml under act: {result.seconds:.0f}s")
    assert result.returncode == 0, result.describe()
    ran = {name: state for name, state in result.names().items() if state != "skipped"}
    assert ran == {"check the inputs": "success", "A/B on cloud-x86": "success",
                   "comment on the pull request": "success"}, result.describe()

    # The A/B built the approved head of the fork's pull request against the pinned base.
    summary = "\n".join(result.summaries("A/B on cloud-x86"))
    assert f"`{valkey['head'][:10]}` (refs/pull/{PR}/head) vs `{valkey['base'][:10]}`" in summary, summary
    assert "| SET |" in summary and "| GET |" in summary and "MDE reached" in summary
    # The comment: on the Valkey repository's pull request, with its own token; then the label off.
    comment, unlabel = api.calls
    assert (comment["method"], comment["path"]) == ("POST", f"/repos/valkey-io/valkey/issues/{PR}/comments")
    assert "vkbench A/B" in comment["body"]["body"] and "| SET |" in comment["body"]["body"]
    assert (unlabel["method"], unlabel["path"]) == ("DELETE", f"/repos/valkey-io/valkey/issues/{PR}/labels/run-benchmark")
    assert all(c["auth"] == f"Bearer {PR_TOKEN}" for c in api.calls)
    # The job that ran the fork's code held no secret: no token reached its environment.
    ab_log = result.output_of(next(job for job in result.jobs if job.endswith("A/B on cloud-x86")))
    assert ab_log and PR_TOKEN not in ab_log and ah.FAKE_TOKEN not in ab_log
    assert ah.secret_leaks(result, [ah.FAKE_TOKEN, PR_TOKEN]) == []
