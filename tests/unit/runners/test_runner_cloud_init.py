"""cloud-init user data validates with cloud-init's own schema and embeds the current bootstrap."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from .conftest import REPO, RUNNERS, SCRIPTS, load_yaml

CLOUD_INIT = REPO / ".cache" / "lint-tools" / "bin" / "cloud-init"
USER_DATA = sorted((RUNNERS / "cloud-init").glob("*.yaml"))
BOOTSTRAP_PATH = "/usr/local/sbin/vkbench-bootstrap"


def cloud_init_schema(path: Path) -> subprocess.CompletedProcess:
    if not CLOUD_INIT.exists():
        pytest.fail(f"{CLOUD_INIT} missing: run tools/setup/lint-tools.sh")
    return subprocess.run(
        [str(CLOUD_INIT), "schema", "--config-file", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_there_is_user_data_for_each_cloud_class():
    assert {p.name for p in USER_DATA} == {"cloud-x86.yaml", "cloud-arm64.yaml"}


@pytest.mark.parametrize("path", USER_DATA, ids=lambda p: p.name)
def test_user_data_passes_cloud_init_schema(path):
    assert path.read_text().startswith("#cloud-config\n")
    result = cloud_init_schema(path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Valid cloud-config" in result.stdout


def test_schema_check_rejects_a_broken_file(tmp_path):
    # Guards against a validator that says yes to everything.
    broken = tmp_path / "broken.yaml"
    broken.write_text("#cloud-config\nwrite_files:\n  - path: /x\n    permissions: 0644\n")
    result = cloud_init_schema(broken)
    assert result.returncode != 0
    assert "permissions" in result.stdout + result.stderr


@pytest.mark.parametrize("path", USER_DATA, ids=lambda p: p.name)
def test_user_data_embeds_the_current_bootstrap_script(path):
    files = {f["path"]: f for f in load_yaml(path)["write_files"]}
    embedded = files[BOOTSTRAP_PATH]["content"]
    assert embedded == (SCRIPTS / "cloud-bootstrap.sh").read_text(), (
        f"{path.name} embeds an old copy of runners/scripts/cloud-bootstrap.sh: paste the current one"
    )
    assert load_yaml(path)["runcmd"] == [[BOOTSTRAP_PATH]]


@pytest.mark.parametrize("path", USER_DATA, ids=lambda p: p.name)
def test_user_data_puts_localhost_in_its_class_group_and_carries_no_credential(path):
    group = path.stem.replace("-", "_")  # cloud-x86 -> cloud_x86
    files = {f["path"]: f for f in load_yaml(path)["write_files"]}
    inventory = yaml.safe_load(files["/etc/vkbench-runner/inventory.yml"]["content"])
    assert "localhost" in inventory["all"]["children"][group]["hosts"]
    text = path.read_text()
    assert "VKBENCH_GITHUB_TOKEN" not in text
    assert "github-token" not in text
    assert "VKBENCH_COMMIT=" in files["/etc/vkbench-runner/bootstrap.env"]["content"]

