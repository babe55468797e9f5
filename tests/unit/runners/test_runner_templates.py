"""The role templates rendered by Ansible for each example host: the units and hook wrappers
come out as intended (labels per host, registration flags) and the hook wrappers pass shellcheck."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO, ROLES, RUNNERS, venv_tool

HERE = Path(__file__).resolve().parent
HOSTS = ["cm4-server", "cm4-client", "bench-x86-1", "bench-arm64-1"]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    """A directory per example host holding its rendered templates (.j2 dropped)."""
    out = tmp_path_factory.mktemp("rendered")
    extra_vars = {
        "render_dir": str(out),
        "templates": sorted(str(p) for p in ROLES.glob("*/templates/*.j2")),
        "ansible_python_interpreter": sys.executable,
    }
    result = subprocess.run(
        [
            venv_tool("ansible-playbook"),
            "-i", str(RUNNERS / "inventory.example.yml"),
            str(HERE / "render-templates.yml"),
            "-e", json.dumps(extra_vars),
        ],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "ANSIBLE_ROLES_PATH": str(ROLES), "VKBENCH_GITHUB_TOKEN": ""},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for host in HOSTS:
        (out / host).mkdir()
        for name, text in json.loads((out / f"{host}.json").read_text()).items():
            (out / host / name.removesuffix(".j2")).write_text(text)
    return out


def unit(rendered: Path, host: str) -> str:
    return (rendered / host / "vkbench-runner.service").read_text()


def exec_start_pre_register(text: str) -> list[str]:
    line = next(l for l in text.splitlines() if "register-runner.sh" in l and l.startswith("ExecStartPre=+"))
    return line.split()


@pytest.mark.parametrize(
    ("host", "labels"),
    [
        ("cm4-server", "self-hosted,pi-cm4,bench-server"),
        ("cm4-client", "self-hosted,pi-cm4,bench-client"),
        ("bench-x86-1", "self-hosted,cloud-x86,bench-client"),
        ("bench-arm64-1", "self-hosted,cloud-arm64,bench-client"),
    ],
)
def test_each_host_registers_with_its_labels(rendered, host, labels):
    argv = exec_start_pre_register(unit(rendered, host))
    assert argv[argv.index("--labels") + 1] == labels
    assert argv[argv.index("--repo") + 1] == "example-org/vkbench"
    assert argv[argv.index("--mode") + 1] == "jit"
    assert argv[argv.index("--token-file") + 1] == "/etc/vkbench-runner/github-token"
    assert argv[argv.index("--name-prefix") + 1] == host


def test_hooks_are_wired_into_the_runner(rendered):
    text = unit(rendered, "cm4-client")
    assert "Environment=ACTIONS_RUNNER_HOOK_JOB_STARTED=/opt/vkbench-runner/bin/job-started-hook.sh" in text
    assert "Environment=ACTIONS_RUNNER_HOOK_JOB_COMPLETED=/opt/vkbench-runner/bin/job-completed-hook.sh" in text
    assert "User=vkbench-runner" in text
    assert "Environment=VKBENCH_PRIVATE_ADDRESS=192.0.2.11" in text
    assert "VKBENCH_PRIVATE_ADDRESS" not in unit(rendered, "bench-x86-1")


def test_tuning_unit_applies_each_setting(rendered):
    text = (rendered / "cm4-server" / "vkbench-bench-tuning.service").read_text()
    for expected in (
        "set-cpufreq-governor.sh --governor performance",
        "set-thp.sh --mode never",
        "set-irq-affinity.sh --cpus 0",
        "disable-swap.sh",
    ):
        assert expected in text


def test_rendered_hook_wrappers_pass_shellcheck(rendered):
    wrappers = sorted(rendered.glob("*/*-hook.sh"))
    assert {w.name for w in wrappers} >= {"pi-throttling-hook.sh", "cleanup-hook.sh", "quiet-check-hook.sh"}
    result = subprocess.run([venv_tool("shellcheck"), *map(str, wrappers)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
