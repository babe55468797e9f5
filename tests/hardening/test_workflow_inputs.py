"""Hostile dispatch inputs against tools/ci/plan.sh: every one ends in an ::error:: that names
what is allowed, exit 2, no step output (nothing routed), no command executed, no traceback.

Runner classes come only from runners/classes.yaml; actionlint's label list must equal it."""

from __future__ import annotations

import os
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


def count_by_area() -> dict[str, int]:
    return {name: len(values) for name, values in HOSTILE.items()}


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
