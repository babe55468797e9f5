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

CANARY = "/tmp/vkbench-hostile-canary"       # created only if an input got executed
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




def run_plan(tmp_path: Path, **overrides: str) -> tuple[subprocess.CompletedProcess, str]:
    out = tmp_path / "github_output"
    out.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "VKBENCH_"))}
    env.update(VALID, GITHUB_ACTIONS="true", GITHUB_OUTPUT=str(out), GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"))
    env.update(overrides)
    proc = subprocess.run(["bash", str(PLAN)], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    return proc, out.read_text()


def test_valid_inputs_still_plan(tmp_path):
    proc, outputs = run_plan(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert outputs.startswith("matrix=") and '"runner":"cloud-x86"' in outputs


@pytest.mark.parametrize("name,value", CASES, ids=[f"{n[8:].lower()}-{i}" for i, (n, _) in enumerate(CASES)])
def test_hostile_input_is_refused(tmp_path, name, value):
    Path(CANARY).unlink(missing_ok=True)
    proc, outputs = run_plan(tmp_path, **{name: value})
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, text[-2000:]
    assert "::error" in proc.stdout
    assert "matrix=" not in outputs                     # nothing routed
    assert "Traceback" not in text and "Argument list too long" not in text
    assert not Path(CANARY).exists()                    # nothing executed
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
CELL = ['{"server":"$(touch /tmp/vkbench-hostile-canary)"}', '{"server":"`touch /tmp/vkbench-hostile-canary`"}',
        '{"a":1}\n{"b":2}', '{"a":"\'"}', '{"a":"x;y"}', '{"a":"x\\\\y"}', "not json", "::add-mask::x", "{" + HUGE + "}"]
# The trusted repository and its branch (repository variables, lib.sh ci_trusted_source): they
# decide which runs skip the reviewer, so a malformed value stops every run instead of matching.
TRUSTED_REPOSITORY = [SUBST, "http://github.com/valkey-io/valkey", "file:///srv/valkey.git", "https://evil.example/o/r",
                      "https://github.com/valkey-io/valkey\nhttps://github.com/someone/valkey", "https://github.com/o/r'", HUGE]
TRUSTED_BRANCH = [SUBST, "refs/pull/1/head", "-x", "a..b", "unstable\nmain", "unstable;id", HUGE]

# name -> [overrides]: each is one hostile case (PR cases clear the candidate, as a PR run does)
HOSTILE_AB = {
    "runner_class": [{"VKBENCH_MACHINE_CLASS": v} for v in RUNNER_CLASS],
    "repository": [{"VKBENCH_AB_REPOSITORY": v} for v in REPOSITORY],
    "base": [{"VKBENCH_AB_BASE": v} for v in REF],
    "candidate": [{"VKBENCH_AB_CANDIDATE": v} for v in REF],
    "pr": [{"VKBENCH_AB_PR": v, "VKBENCH_AB_CANDIDATE": ""} for v in ["1; id", SUBST, "1\n2", "0", "-1", "12345678", "1'", HUGE]]
          + [{"VKBENCH_AB_PR": "17", "VKBENCH_AB_CANDIDATE": "feature-x"}],
    "preset": [{"VKBENCH_AB_PRESET": v} for v in PRESET],
    "max_rounds": [{"VKBENCH_AB_MAX_ROUNDS": v} for v in ["1000", "3", SUBST, "20\n30", "1e3", "-5", "20'", HUGE]],
    "confirm": [{"VKBENCH_AB_CONFIRM": v} for v in [SUBST, "confirm-0123456789ab\nx", "confirm-xyz", "confirm-0123456789AB",
                                                     "confirm-0123456789ab'", "::add-mask::x", HUGE]],
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
}
SCRIPTS = {"ab.sh": (AB, VALID_AB, HOSTILE_AB), "bisect.sh": (BISECT, VALID_BISECT, HOSTILE_BISECT)}
CHECK_CASES = [(script, name, i) for script, (_, _, hostile) in SCRIPTS.items() for name, cases in hostile.items()
               for i in range(len(cases))]


def run_check(script: str, tmp_path: Path, overrides: dict[str, str]) -> subprocess.CompletedProcess:
    path, valid, _ = SCRIPTS[script]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "VKBENCH_"))}
    env.update(valid, GITHUB_ACTIONS="true", GITHUB_OUTPUT=str(tmp_path / "github_output"),
               GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"))
    env.update(overrides)
    return subprocess.run(["bash", str(path), "check"], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_valid_ab_and_bisect_inputs_pass_the_check(tmp_path, script):
    proc = run_check(script, tmp_path, {})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for runner_class in CLASSES["classes"]:
        assert run_check(script, tmp_path, {"VKBENCH_MACHINE_CLASS": runner_class}).returncode == 0


@pytest.mark.parametrize("script,name,i", CHECK_CASES, ids=[f"{s[:-3]}-{n}-{i}" for s, n, i in CHECK_CASES])
def test_hostile_ab_and_bisect_input_is_refused(tmp_path, script, name, i):
    Path(CANARY).unlink(missing_ok=True)
    overrides = SCRIPTS[script][2][name][i]
    proc = run_check(script, tmp_path, overrides)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, (overrides, text[-2000:])
    assert "::error" in proc.stdout
    assert "Traceback" not in text and "Argument list too long" not in text
    assert not Path(CANARY).exists()                    # nothing executed
    assert len(text) < 20_000                           # a huge value is not echoed back whole
    assert not (tmp_path / "github_output").exists() or (tmp_path / "github_output").read_text() == ""
    if name == "runner_class":
        assert all(c in proc.stdout for c in CLASSES["classes"]), "the error names the allowed classes"


UPSTREAM = "https://github.com/valkey-io/valkey"
FORK = "https://github.com/someone/valkey"
CONFIRM = {"VKBENCH_AB_BASE": "a" * 40, "VKBENCH_AB_CANDIDATE": "b" * 40, "VKBENCH_AB_CONFIRM": "confirm-0123456789ab"}
INCIDENT = {"VKBENCH_BISECT_GOOD": "a" * 40, "VKBENCH_BISECT_BAD": "b" * 40, "VKBENCH_BISECT_INCIDENT": "inc-0123456789ab",
            "VKBENCH_BISECT_ISSUE": "12"}
TRUSTED_CASES = [
    ("ab.sh", CONFIRM, "true"),                                                      # the nightly's confirmation
    ("ab.sh", {**CONFIRM, "VKBENCH_AB_CONFIRM": ""}, "false"),                       # any other A/B of upstream
    ("ab.sh", {**CONFIRM, "VKBENCH_AB_REPOSITORY": FORK}, "false"),                  # a fork's commits with confirm set
    ("ab.sh", {**CONFIRM, "VKBENCH_AB_REPOSITORY": UPSTREAM + ".git"}, "false"),     # exactly the variable, nothing like it
    ("ab.sh", {**CONFIRM, "VKBENCH_AB_REPOSITORY": UPSTREAM + "/x"}, "false"),
    ("ab.sh", {**CONFIRM, "VKBENCH_VALKEY_REPOSITORY": FORK}, "false"),              # the variable names another repository
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
    """A workflow that passes runner classes itself (nightly.yml calls benchmark.yml) names declared ones."""
    for workflow in sorted(WORKFLOWS.glob("*.yml")):
        for match in re.finditer(r"^\s*runner_classes?:\s*([a-z0-9,-]+)\s*$", workflow.read_text(), re.M):
            for runner in match.group(1).split(","):
                assert runner in CLASSES["classes"], f"{workflow.name}: {runner} is not declared in runners/classes.yaml"


def test_runner_class_reaches_the_check_step():
    """The check step gets runner_class (the value runs-on and the runner's concurrency group use)."""
    for name, script in (("ab.yml", "tools/ci/ab.sh check"), ("bisect.yml", "tools/ci/bisect.sh check")):
        jobs = yaml.safe_load((WORKFLOWS / name).read_text())["jobs"]
        steps = [s for s in jobs["inputs"]["steps"] if s.get("run") == script]
        assert steps and steps[0]["env"]["VKBENCH_MACHINE_CLASS"] == "${{ inputs.runner_class }}", name


def test_workflow_level_concurrency_takes_no_raw_dispatch_input():
    """A workflow-level group is evaluated before any job checked the inputs: an input may only
    appear JSON-quoted (toJSON) and guarded by the form its dispatcher uses (startsWith)."""
    for workflow in sorted(WORKFLOWS.glob("*.yml")):
        group = str((yaml.safe_load(workflow.read_text()).get("concurrency") or {}).get("group", ""))
        for name in set(re.findall(r"inputs\.([A-Za-z0-9_]+)", group)):
            uses = re.findall(rf"[A-Za-z]*\(?inputs\.{name}\b", group)
            assert all(u in (f"toJSON(inputs.{name}", f"startsWith(inputs.{name}") for u in uses), f"{workflow.name}: {group}"
            assert f"startsWith(inputs.{name}, " in group, f"{workflow.name}: {group}"


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
