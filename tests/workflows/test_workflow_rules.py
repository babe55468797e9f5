"""The repository's workflows obey the rules in workflow_rules.py, and every rule can fail."""

from __future__ import annotations

import pytest
import yaml

from workflow_paths import FIXTURES, WORKFLOWS
from workflow_rules import check_dir, load_dir

EXPECTED_WORKFLOWS = {"benchmark.yml", "nightly.yml", "ab.yml", "bisect.yml", "ci.yml", "pr-counts.yml"}


def test_expected_workflows_exist():
    assert EXPECTED_WORKFLOWS <= {p.name for p in WORKFLOWS.glob("*.yml")}


def test_repository_workflows_break_no_rule():
    violations = check_dir(WORKFLOWS)
    assert not violations, "\n".join(str(v) for v in violations)


@pytest.mark.parametrize(
    ("fixture", "rule"),
    [
        ("pinned_tag", "pinned-uses"),
        ("pinned_no_comment", "pinned-uses"),
        ("permissions_missing", "permissions"),
        ("write_scope_wrong_job", "write-scope"),
        ("self_hosted_pr_unguarded", "self-hosted-pr"),
        ("self_hosted_pr_via_call", "self-hosted-pr"),
        ("run_interpolation", "run-interpolation"),
        ("persist_credentials", "persist-credentials"),
        ("self_hosted_timeout", "self-hosted-timeout"),
        ("fail_fast", "fail-fast"),
        ("runner_concurrency", "runner-concurrency"),
        ("self_hosted_environment", "self-hosted-environment"),
        ("trusted_environment", "trusted-environment"),
        ("trusted_environment_output", "trusted-environment"),
        ("inputs_gate", "inputs-gate"),
        ("trusted_write", "trusted-write"),
        ("pr_target", "pr-target"),
        ("pr_secrets", "pr-secrets"),
        ("pr_token", "pr-token"),
        ("pr_hosted", "pr-hosted"),
        ("artifact_per_call", "artifact-per-call"),
    ],
)
def test_each_rule_reports_its_broken_fixture(fixture, rule):
    violations = check_dir(FIXTURES / fixture)
    rules = {v.rule for v in violations}
    assert rule in rules, f"{fixture}: expected {rule}, got {[str(v) for v in violations]}"
    # Each fixture breaks one rule only, so the test pins down which rule fired.
    assert rules == {rule}, [str(v) for v in violations]


def test_every_fixture_directory_is_tested():
    tested = {
        "pinned_tag", "pinned_no_comment", "permissions_missing", "write_scope_wrong_job",
        "self_hosted_pr_unguarded", "self_hosted_pr_via_call", "run_interpolation",
        "persist_credentials", "self_hosted_timeout", "fail_fast", "runner_concurrency",
        "self_hosted_environment", "trusted_environment", "trusted_environment_output", "inputs_gate",
        "trusted_write", "pr_target", "pr_secrets", "pr_token", "pr_hosted", "artifact_per_call",
    }
    assert {p.name for p in FIXTURES.iterdir() if p.is_dir()} == tested


def test_on_key_is_read_despite_yaml_boolean():
    # PyYAML parses `on:` as True; the checker must still see the triggers.
    wf = load_dir(WORKFLOWS)["ab.yml"]
    assert True in yaml.safe_load(wf.text)
    assert wf.triggers == {"workflow_dispatch"}


def test_benchmark_inputs_match_the_contract():
    """The dispatch form and the reusable interface offer the same inputs."""
    wf = load_dir(WORKFLOWS)["benchmark.yml"]
    on = wf.data[True]
    dispatch, call = on["workflow_dispatch"]["inputs"], on["workflow_call"]["inputs"]
    expected = {"preset", "versions", "io_threads", "topologies", "tool", "runner_classes", "repetitions", "publish"}
    assert set(dispatch) == expected == set(call)
    assert dispatch["preset"]["options"] == [
        "smoke", "nightly", "nightly-datatypes", "pi-cm4-blog", "io-threads-sweep", "pipeline-sweep", "read-replicas"
    ]
    assert dispatch["runner_classes"]["default"] == "cloud-x86"
    assert dispatch["publish"]["type"] == call["publish"]["type"] == "boolean"


def test_presets_offered_in_the_form_exist():
    from importlib import resources

    wf = load_dir(WORKFLOWS)["benchmark.yml"]
    shipped = {p.name[:-5] for p in (resources.files("vkbench.matrix") / "presets").iterdir() if p.name.endswith(".yaml")}
    assert set(wf.data[True]["workflow_dispatch"]["inputs"]["preset"]["options"]) <= shipped


def test_nightly_calls_benchmark_with_nightly_preset_everywhere():
    wf = load_dir(WORKFLOWS)["nightly.yml"]
    assert {"schedule", "workflow_dispatch"} <= wf.triggers
    assert set(wf.jobs) == {"nightly", "datatypes"}
    job = wf.jobs["nightly"]
    assert job["uses"] == "./.github/workflows/benchmark.yml"
    assert job["with"]["preset"] == "nightly"
    # issue 19: and the GitHub-hosted class, where the plan schedules only instruction counts
    assert set(job["with"]["runner_classes"].split(",")) == {"pi-cm4", "cloud-x86", "cloud-arm64", "github-hosted"}
    assert job["with"]["publish"] is True


def test_nightly_also_runs_every_data_type_on_the_wall_clock_classes():
    """issue 20: nightly-datatypes is the nightly's second call, on the self-hosted classes only
    (memtier specs: no instruction counts, so nothing for github-hosted), published, with the
    nightly job's scopes and versions."""
    jobs = load_dir(WORKFLOWS)["nightly.yml"].jobs
    job = jobs["datatypes"]
    assert job["uses"] == jobs["nightly"]["uses"] == "./.github/workflows/benchmark.yml"
    assert job["with"]["preset"] == "nightly-datatypes"
    assert job["with"]["runner_classes"].split(",") == ["pi-cm4", "cloud-x86", "cloud-arm64"]
    assert job["with"]["publish"] is True and job["with"]["versions"] == jobs["nightly"]["with"]["versions"]
    assert job["permissions"] == jobs["nightly"]["permissions"] == {"contents": "write", "issues": "write",
                                                                    "actions": "write"}


def test_two_calls_of_benchmark_in_one_run_keep_their_artifacts_and_both_publish():
    """Artifacts belong to the run: each call's are named by its preset, its publish downloads only
    its own results, and the publish group queues without cancelling (artifact-per-call checks
    the rule in general; this pins the names)."""
    jobs = load_dir(WORKFLOWS)["benchmark.yml"].jobs

    def artifact_steps(job_id, action):
        return [s["with"] for s in jobs[job_id]["steps"] if str(s.get("uses", "")).startswith(f"actions/{action}@")]

    assert [w["name"] for w in artifact_steps("plan", "upload-artifact")] == ["vkbench-${{ inputs.preset }}-wheel"]
    for job_id in ("bench", "count"):
        assert artifact_steps(job_id, "upload-artifact")[0]["name"] == "vkbench-${{ inputs.preset }}-result-${{ matrix.id }}"
    (results,) = [w for w in artifact_steps("publish", "download-artifact") if "pattern" in w]
    assert results["pattern"] == "vkbench-${{ inputs.preset }}-result-*" and results["merge-multiple"] is True
    # "nightly"'s pattern cannot pick up "nightly-datatypes"'s results, nor a failed cell's.
    import fnmatch
    pattern = results["pattern"].replace("${{ inputs.preset }}", "nightly")
    assert fnmatch.fnmatch("vkbench-nightly-result-c1", pattern)
    assert not fnmatch.fnmatch("vkbench-nightly-datatypes-result-c1", pattern)
    assert not fnmatch.fnmatch("vkbench-nightly-failed-c1", pattern)
    # The backstop charts: the nightly keeps its chart; any other preset gets one of its own.
    charts = [s["with"]["name"] for s in jobs["publish"]["steps"]
              if str(s.get("uses", "")).startswith("benchmark-action/github-action-benchmark@")]
    suffix = "${{ inputs.preset != 'nightly' && format(' [{0}]', inputs.preset) || '' }}"
    assert charts == [f"vkbench throughput (rps){suffix}", f"vkbench latency (ms){suffix}",
                      f"vkbench counts (instructions/op, bytes/key){suffix}"]
    publish = jobs["publish"]["concurrency"]
    assert publish["group"] == "vkbench-publish" and publish["cancel-in-progress"] is False and publish["queue"] == "max"


def test_scripts_called_by_workflows_exist_and_are_executable():
    import re

    from workflow_paths import REPO

    called = set()
    for wf in load_dir(WORKFLOWS).values():
        for job in wf.jobs.values():
            for step in job.get("steps") or []:
                called |= set(re.findall(r"\btools/[\w./-]+\.sh\b", str(step.get("run", ""))))
    assert called, "the workflows call no tools/ script"
    for script in sorted(called):
        path = REPO / script
        assert path.is_file(), f"{script} is called by a workflow but does not exist"
        assert path.stat().st_mode & 0o111, f"{script} is not executable"


def test_workflows_name_only_workflows_that_exist():
    """A workflow's comments and steps name other workflows by file (who shares a concurrency group,
    who dispatches whom): each such name is a workflow of this repository, none a deleted one."""
    import re

    existing = {p.name for p in WORKFLOWS.glob("*.yml")}
    for workflow in sorted(WORKFLOWS.glob("*.yml")):
        named = set(re.findall(r"\b([A-Za-z0-9_-]+\.ya?ml)\b", workflow.read_text()))
        assert named <= existing, f"{workflow.name} names {sorted(named - existing)}"


def test_dispatch_form_docs_cover_every_input():
    """docs/workflows.md and its annotated form explain every input the form shows."""
    from workflow_paths import REPO

    inputs = load_dir(WORKFLOWS)["benchmark.yml"].data[True]["workflow_dispatch"]["inputs"]
    guide = (REPO / "docs" / "workflows.md").read_text()
    form = (REPO / "docs" / "img" / "dispatch-form.svg").read_text()
    for name in inputs:
        assert f"`{name}`" in guide, f"docs/workflows.md does not explain the {name} input"
        assert f"> {name}<" in form or f" {name}</text>" in form, f"dispatch-form.svg has no note for {name}"


# -- trusted follow-ups (ab.yml, bisect.yml) and the automatic bisect's dispatch --------------------

def test_trusted_environment_only_where_the_inputs_job_says_trusted():
    """ab.yml's and bisect.yml's self-hosted job runs without a reviewer only when its hosted
    `inputs` job's check step outputs trusted=true; the nightly's bench job only on a schedule.
    Every other self-hosted job waits for a reviewer of `benchmark`."""
    from workflow_rules import INPUTS_CHOICE, SCHEDULE_CHOICE, is_self_hosted

    workflows = load_dir(WORKFLOWS)
    choices = {}
    for wf in workflows.values():
        for job_id, job in wf.jobs.items():
            if is_self_hosted(job):
                choices[f"{wf.name}:{job_id}"] = job.get("environment")
    assert choices == {"benchmark.yml:bench": SCHEDULE_CHOICE, "ab.yml:ab": INPUTS_CHOICE,
                       "bisect.yml:bisect": INPUTS_CHOICE}, choices
    for name, script in (("ab.yml", "tools/ci/ab.sh check"), ("bisect.yml", "tools/ci/bisect.sh check")):
        inputs = workflows[name].jobs["inputs"]
        assert inputs["runs-on"] == "ubuntu-latest" and inputs["outputs"] == {"trusted": "${{ steps.check.outputs.trusted }}"}
        (step,) = [s for s in inputs["steps"] if s.get("id") == "check"]
        assert step["run"] == script
        # The check sees the trusted repository; the job that runs the code is told the verdict
        # (and checks the commits are on that repository's branch before building).
        assert step["env"]["VKBENCH_VALKEY_REPOSITORY"] == "${{ vars.VKBENCH_VALKEY_REPOSITORY }}"
    ab_env = next(s for s in workflows["ab.yml"].jobs["ab"]["steps"] if s.get("run") == "tools/ci/ab.sh run")["env"]
    bisect_env = next(s for s in workflows["bisect.yml"].jobs["bisect"]["steps"] if s.get("run") == "tools/ci/bisect.sh run")["env"]
    assert ab_env["VKBENCH_AB_TRUSTED"] == bisect_env["VKBENCH_BISECT_TRUSTED"] == "${{ needs.inputs.outputs.trusted }}"


def test_the_bisect_dispatch_job_holds_least_privilege():
    """benchmark.yml (and ab.yml, for the incident a confirmation opens) dispatch bisects from a job
    of its own: actions: write and contents: read, nothing else; alert keeps issues: write only.
    What alert did reaches it as an artifact; the only other job with actions: write is confirm."""
    for name in ("benchmark.yml", "ab.yml"):
        jobs = load_dir(WORKFLOWS)[name].jobs
        job = jobs["dispatch-bisect"]
        assert job["permissions"] == {"contents": "read", "actions": "write"}, name
        assert job["needs"] == "alert" and job["runs-on"] == "ubuntu-latest"
        assert [s["run"] for s in job["steps"] if "run" in s][-1] == "tools/ci/bisect.sh dispatch"
        assert jobs["alert"]["permissions"] == {"contents": "read", "issues": "write"}, name
        uploads = [s for s in jobs["alert"]["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
        downloads = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/download-artifact@")]
        # benchmark.yml's artifacts carry the preset (nightly.yml calls it twice in one run).
        alert_artifact = "vkbench-${{ inputs.preset }}-alert" if name == "benchmark.yml" else "vkbench-alert"
        assert [u["with"]["name"] for u in uploads] == [alert_artifact]
        assert alert_artifact in [d["with"]["name"] for d in downloads]
        holders = {job_id for job_id, j in jobs.items() if (j.get("permissions") or {}).get("actions") == "write"}
        assert holders == ({"confirm", "dispatch-bisect"} if name == "benchmark.yml" else {"dispatch-bisect"}), holders
    # The culprit (bisect.yml) and the confirmation's verdict (ab.yml) are recorded by a hosted job of
    # their own (the only one with contents: write), on the trusted path only; the self-hosted job
    # holds nothing but contents: read.
    for name, runs in (("bisect.yml", "bisect"), ("ab.yml", "ab")):
        jobs = load_dir(WORKFLOWS)[name].jobs
        writers = {job_id for job_id, j in jobs.items() if (j.get("permissions") or {}).get("contents") == "write"}
        assert writers == {"publish"}, (name, writers)
        assert jobs["publish"]["permissions"] == {"contents": "write"} and jobs[runs]["permissions"] == {"contents": "read"}
        assert jobs["publish"]["needs"] == ["inputs", runs], name
        assert "needs.inputs.outputs.trusted == 'true'" in jobs["publish"]["if"] and "||" not in jobs["publish"]["if"], name


def test_jobs_after_a_refused_dispatch_do_not_run():
    """ab.yml's comment and bisect.yml's alert run on !cancelled() (after a failed A/B or bisect too),
    so they need `inputs` and require its success: a dispatch the check refused posts nothing."""
    for name, job_id in (("ab.yml", "comment"), ("bisect.yml", "alert")):
        job = load_dir(WORKFLOWS)[name].jobs[job_id]
        assert "inputs" in job["needs"] and "needs.inputs.result == 'success'" in job["if"], (name, job)
    violations = [v for v in check_dir(WORKFLOWS) if v.rule in ("inputs-gate", "trusted-write")]
    assert violations == [], violations


def test_self_hosted_jobs_tear_down_the_backend_they_ran():
    """teardown.sh cleans up $VKBENCH_BACKEND (default compose): every job that calls it sets the
    backend its run used at the job level, so an ab/bisect job (native) removes native leftovers."""
    expected = {("benchmark.yml", "bench"): "compose", ("ab.yml", "ab"): "native", ("bisect.yml", "bisect"): "native"}
    seen = {}
    for wf in load_dir(WORKFLOWS).values():
        for job_id, job in wf.jobs.items():
            if any(str(step.get("run", "")).strip() == "tools/ci/teardown.sh" for step in job.get("steps") or []):
                seen[(wf.name, job_id)] = (job.get("env") or {}).get("VKBENCH_BACKEND")
    assert seen == expected


def test_every_wheel_install_goes_through_the_one_local_action(tmp_path):
    """Issue 24: the "install the vkbench wheel" block lives once, in .github/actions/install-vkbench;
    its own `uses:` keep the pin rules, and a job that uses it checks the repository out first."""
    from workflow_paths import REPO

    users = 0
    for wf in load_dir(WORKFLOWS).values():
        for job_id, job in wf.jobs.items():
            steps = job.get("steps") or []
            uses = [str(s.get("uses", "")) for s in steps]
            # Only the plan job installs a wheel itself: the one it has just built.
            builds = any(s.get("name") == "Build the vkbench wheel" for s in steps)
            assert builds or not any("pip install" in str(s.get("run", "")) and "vkbench-" in str(s.get("run", ""))
                                     for s in steps), (wf.name, job_id)
            if "./.github/actions/install-vkbench" in uses:
                users += 1
                assert uses.index("./.github/actions/install-vkbench") > 0 and uses[0].startswith("actions/checkout@"), (wf.name, job_id)
    assert users >= 10
    action = yaml.safe_load((REPO / ".github/actions/install-vkbench/action.yml").read_text())
    assert action["runs"]["using"] == "composite"

    # The rules read the action: an unpinned `uses:` in it, or a missing action, is a violation.
    wfdir, actdir = tmp_path / ".github" / "workflows", tmp_path / ".github" / "actions" / "setup"
    wfdir.mkdir(parents=True)
    actdir.mkdir(parents=True)
    (wfdir / "w.yml").write_text(
        "on: push\npermissions: {}\njobs:\n  j:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: ./.github/actions/setup\n      - uses: ./.github/actions/missing\n")
    (actdir / "action.yml").write_text(
        "name: s\nruns:\n  using: composite\n  steps:\n    - uses: actions/setup-python@v6\n"
        "    - shell: bash\n      run: echo ${{ github.event.pull_request.title }}\n")
    found = {(v.rule, v.message.split(":")[0]) for v in check_dir(wfdir)}
    assert ("pinned-uses", "actions/setup-python@v6") in found
    assert ("local-action", "./.github/actions/missing") in found
    assert any(v.rule == "run-interpolation" and v.file == "actions/setup/action.yml" for v in check_dir(wfdir))
