"""vkbench ci inputs / ci run (ab.yml's and bisect.yml's inputs) and the trust policy (vkbench.ci.trust).

The hostile-input matrix runs through tools/ci/ab.sh and bisect.sh in
tests/hardening/test_workflow_inputs.py; these are the library's own cases, in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_outcome import vk  # tests/cli_outcome.py

from vkbench.ci import trust
from vkbench.ci.actions import InvalidInput
from vkbench.ci.inputs import ab_argv, check_ab, check_bisect

REPO = Path(__file__).resolve().parents[3]
CLASSES_FILE = REPO / "runners" / "classes.yaml"
CLASSES = ["cloud-arm64", "cloud-x86", "pi-cm4"]
UPSTREAM = trust.DEFAULT_REPOSITORY
FORK = "https://github.com/someone/valkey"
A, B = "a" * 40, "b" * 40
AB = {"VKBENCH_AB_REPOSITORY": UPSTREAM, "VKBENCH_AB_BASE": "unstable", "VKBENCH_AB_CANDIDATE": "feature-x",
      "VKBENCH_MACHINE_CLASS": "cloud-x86"}
BISECT = {"VKBENCH_BISECT_REPOSITORY": UPSTREAM, "VKBENCH_BISECT_GOOD": A, "VKBENCH_BISECT_BAD": B,
          "VKBENCH_BISECT_INCIDENT": "inc-0123456789ab", "VKBENCH_BISECT_ISSUE": "12", "VKBENCH_MACHINE_CLASS": "pi-cm4"}


@pytest.mark.parametrize("url,ok", [
    (UPSTREAM, True), ("https://gitlab.com/group/sub/valkey", True), ("http://github.com/o/r", False),
    ("https://github.com/o", False), ("https://evil.example/o/r", False), (UPSTREAM + "\n", False),
    ("https://github.com/" + "o" * 300 + "/r", False), ("https://github.com/o/r;id", False),
])
def test_one_repository_url_pattern(url, ok):
    assert trust.is_repository_url(url) is ok


def test_the_trusted_source_comes_from_the_variables_else_upstream():
    assert trust.trusted_source({}) == trust.TrustedSource(UPSTREAM, "unstable")
    assert trust.trusted_source({"VKBENCH_VALKEY_REPOSITORY": FORK, "VKBENCH_VALKEY_BRANCH": "main"}) == trust.TrustedSource(FORK, "main")
    for bad in ({"VKBENCH_VALKEY_REPOSITORY": "file:///srv/v.git"}, {"VKBENCH_VALKEY_BRANCH": "refs/pull/1/head"},
                {"VKBENCH_VALKEY_BRANCH": "a..b"}):
        with pytest.raises(InvalidInput) as info:
            trust.trusted_source(bad)
        assert info.value.title.startswith("Invalid variable VKBENCH_VALKEY_")


def test_only_the_trusted_repository_may_name_refs():
    source = trust.trusted_source({})
    trust.check_commit("base", "unstable", UPSTREAM, source)
    trust.check_commit("base", A, FORK, source)
    with pytest.raises(InvalidInput, match="full 40-hex SHA"):
        trust.check_commit("base", "unstable", FORK, source)
    with pytest.raises(InvalidInput, match="branch, tag or commit"):
        trust.check_commit("base", "-x", UPSTREAM, source)


def test_trusted_only_for_a_follow_up_of_the_trusted_repository():
    assert check_ab({**AB, "VKBENCH_AB_BASE": A, "VKBENCH_AB_CANDIDATE": B, "VKBENCH_AB_CONFIRM": "confirm-0123456789ab"}, CLASSES).trusted
    assert not check_ab(AB, CLASSES).trusted
    assert check_bisect(BISECT, CLASSES).trusted
    assert not check_bisect({**BISECT, "VKBENCH_BISECT_INCIDENT": ""}, CLASSES).trusted
    assert not check_bisect({**BISECT, "VKBENCH_BISECT_REPOSITORY": FORK}, CLASSES).trusted


def test_the_ab_command_takes_the_checked_inputs_as_separate_arguments():
    argv = ab_argv(check_ab({**AB, "VKBENCH_AB_REPOSITORY": FORK, "VKBENCH_AB_BASE": A, "VKBENCH_AB_PR": "17",
                             "VKBENCH_AB_CANDIDATE": B, "VKBENCH_AB_CELL": '{"io_threads":4}'}, CLASSES), {})
    assert argv[:3] == ["ab", "--repo", FORK]
    assert argv[argv.index("--pr") + 1] == "17" and argv[argv.index("--pr-head") + 1] == B
    assert argv[argv.index("--cell") + 1] == '{"io_threads":4}' and "--require-branch" not in argv
    trusted = ab_argv(check_ab({**AB, "VKBENCH_VALKEY_BRANCH": "main"}, CLASSES), {"VKBENCH_AB_TRUSTED": "true"})
    assert trusted[trusted.index("--require-branch") + 1] == "main"


@pytest.fixture
def step(tmp_path, monkeypatch):
    for name in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "VKBENCH_VALKEY_REPOSITORY", "VKBENCH_VALKEY_BRANCH", *AB, *BISECT,
                 "VKBENCH_AB_PR", "VKBENCH_AB_CONFIRM", "VKBENCH_AB_CELL", "VKBENCH_BISECT_CELL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "output"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))

    def run(*args: str, **env: str) -> tuple[int, str, str, str]:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        code, text = vk("ci", *args, "--runner-classes", CLASSES_FILE)
        read = lambda name: (tmp_path / name).read_text() if (tmp_path / name).exists() else ""  # noqa: E731
        return code, text, read("output"), read("summary.md")

    return run


def test_inputs_writes_trusted_and_the_summary_to_approve(step):
    code, text, output, summary = step("inputs", "bisect", **BISECT)
    assert code == 0, text
    assert output == "trusted=true\n"
    assert summary.startswith("## Bisect to approve") and f"| good | commit {A} |" in summary
    assert "::stop-commands::" in text           # the echoed inputs are inert


def test_a_refused_input_is_an_annotation_exit_2_and_nothing_written(step):
    code, text, output, summary = step("inputs", "ab", **{**AB, "VKBENCH_MACHINE_CLASS": "self-hosted"})
    assert code == 2
    assert "::error title=Invalid input runner_class::" in text and "cloud-x86" in text
    assert output == summary == ""


def test_run_prints_the_command_it_would_run(step):
    code, text, _, _ = step("run", "bisect", "--print-argv", **BISECT)
    assert code == 0, text
    argv = json.loads(text)
    assert argv[0] == "bisect" and argv[argv.index("--require-branch") + 1] == "unstable"
