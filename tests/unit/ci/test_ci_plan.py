"""vkbench ci plan (the benchmark workflow's plan job) and the CLI's own ::error:: annotations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_outcome import vk  # tests/cli_outcome.py

from vkbench.ci.actions import annotation

REPO = Path(__file__).resolve().parents[3]
CLASSES = REPO / "runners" / "classes.yaml"
VALID = {"VKBENCH_PRESET": "smoke", "VKBENCH_VERSIONS": "valkey:9.1.2", "VKBENCH_IO_THREADS": "1,2",
         "VKBENCH_TOPOLOGIES": "standalone", "VKBENCH_RUNNERS": "cloud-x86", "VKBENCH_REPETITIONS": "2"}


@pytest.fixture
def step(tmp_path, monkeypatch):
    """A GitHub Actions step's environment: output and summary files, only the given inputs."""
    for name in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS", *VALID):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "output"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))

    def run(**inputs: str) -> tuple[int, str, str, str]:
        for name, value in inputs.items():
            monkeypatch.setenv(name, value)
        code, text = vk("ci", "plan", "--runner-classes", CLASSES)
        read = lambda name: (tmp_path / name).read_text() if (tmp_path / name).exists() else ""  # noqa: E731
        return code, text, read("output"), read("summary.md")

    return run


def test_valid_inputs_give_the_matrix_the_cell_count_and_a_summary(step):
    code, text, outputs, summary = step(**VALID)
    assert code == 0, text
    lines = dict(line.split("=", 1) for line in outputs.splitlines())
    matrix = json.loads(lines["matrix"])
    assert {c["runner"] for c in matrix["include"]} == {"cloud-x86"}
    assert int(lines["cells"]) == len(matrix["include"]) > 0
    assert summary.startswith(f"### Benchmark plan: {lines['cells']} cells")
    assert "| `cloud-x86` | " in summary


@pytest.mark.parametrize("name,value,title", [
    ("VKBENCH_PRESET", "", "Invalid input preset"),
    ("VKBENCH_PRESET", "../../etc/passwd", "Invalid input preset"),
    ("VKBENCH_RUNNERS", "self-hosted", "Invalid input runner_classes"),
    ("VKBENCH_IO_THREADS", "1;id", "Invalid input io_threads"),
    ("VKBENCH_REPETITIONS", "x" * 10_000, "Invalid input repetitions"),
])
def test_a_refused_input_is_an_annotation_exit_2_and_no_output(step, name, value, title):
    code, text, outputs, _ = step(**{**VALID, name: value})
    assert code == 2
    assert f"::error title={title}::" in text
    assert outputs == ""
    assert len(text) < 3000          # the value is not echoed back


def test_a_preset_runner_outside_the_declared_classes_is_refused(step):
    code, text, outputs, _ = step(**{**VALID, "VKBENCH_RUNNERS": ""})     # smoke runs on 'local'
    assert code == 2 and "'local' is not declared" in text and "cloud-x86" in text
    assert outputs == ""


def test_too_many_cells_for_one_runner_class(step, monkeypatch):
    monkeypatch.setattr("vkbench.ci.plan.QUEUE_LIMIT", 1)
    code, text, outputs, _ = step(**VALID)
    assert code == 2 and "::error title=Too many cells for one runner class::" in text
    assert outputs == ""


def test_outside_actions_no_workflow_command_is_printed(step, monkeypatch):
    monkeypatch.setenv("GITHUB_ACTIONS", "false")
    code, text, _, _ = step(**{**VALID, "VKBENCH_TOOL": "sh"})
    assert code == 2 and "::" not in text and "error: tool has characters" in text


def test_any_command_error_is_annotated_under_actions(monkeypatch, tmp_path):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, text = vk("matrix", str(tmp_path / "missing.yaml"))
    assert code == 2
    assert "::error title=vkbench matrix failed (exit 2)::" in text


def test_annotations_cannot_be_split_or_retitled():
    line = annotation("error", "a: b, c", "one\r\ntwo %0A ::warning::x")
    assert line == "::error title=a%3A b%2C c::one%0D%0Atwo %250A ::warning::x"
    assert "\n" not in line


def test_nightly_counts_on_every_class_and_wall_clock_only_on_quiet_ones(step):
    """Issue 19: the nightly's instruction-count cells (unstable, built from source) run on every
    runner class, the GitHub-hosted one included, where its wall-clock cells are left out."""
    code, text, outputs, summary = step(VKBENCH_PRESET="nightly", VKBENCH_RUNNERS="pi-cm4,cloud-x86,github-hosted")
    assert code == 0, text
    lines = dict(line.split("=", 1) for line in outputs.splitlines())
    own, hosted = json.loads(lines["matrix"])["include"], json.loads(lines["hosted_matrix"])["include"]
    assert {c["runner"] for c in own} == {"pi-cm4", "cloud-x86"}
    counted = [c for c in own if json.loads(c["cell"]).get("instrument") == "instructions"]
    assert {c["runner"] for c in counted} == {"pi-cm4", "cloud-x86"}
    assert all(json.loads(c["cell"])["server"] == "valkey:unstable" for c in counted)
    assert len(hosted) == int(lines["hosted_cells"]) == len(counted) // 2 >= 1
    for entry in hosted:
        cell = json.loads(entry["cell"])
        assert entry["runner"] == "github-hosted" and entry["runs_on"] == "ubuntu-latest"
        assert cell["instrument"] == "instructions" and cell["server"] == "valkey:unstable"
        assert "instructions" in entry["name"]
    assert int(lines["cells"]) == len(own)
    assert "GitHub-hosted: 1 instruction-count cells" in summary and "wall-clock cells left out there" in summary


def test_a_wall_clock_preset_on_the_hosted_class_alone_is_an_empty_plan(step):
    code, text, outputs, _ = step(**{**VALID, "VKBENCH_RUNNERS": "github-hosted"})
    assert code == 2 and "The benchmark plan is empty" in text and outputs == ""


def test_hosted_classes_are_declared_apart_from_self_hosted_ones():
    from vkbench.matrix.runner_classes import load_hosted_classes, load_runner_classes

    classes, roles = load_runner_classes(CLASSES)
    hosted = load_hosted_classes(CLASSES)
    assert "github-hosted" in hosted and "github-hosted" not in classes       # never a self-hosted label
    assert hosted["github-hosted"]["runs_on"] == "ubuntu-latest" and hosted["github-hosted"]["arch"] == "x86_64"


def test_a_hosted_class_must_name_a_github_label(tmp_path):
    from vkbench.errors import ConfigError
    from vkbench.matrix.runner_classes import load_hosted_classes

    bad = tmp_path / "classes.yaml"
    bad.write_text("version: 1\nclasses: {cloud-x86: {arch: x86_64}}\nroles: []\nhosted: {gh: {runs_on: self-hosted}}\n")
    with pytest.raises(ConfigError, match="runs_on"):
        load_hosted_classes(bad)
