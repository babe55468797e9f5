"""Hostile dispatch inputs against the scripts that check them - tools/ci/plan.sh (benchmark.yml),
tools/ci/ab.sh check (ab.yml), tools/ci/bisect.sh check (bisect.yml): every one ends in an
::error:: that names what is allowed, exit 2, no step output (nothing routed), no command
executed, no traceback. The same for the repository variables naming the trusted repository,
and the `trusted` output (no reviewer) is true only for the nightly's own follow-ups of it.

Runner classes come only from runners/classes.yaml: actionlint's label list and every
workflow's runner-class choice list must equal it, and no workflow-level concurrency group
uses a dispatch input before it was checked."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
PLAN = REPO / "tools" / "ci" / "plan.sh"
CLASSES = yaml.safe_load((REPO / "runners" / "classes.yaml").read_text())

#: Where an executed input leaves its mark: the cases name this placeholder, and the helpers that
#: run a script put the test's own canary file (under tmp_path, see canary()) in its place.
CANARY = "@CANARY@"
SUBST = f"$(touch {CANARY})"
BACKTICK = f"`touch {CANARY}`"
HUGE = "a" * 100_000

VALID = {"VKBENCH_PRESET": "smoke", "VKBENCH_VERSIONS": "valkey:9.1.2", "VKBENCH_IO_THREADS": "1",
         "VKBENCH_TOPOLOGIES": "standalone", "VKBENCH_RUNNERS": "cloud-x86", "VKBENCH_REPETITIONS": "2"}

HOSTILE = {
    "VKBENCH_RUNNERS": [
        "self-hosted", "ubuntu-latest", "bench-server", "bench-client", "local", "gpu-box", "CLOUD-X86",
        "cloud-x86,self-hosted", "cloud-x86\nself-hosted", "cloud-x86 ", "cloud-x86;id", "cloud-x86,\"x\"",
        "cloud-x86,'x'", SUBST, BACKTICK, "${{ secrets.GITHUB_TOKEN }}", "::add-mask::x", HUGE, "-h", ",",
        "cloud-x86," * 40,
    ],
    "VKBENCH_PRESET": [
        "--help", "-h", "--version", "../../etc/passwd", "/etc/passwd", "smoke;id", "smoke\nnightly", SUBST,
        BACKTICK, "smoke'", 'smoke"', HUGE, "no-such-preset", " smoke",
    ],
    "VKBENCH_VERSIONS": [
        f"valkey:{SUBST}", "valkey:9.1.2\n::set-output name=matrix::x", "valkey:9.1.2,redis:'x'", HUGE,
        "postgres:16", "valkey:", "--help", ",".join(["valkey:9.1.2"] * 17),
    ],
    "VKBENCH_IO_THREADS": ["1;id", "-1", "1,2,99999999", HUGE, SUBST, "1\n2", "0x10", "１"],
    "VKBENCH_TOPOLOGIES": [
        "cluster:100000", "replication:5000", "cluster:33", "replication:9", "cluster:3:9", "cluster:0",
        SUBST, "standalone\nstandalone", HUGE, "cluster:３",
    ],
    "VKBENCH_TOOL": ["--help", "valkey-benchmark;id", "sh", SUBST, HUGE],
    "VKBENCH_REPETITIONS": ["0", "1000", "1e3", SUBST, "-1", "2\n3", HUGE],
}
CASES = [(name, value) for name, values in HOSTILE.items() for value in values]


def canary(tmp_path: Path) -> Path:
    """The file an executed input would create: this test's own, never a path another test shares."""
    return tmp_path / "canary"


def with_canary(tmp_path: Path, values: dict[str, str]) -> dict[str, str]:
    out = {name: value.replace(CANARY, str(canary(tmp_path))) for name, value in values.items()}
    assert not any(CANARY in value for value in out.values())
    return out


def test_the_canary_sees_an_executed_input(tmp_path):
    """The check the hostile cases rely on: an input that does get executed leaves the canary."""
    env = dict(os.environ, **with_canary(tmp_path, {"INPUT": SUBST, "INPUT2": BACKTICK}))
    subprocess.run(["bash", "-c", 'eval "echo $INPUT"'], env=env, check=True, timeout=30)
    assert canary(tmp_path).exists()
    canary(tmp_path).unlink()
    subprocess.run(["bash", "-c", 'eval "echo $INPUT2"'], env=env, check=True, timeout=30)
    assert canary(tmp_path).exists()


def run_plan(tmp_path: Path, **overrides: str) -> tuple[subprocess.CompletedProcess, str]:
    out = tmp_path / "github_output"
    out.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "VKBENCH_"))}
    env.update(VALID, GITHUB_ACTIONS="true", GITHUB_OUTPUT=str(out), GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"))
    env.update(with_canary(tmp_path, overrides))
    proc = subprocess.run(["bash", str(PLAN)], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    return proc, out.read_text()


def test_valid_inputs_still_plan(tmp_path):
    proc, outputs = run_plan(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert outputs.startswith("matrix=") and '"runner":"cloud-x86"' in outputs


@pytest.mark.parametrize("name,value", CASES, ids=[f"{n[8:].lower()}-{i}" for i, (n, _) in enumerate(CASES)])
def test_hostile_input_is_refused(tmp_path, name, value):
    proc, outputs = run_plan(tmp_path, **{name: value})
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, text[-2000:]
    assert "::error" in proc.stdout
    assert "matrix=" not in outputs                     # nothing routed
    assert "Traceback" not in text and "Argument list too long" not in text
    assert not canary(tmp_path).exists()                # nothing executed
    assert len(text) < 20_000                           # a huge value is not echoed back whole
    if name == "VKBENCH_RUNNERS":
        assert all(c in proc.stdout for c in CLASSES["classes"]), "the error names the allowed classes"


def test_runner_class_from_a_preset_is_checked_too(tmp_path):
    """A preset's own runners (no runner_classes input) go through the same allow-list."""
    proc, outputs = run_plan(tmp_path, VKBENCH_RUNNERS="")
    assert proc.returncode == 2 and "local" in proc.stdout and "cloud-x86" in proc.stdout   # smoke's runner is 'local'
    assert "matrix=" not in outputs


def test_actionlint_labels_are_the_declared_classes_and_roles():
    config = yaml.safe_load((REPO / ".github" / "actionlint.yaml").read_text())
    labels = config["self-hosted-runner"]["labels"]
    assert sorted(labels) == sorted([*CLASSES["classes"], *CLASSES["roles"]])
    assert len(labels) == len(set(labels))


# -- ab.yml and bisect.yml: tools/ci/ab.sh check, tools/ci/bisect.sh check ----------------------

AB = REPO / "tools" / "ci" / "ab.sh"
BISECT = REPO / "tools" / "ci" / "bisect.sh"
WORKFLOWS = REPO / ".github" / "workflows"

VALID_AB = {"VKBENCH_AB_REPOSITORY": "https://github.com/valkey-io/valkey", "VKBENCH_AB_BASE": "unstable",
            "VKBENCH_AB_CANDIDATE": "feature-x", "VKBENCH_AB_PR": "", "VKBENCH_AB_PRESET": "ab",
            "VKBENCH_AB_MAX_ROUNDS": "20", "VKBENCH_AB_CONFIRM": "", "VKBENCH_AB_CELL": "",
            "VKBENCH_MACHINE_CLASS": "cloud-x86"}
VALID_BISECT = {"VKBENCH_BISECT_REPOSITORY": "https://github.com/valkey-io/valkey", "VKBENCH_BISECT_GOOD": "c419524",
                "VKBENCH_BISECT_BAD": "unstable", "VKBENCH_BISECT_PRESET": "ab", "VKBENCH_BISECT_ISSUE": "",
                "VKBENCH_BISECT_INCIDENT": "", "VKBENCH_BISECT_CELL": "", "VKBENCH_MACHINE_CLASS": "cloud-x86"}

RUNNER_CLASS = [
    "self-hosted", "ubuntu-latest", "bench-server", "bench-client", "local", "gpu-box", "CLOUD-X86", "",
    "cloud-x86,self-hosted", "cloud-x86\nself-hosted", "cloud-x86 ", "cloud-x86;id", 'cloud-x86"', "cloud-x86'",
    SUBST, BACKTICK, "${{ secrets.GITHUB_TOKEN }}", "::add-mask::x", HUGE, "-h", "cloud-x８６",
]
REF = [SUBST, BACKTICK, "unstable\nmain", "a..b", "-x", "--upload-pack=touch /tmp/x", "main'", 'main"', "main;id", HUGE]
REPOSITORY = [
    f"https://github.com/{SUBST}/valkey", "https://github.com/o/r\nhttps://evil.example/x", "https://github.com/o/r'",
    'https://github.com/o/r"', "file:///etc", "https://evil.example/o/r", "http://github.com/o/r", "--upload-pack=x",
    "https://github.com/o/r/../../x;id", HUGE,
]
PRESET = ["--help", SUBST, BACKTICK, "ab\nnightly", "../ab", "ab'", 'ab"', HUGE]
CELL = ['{"server":"%s"}' % SUBST, '{"server":"%s"}' % BACKTICK,
        '{"a":1}\n{"b":2}', '{"a":"\'"}', '{"a":"x;y"}', '{"a":"x\\\\y"}', "not json", "::add-mask::x", "{" + HUGE + "}"]
# The trusted repository and its branch (repository variables, vkbench.ci.trust): they
# decide which runs skip the reviewer, so a malformed value stops every run instead of matching.
TRUSTED_REPOSITORY = [SUBST, "http://github.com/valkey-io/valkey", "file:///srv/valkey.git", "https://evil.example/o/r",
                      "https://github.com/valkey-io/valkey\nhttps://github.com/someone/valkey", "https://github.com/o/r'", HUGE]
TRUSTED_BRANCH = [SUBST, "refs/pull/1/head", "-x", "a..b", "unstable\nmain", "unstable;id", HUGE]
UPSTREAM = "https://github.com/valkey-io/valkey"      # the trusted repository (vkbench.ci.trust's default)
FORK = "https://github.com/someone/valkey"
SHA_A, SHA_B = "a" * 40, "b" * 40
# A repository other than the trusted one names commits by full SHA only: a branch, a tag or a
# short commit could move (or be made to collide) after the reviewer approved the run.
NOT_A_FULL_SHA = ["unstable", "v9.0.0", "c419524", "A" * 40, "a" * 41, "a" * 39, "refs/pull/1/head"]
UNTRUSTED_REPOSITORIES = [FORK, "https://gitlab.com/valkey-io/valkey", UPSTREAM + ".git", UPSTREAM + "/x"]

# name -> [overrides]: each is one hostile case (PR cases clear the candidate, as a PR run does)
HOSTILE_AB = {
    "runner_class": [{"VKBENCH_MACHINE_CLASS": v} for v in RUNNER_CLASS],
    "repository": [{"VKBENCH_AB_REPOSITORY": v} for v in REPOSITORY],
    "base": [{"VKBENCH_AB_BASE": v} for v in REF],
    "candidate": [{"VKBENCH_AB_CANDIDATE": v} for v in REF],
    "pr": [{"VKBENCH_AB_PR": v, "VKBENCH_AB_CANDIDATE": SHA_B} for v in ["1; id", SUBST, "1\n2", "0", "-1", "12345678", "1'", HUGE]],
    # A pull request runs only the head the reviewer approved: its full SHA, whatever the repository.
    "pr_head": [{"VKBENCH_AB_PR": "17", "VKBENCH_AB_CANDIDATE": v} for v in ["", "feature-x", *NOT_A_FULL_SHA]]
               + [{"VKBENCH_AB_REPOSITORY": FORK, "VKBENCH_AB_BASE": SHA_A, "VKBENCH_AB_PR": "17", "VKBENCH_AB_CANDIDATE": ""}],
    "untrusted_refs": [{"VKBENCH_AB_REPOSITORY": FORK, "VKBENCH_AB_BASE": v, "VKBENCH_AB_CANDIDATE": SHA_B} for v in NOT_A_FULL_SHA]
                      + [{"VKBENCH_AB_REPOSITORY": FORK, "VKBENCH_AB_BASE": SHA_A, "VKBENCH_AB_CANDIDATE": v} for v in NOT_A_FULL_SHA]
                      + [{"VKBENCH_AB_REPOSITORY": r, "VKBENCH_AB_BASE": "unstable", "VKBENCH_AB_CANDIDATE": SHA_B}
                         for r in UNTRUSTED_REPOSITORIES]
                      + [{"VKBENCH_AB_REPOSITORY": FORK, "VKBENCH_AB_BASE": "unstable", "VKBENCH_AB_PR": "17", "VKBENCH_AB_CANDIDATE": SHA_B},
                         {"VKBENCH_VALKEY_REPOSITORY": FORK}],     # upstream's branches, upstream no longer trusted
    "preset": [{"VKBENCH_AB_PRESET": v} for v in PRESET],
    "max_rounds": [{"VKBENCH_AB_MAX_ROUNDS": v} for v in ["1000", "3", SUBST, "20\n30", "1e3", "-5", "20'", HUGE]],
    "confirm": [{"VKBENCH_AB_CONFIRM": v} for v in [SUBST, "confirm-0123456789ab\nx", "confirm-xyz", "confirm-0123456789AB",
                                                     "confirm-0123456789ab'", "::add-mask::x", HUGE]],
    # A confirmation's verdict goes into the history: only for commits of the trusted repository.
    "confirm_untrusted": [{"VKBENCH_AB_CONFIRM": "confirm-0123456789ab", "VKBENCH_AB_BASE": SHA_A, "VKBENCH_AB_CANDIDATE": SHA_B,
                           "VKBENCH_AB_REPOSITORY": r} for r in UNTRUSTED_REPOSITORIES]
                         + [{"VKBENCH_AB_CONFIRM": "confirm-0123456789ab", "VKBENCH_AB_BASE": SHA_A, "VKBENCH_AB_CANDIDATE": SHA_B,
                             "VKBENCH_VALKEY_REPOSITORY": FORK}],
    "cell": [{"VKBENCH_AB_CELL": v} for v in CELL],
    "trusted_repository": [{"VKBENCH_VALKEY_REPOSITORY": v} for v in TRUSTED_REPOSITORY],
    "trusted_branch": [{"VKBENCH_VALKEY_BRANCH": v} for v in TRUSTED_BRANCH],
}
HOSTILE_BISECT = {
    "runner_class": [{"VKBENCH_MACHINE_CLASS": v} for v in RUNNER_CLASS],
    "repository": [{"VKBENCH_BISECT_REPOSITORY": v} for v in REPOSITORY],
    "good": [{"VKBENCH_BISECT_GOOD": v} for v in REF],
    "bad": [{"VKBENCH_BISECT_BAD": v} for v in REF],
    "preset": [{"VKBENCH_BISECT_PRESET": v} for v in PRESET],
    "incident_issue": [{"VKBENCH_BISECT_ISSUE": v} for v in ["x", SUBST, "1\n2", "0", "-3", "1;id", HUGE]],
    # The incident id keys the culprit in the history (the issue is set, so only the id is wrong),
    # and an incident without its issue is not the nightly's form.
    "incident": [{"VKBENCH_BISECT_INCIDENT": v, "VKBENCH_BISECT_ISSUE": "5"}
                 for v in [SUBST, BACKTICK, "0123456789ab\nx", "0123456789AB", "inc-xyz", "inc-0123456789ab0", "../0123456789ab",
                           "0123456789ab'", "::add-mask::x", "-0123456789ab", HUGE]]
                + [{"VKBENCH_BISECT_INCIDENT": "0123456789ab", "VKBENCH_BISECT_ISSUE": ""}],
    "cell": [{"VKBENCH_BISECT_CELL": v} for v in CELL],
    "trusted_repository": [{"VKBENCH_VALKEY_REPOSITORY": v} for v in TRUSTED_REPOSITORY],
    "trusted_branch": [{"VKBENCH_VALKEY_BRANCH": v} for v in TRUSTED_BRANCH],
    "untrusted_refs": [{"VKBENCH_BISECT_REPOSITORY": FORK, "VKBENCH_BISECT_GOOD": v, "VKBENCH_BISECT_BAD": SHA_B} for v in NOT_A_FULL_SHA]
                      + [{"VKBENCH_BISECT_REPOSITORY": FORK, "VKBENCH_BISECT_GOOD": SHA_A, "VKBENCH_BISECT_BAD": v} for v in NOT_A_FULL_SHA]
                      + [{"VKBENCH_BISECT_REPOSITORY": r, "VKBENCH_BISECT_GOOD": SHA_A, "VKBENCH_BISECT_BAD": "unstable"}
                         for r in UNTRUSTED_REPOSITORIES]
                      + [{"VKBENCH_VALKEY_REPOSITORY": FORK}],     # upstream's branch, upstream no longer trusted
}
SCRIPTS = {"ab.sh": (AB, VALID_AB, HOSTILE_AB), "bisect.sh": (BISECT, VALID_BISECT, HOSTILE_BISECT)}
CHECK_CASES = [(script, name, i) for script, (_, _, hostile) in SCRIPTS.items() for name, cases in hostile.items()
               for i in range(len(cases))]


def run_check(script: str, tmp_path: Path, overrides: dict[str, str]) -> subprocess.CompletedProcess:
    path, valid, _ = SCRIPTS[script]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "VKBENCH_"))}
    env.update(valid, GITHUB_ACTIONS="true", GITHUB_OUTPUT=str(tmp_path / "github_output"),
               GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"))
    env.update(with_canary(tmp_path, overrides))
    return subprocess.run(["bash", str(path), "check"], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_valid_ab_and_bisect_inputs_pass_the_check(tmp_path, script):
    proc = run_check(script, tmp_path, {})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for runner_class in CLASSES["classes"]:
        assert run_check(script, tmp_path, {"VKBENCH_MACHINE_CLASS": runner_class}).returncode == 0


@pytest.mark.parametrize("script,name,i", CHECK_CASES, ids=[f"{s[:-3]}-{n}-{i}" for s, n, i in CHECK_CASES])
def test_hostile_ab_and_bisect_input_is_refused(tmp_path, script, name, i):
    overrides = SCRIPTS[script][2][name][i]
    proc = run_check(script, tmp_path, overrides)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, (overrides, text[-2000:])
    assert "::error" in proc.stdout
    assert "Traceback" not in text and "Argument list too long" not in text
    assert not canary(tmp_path).exists()                # nothing executed
    assert len(text) < 20_000                           # a huge value is not echoed back whole
    for written in ("github_output", "summary.md"):     # nothing routed, nothing offered for approval
        assert not (tmp_path / written).exists() or (tmp_path / written).read_text() == "", written
    if name == "runner_class":
        assert all(c in proc.stdout for c in CLASSES["classes"]), "the error names the allowed classes"


CONFIRM = {"VKBENCH_AB_BASE": SHA_A, "VKBENCH_AB_CANDIDATE": SHA_B, "VKBENCH_AB_CONFIRM": "confirm-0123456789ab"}
INCIDENT = {"VKBENCH_BISECT_GOOD": SHA_A, "VKBENCH_BISECT_BAD": SHA_B, "VKBENCH_BISECT_INCIDENT": "inc-0123456789ab",
            "VKBENCH_BISECT_ISSUE": "12"}
# (confirm with any other repository than the variable's is refused: HOSTILE_AB["confirm_untrusted"])
TRUSTED_CASES = [
    ("ab.sh", CONFIRM, "true"),                                                      # the nightly's confirmation
    ("ab.sh", {**CONFIRM, "VKBENCH_AB_CONFIRM": ""}, "false"),                       # any other A/B of upstream
    ("ab.sh", {**CONFIRM, "VKBENCH_AB_CONFIRM": "", "VKBENCH_AB_REPOSITORY": FORK}, "false"),     # a fork's commits
    ("ab.sh", {**CONFIRM, "VKBENCH_AB_CONFIRM": "", "VKBENCH_AB_PR": "17"}, "false"),               # a pull request
    ("ab.sh", {**CONFIRM, "VKBENCH_VALKEY_REPOSITORY": FORK, "VKBENCH_AB_REPOSITORY": FORK}, "true"),
    ("bisect.sh", INCIDENT, "true"),                                                 # the nightly's bisect of an incident
    ("bisect.sh", {**INCIDENT, "VKBENCH_BISECT_INCIDENT": "", "VKBENCH_BISECT_ISSUE": ""}, "false"),   # a manual bisect
    ("bisect.sh", {**INCIDENT, "VKBENCH_BISECT_INCIDENT": ""}, "false"),             # an issue to comment on only
    ("bisect.sh", {**INCIDENT, "VKBENCH_BISECT_REPOSITORY": FORK}, "false"),
    ("bisect.sh", {**INCIDENT, "VKBENCH_BISECT_REPOSITORY": "https://gitlab.com/valkey-io/valkey"}, "false"),
]


@pytest.mark.parametrize("script,overrides,trusted", TRUSTED_CASES, ids=[f"{s[:-3]}-{i}" for i, (s, _, _) in enumerate(TRUSTED_CASES)])
def test_trusted_only_for_the_nightlys_follow_ups_of_the_trusted_repository(tmp_path, script, overrides, trusted):
    """The `trusted` output (the environment without reviewers) is true only for a confirmation (ab)
    or an incident's bisect (bisect) whose repository is exactly VKBENCH_VALKEY_REPOSITORY."""
    proc = run_check(script, tmp_path, overrides)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "github_output").read_text() == f"trusted={trusted}\n"


SUMMARY_CASES = [
    # a fork's two commits: both SHAs, the repository escaped (its _ would start emphasis)
    ("ab.sh", {"VKBENCH_AB_REPOSITORY": "https://github.com/some_one/valkey", "VKBENCH_AB_BASE": SHA_A, "VKBENCH_AB_CANDIDATE": SHA_B},
     ["| repository | https://github.com/some\\_one/valkey |", f"| base | commit {SHA_A} |", f"| candidate | commit {SHA_B} |"]),
    # a pull request: its number and the approved head
    ("ab.sh", {"VKBENCH_AB_REPOSITORY": FORK, "VKBENCH_AB_BASE": SHA_A, "VKBENCH_AB_PR": "17", "VKBENCH_AB_CANDIDATE": SHA_B},
     [f"| base | commit {SHA_A} |", f"| candidate | pull request #17 at commit {SHA_B} (refused if its head moved) |"]),
    # the trusted repository may name a branch: said so
    ("ab.sh", {}, ["| base | unstable of the trusted repository (its tip when the job starts) |",
                   "| candidate | feature-x of the trusted repository (its tip when the job starts) |"]),
    ("ab.sh", CONFIRM, [f"| base | commit {SHA_A} |", "Trusted: the confirmation confirm-0123456789ab of two commits"]),
    ("bisect.sh", {"VKBENCH_BISECT_REPOSITORY": FORK, "VKBENCH_BISECT_GOOD": SHA_A, "VKBENCH_BISECT_BAD": SHA_B},
     [f"| repository | {FORK} |", f"| good | commit {SHA_A} |", f"| bad | commit {SHA_B} |"]),
    ("bisect.sh", INCIDENT, [f"| good | commit {SHA_A} |", "Trusted: the bisect of incident inc-0123456789ab"]),
]


@pytest.mark.parametrize("script,overrides,lines", SUMMARY_CASES, ids=[f"{s[:-3]}-{i}" for i, (s, _, _) in enumerate(SUMMARY_CASES)])
def test_the_check_shows_the_reviewer_what_will_be_built(tmp_path, script, overrides, lines):
    """The inputs job's summary (on the run page, where a reviewer of `benchmark` approves) names
    exactly the commits the self-hosted job will build."""
    proc = run_check(script, tmp_path, overrides)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("## A/B to approve" if script == "ab.sh" else "## Bisect to approve"), summary
    for line in lines:
        assert line in summary, (line, summary)


def test_summary_text_is_inert_markdown():
    """The check's summary escapes every value with vkbench.markdown.text (the inputs jobs run the
    checkout's vkbench, so there is no second escaper in shell): a value cannot open a link, an
    image, a tag, a code span, emphasis or a table cell, nor start a line of its own."""
    from vkbench import markdown as md

    value = "[x](javascript:alert(1)) <img src=x onerror=alert(1)> `code` | pipe *b* _i_ ~s~\n# heading\r\\"
    assert md.text(value) == ("\\[x\\](javascript:alert(1)) \\<img src=x onerror=alert(1)\\> \\`code\\` \\| pipe "
                              "\\*b\\* \\_i\\_ \\~s\\~ # heading \\\\")
    assert md.text(HUGE) == "a" * 299 + "…"


def dispatch_inputs(workflow: Path) -> dict:
    data = yaml.safe_load(workflow.read_text())
    on = data.get("on", data.get(True)) or {}
    return ((on.get("workflow_dispatch") or {}) if isinstance(on, dict) else {}).get("inputs") or {}


def test_every_runner_class_choice_list_is_the_declared_classes():
    """ab.yml and bisect.yml offer runner_class as a choice; the list must be runners/classes.yaml's."""
    declared = sorted(CLASSES["classes"])
    seen = []
    for workflow in sorted(WORKFLOWS.glob("*.yml")):
        for name, spec in dispatch_inputs(workflow).items():
            if "runner" in name and spec.get("type") == "choice":
                assert sorted(spec["options"]) == declared, f"{workflow.name}: {name}: {spec['options']} != {declared}"
                assert spec.get("default") in declared
                seen.append(f"{workflow.name}:{name}")
    assert {"ab.yml:runner_class", "bisect.yml:runner_class"} <= set(seen)


def test_runner_classes_named_in_workflows_are_declared():
    """A workflow that passes runner classes itself (nightly.yml calls benchmark.yml) names declared ones:
    self-hosted classes, or hosted ones (issue 19: github-hosted, instruction counts only)."""
    declared = set(CLASSES["classes"]) | set(CLASSES.get("hosted") or {})
    for workflow in sorted(WORKFLOWS.glob("*.yml")):
        for match in re.finditer(r"^\s*runner_classes?:\s*([a-z0-9,-]+)\s*$", workflow.read_text(), re.M):
            for runner in match.group(1).split(","):
                assert runner in declared, f"{workflow.name}: {runner} is not declared in runners/classes.yaml"


def test_runner_class_reaches_the_check_step():
    """The check step gets runner_class (the value runs-on and the runner's concurrency group use)."""
    for name, script in (("ab.yml", "tools/ci/ab.sh check"), ("bisect.yml", "tools/ci/bisect.sh check")):
        jobs = yaml.safe_load((WORKFLOWS / name).read_text())["jobs"]
        steps = [s for s in jobs["inputs"]["steps"] if s.get("run") == script]
        assert steps and steps[0]["env"]["VKBENCH_MACHINE_CLASS"] == "${{ inputs.runner_class }}", name


def test_workflow_level_concurrency_takes_no_raw_dispatch_input():
    """A workflow-level group is evaluated before any job checked the inputs: an input may only
    appear JSON-quoted (toJSON), guarded by the form its dispatcher uses (startsWith) or, where no
    prefix tells that form (an incident id is 12 hex or inc-<12 hex>), by being set (!= '')."""
    keyed = {}
    for workflow in sorted(WORKFLOWS.glob("*.yml")):
        group = str((yaml.safe_load(workflow.read_text()).get("concurrency") or {}).get("group", ""))
        for name in set(re.findall(r"inputs\.([A-Za-z0-9_]+)", group)):
            uses = re.findall(rf"[A-Za-z]*\(?inputs\.{name}\b(?: != '')?", group)
            guards = (f"startsWith(inputs.{name}", f"inputs.{name} != ''")
            assert all(u in (f"toJSON(inputs.{name}", *guards) for u in uses), f"{workflow.name}: {group}"
            assert f"toJSON(inputs.{name})" in group and any(g in group for g in guards), f"{workflow.name}: {group}"
            keyed[workflow.name] = name
    # a re-dispatched confirmation or incident bisect waits for the first instead of running twice
    assert keyed == {"ab.yml": "confirm", "bisect.yml": "incident"}, keyed


def test_hostile_case_counts(tmp_path_factory, capsys):
    """The hardening note's figures for dispatch inputs: cases by script. Each case is asserted
    by the tests above (exit 2, ::error::, nothing executed, no traceback); this test pins the
    least number of cases per script, so a list cannot shrink unnoticed."""
    counts = {"benchmark.yml inputs (plan.sh)": len(CASES),
              **{f"{script.replace('.sh', '.yml')} inputs ({script} check)": sum(len(v) for v in SCRIPTS[script][2].values())
                 for script in SCRIPTS}}
    minimum = {"benchmark.yml inputs (plan.sh)": 70, "ab.yml inputs (ab.sh check)": 100, "bisect.yml inputs (bisect.sh check)": 100}
    with capsys.disabled():
        print()
        for area, n in counts.items():
            print(f"hostile cases, {area}: {n}")
    for area, least in minimum.items():
        assert counts[area] >= least, f"{area}: {counts[area]} cases, at least {least} expected"
