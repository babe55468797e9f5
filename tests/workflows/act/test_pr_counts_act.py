"""The instruction-count A/B of a Valkey pull request (pr-counts.yml), run by act on this host the
way a pull request starts it: in a Valkey repository (a local copy with
docs/templates/valkey-vkbench-counts.yml committed as .github/workflows/vkbench-counts.yml, its
`uses:` and `vkbench_ref` pinned at the vkbench commit under test, as a Valkey maintainer pins
them), a `pull_request` event of pull request #11 runs the caller, which calls pr-counts.yml:
vkbench checked out at the pinned commit, `tools/ci/pr-counts.sh setup` (build tools, valgrind,
vkbench's venv) and `run` (`vkbench ci counts`: base and head built from source, 3 seed pairs
counted under real callgrind), the table in the job summary and the `vkbench-counts` artifact.

The pull request's head is tests/source_builds.commit_counted_cost on a README change (the same
commits as tests/sourcebuild's counted_cost_repo, so their builds are shared): 33 instructions
more per command in `vkbenchTestCost`, which the A/B must report for SET and GET as the function
that changed, with its cost per operation, and never as fewer instructions.

The caller passes `requests: "2000"` (pr-counts.yml's input: 4 windows of 2,000 requests per
command and server instead of 20,000): the smallest count that still resolves the cost.
Stand-ins: act_harness.py (setup-python; the vkbench and Valkey repositories behind git's
insteadOf in the jobs' HOME; the pinned reusable workflow and actions from local copies).
"""

from __future__ import annotations

import io
import json
import zipfile

import act_harness as ah
import pytest
from source_builds import BASE_COMMIT, BUILD_ENV, COST_FUNCTION, commit_counted_cost, commit_readme_note, git

VALKEY = "https://github.com/valkey-io/valkey"
PR = 11
REQUESTS = "2000"
JOB = "instruction A/B (GitHub-hosted)"


@pytest.fixture
def valkey(tmp_path, act_runner) -> dict:
    """Valkey's repository with pull request #11, and a work tree with the caller committed."""
    bare = tmp_path / "valkey.git"
    _, commits = ah.valkey_repository(bare, {"unstable": BASE_COMMIT})
    base = commits["unstable"]
    tree = tmp_path / "valkey-tree"
    git(tmp_path, "clone", "-q", "--no-local", str(bare), str(tree))
    git(tree, "checkout", "-q", "-b", "feature", base)
    commit_readme_note(tree, "a neutral change (counted)", "neutral: a README comment")
    head = commit_counted_cost(tree)
    git(tree, "push", "-q", str(bare), f"HEAD:refs/pull/{PR}/head")
    # The maintainers' side: the caller committed on unstable, pinned at the vkbench commit under test.
    git(tree, "checkout", "-q", "-B", "unstable", base)
    template = (ah.REPO / "docs" / "templates" / "valkey-vkbench-counts.yml").read_text()
    zeros = "0" * 40
    assert "uses: OWNER/vkbench/" in template and template.count(zeros) == 2, "the template's pins moved"
    caller = template.replace("OWNER/vkbench", ah.OWNER_REPO).replace(zeros, act_runner.head_sha)
    pinned = f'      vkbench_ref: "{act_runner.head_sha}"\n'
    assert pinned in caller
    caller = caller.replace(pinned, pinned + f'      requests: "{REQUESTS}"\n')
    (tree / ".github" / "workflows").mkdir(parents=True, exist_ok=True)
    (tree / ".github" / "workflows" / "vkbench-counts.yml").write_text(caller)
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "ci: vkbench instruction counts on every pull request")
    git(tree, "remote", "set-url", "origin", VALKEY)
    return {"bare": bare, "tree": tree, "base": base, "head": head}


def opened_event(valkey: dict) -> dict:
    """pull_request `opened` from a fork."""
    repo = {"name": "valkey", "full_name": "valkey-io/valkey", "owner": {"login": "valkey-io"}, "html_url": VALKEY,
            "default_branch": "unstable", "private": False, "fork": False}
    fork = {**repo, "full_name": "mallory/valkey", "owner": {"login": "mallory"}, "fork": True,
            "html_url": "https://github.com/mallory/valkey"}
    return {"action": "opened", "number": PR, "repository": repo, "sender": {"login": "mallory"},
            "pull_request": {"number": PR, "state": "open", "title": "a few instructions more",
                             "head": {"sha": valkey["head"], "ref": "feature", "repo": fork},
                             "base": {"sha": valkey["base"], "ref": "unstable", "repo": repo}}}


def artifact_files(artifacts) -> dict[str, bytes]:
    """The files of the `vkbench-counts` artifact, by name (act keeps an upload-artifact v4+ upload
    as one zip file)."""
    files: dict[str, bytes] = {}
    for path in artifacts.rglob("*"):
        if not path.is_file() or "vkbench-counts" not in str(path.relative_to(artifacts)):
            continue
        data = path.read_bytes()
        if zipfile.is_zipfile(io.BytesIO(data)):
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                files.update({name.rsplit("/", 1)[-1]: archive.read(name) for name in archive.namelist()
                              if not name.endswith("/")})
        else:
            files[path.name] = data
    return files


def test_a_pull_request_gets_its_instruction_counts(act_runner, valkey, tmp_path):
    work = tmp_path / "caller"
    work.mkdir()
    # The reusable workflow the caller pins, from the vkbench commit under test (as act fetches
    # a remote `uses:`), beside the pinned actions.
    pinned = ["--local-repository", f"{ah.OWNER_REPO}@{act_runner.head_sha}={act_runner.tree}"]
    caller = ah.ActRunner(tree=valkey["tree"], work=work, actions=[*act_runner.actions, *pinned], env=dict(act_runner.env))
    caller.env.update(BUILD_ENV)
    # actions/checkout fetches vkbench at the pinned commit, vkbench ab fetches Valkey: both local.
    caller.env["HOME"] = str(ah.job_home(work, None, {VALKEY: str(valkey["bare"]), ah.REPO_URL: str(act_runner.tree)}))
    # GitHub gives a pull_request run a read-only token: a token, for actions/checkout.
    caller.secrets["GITHUB_TOKEN"] = ah.FAKE_TOKEN
    result = caller.run("pull_request", "vkbench-counts.yml", opened_event(valkey), timeout=3600)
    print(f"pr-counts.yml under act: {result.seconds:.0f}s")
    assert result.returncode == 0, result.describe()
    # act names a called workflow's job after the caller's job and the called workflow: counts/pr-counts/...
    assert [state for name, state in result.names().items() if name.endswith(JOB)] == ["success"], result.describe()
    assert set(result.names().values()) == {"success"}, result.describe()
    job = next(name for name in result.names() if name.endswith(JOB))
    steps = result.step_results(job)
    assert {steps.get(s) for s in ("Set up vkbench, the build tools and valgrind", "Build both sides and count instructions",
                                   "Upload the table")} == {"success"}, steps

    # The job summary: instructions per operation of SET and GET, memory per key, the cost's function.
    summary = "\n".join(result.summaries())
    assert "**Instructions per operation**" in summary and "base instr/op" in summary, summary
    assert "**Memory per key**" in summary and "base bytes/key" in summary, summary
    assert "| SET |" in summary and "| GET |" in summary, summary
    assert COST_FUNCTION in summary, summary
    assert "quiet runner" in summary, "wall-clock numbers are not measured here"

    # The artifact the comment workflow posts: the same table, the report, the pull request counted.
    files = artifact_files(work / "artifacts")
    assert {"ab.md", "ab.json", "pr-number", "pr-head"} <= set(files), sorted(files)
    assert files["pr-number"].decode().strip() == str(PR)
    assert files["pr-head"].decode().strip() == valkey["head"]
    report = json.loads(files["ab.json"])
    assert report["instrument"] == "instructions", report.keys()
    counts = {row["command"]: row for row in report["counts"]}
    assert set(counts) == {"SET", "GET"}, report["counts"]
    for command, row in counts.items():
        # The change: the function the head adds, with the instructions it costs per operation (33
        # and a fraction: exact, its own count). Whether a row's verdict is "more instructions" or
        # "inconclusive" depends on the spread between seeds, which 50 pipelining clients make
        # timing-dependent (how many commands one read brings): 2,000-request windows reach the
        # 0.5 % target for GET (+40 per op, MDE 0.50 %) but not always for SET (+20, MDE 0.7 %).
        # Never a decrease, though.
        cost = next((f for f in row["functions"] if f["function"] == COST_FUNCTION), None)
        assert cost is not None and cost["before"] == 0 and 30 <= cost["delta"] <= 40, (command, row["functions"])
        assert row["verdict"] == "more instructions" or row["verdict"].startswith("inconclusive"), (command, row["verdict"])
        assert row["delta_code_high"] > 0, (command, row)
        assert f"`{COST_FUNCTION}` +{cost['delta']:,.1f}" in summary, summary
    assert report["memory"] and all(m["metric"] == "bytes_per_key" and m["base"] > 0 for m in report["memory"])
    # The requests input reached the count: 4 windows of 2,000 requests per command and server.
    assert report["counts_method"]["window_requests"] == int(REQUESTS), report["counts_method"]
    table = files["ab.md"].decode()
    assert table.startswith(summary.split("\n", 1)[0]), "the artifact's table is the summary's"
    assert "`run-benchmark`" in table, "the comment says how to get the wall-clock A/B"
    assert ah.secret_leaks(result, [ah.FAKE_TOKEN]) == []
