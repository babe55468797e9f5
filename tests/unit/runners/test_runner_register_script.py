"""register-runner.sh against a fake GitHub API on loopback: what it sends, what it writes,
and that the credential shows up in no output."""

from __future__ import annotations

import json
import os
import stat
import subprocess

import pytest
from github_api_standin import FakeGitHub

from .conftest import SCRIPTS

TOKEN = "github_pat_FAKE0123456789abcdefSECRET"
JIT = "eyJmYWtlIjoiaml0In0="


@pytest.fixture
def api():
    """The one GitHub stand-in (tests/workflows/github_api_standin.py): registration endpoints, calls recorded."""
    with FakeGitHub(owner_repo="example-org/vkbench") as gh:
        gh.jit_config = JIT
        yield gh.url, gh


def register(tmp_path, api_url, *extra, token=TOKEN):
    runner_dir = tmp_path / "actions-runner"
    runner_dir.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "VKBENCH_GITHUB_TOKEN"}
    if token is not None:
        env["VKBENCH_GITHUB_TOKEN"] = token
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1"  # the fake API is local; never via a proxy
    return subprocess.run(
        [
            str(SCRIPTS / "register-runner.sh"),
            "--repo", "example-org/vkbench",
            "--labels", "self-hosted,pi-cm4,bench-server",
            "--name-prefix", "cm4-server",
            "--runner-dir", str(runner_dir),
            "--output", str(tmp_path / "run" / "jit.env"),
            "--state-dir", str(tmp_path / "state"),
            "--api-url", api_url,
            *extra,
        ],
        capture_output=True, text=True, timeout=60, env=env,
    )


def test_jit_registration_writes_the_config_for_the_unit(tmp_path, api):
    url, gh = api
    result = register(tmp_path, url)
    assert result.returncode == 0, result.stderr
    post = gh.calls[-1]
    assert post["method"] == "POST"
    assert post["path"] == "/repos/example-org/vkbench/actions/runners/generate-jitconfig"
    assert post["auth"] == f"Bearer {TOKEN}"
    assert post["body"]["labels"] == ["self-hosted", "pi-cm4", "bench-server"]
    assert post["body"]["runner_group_id"] == 1
    assert post["body"]["name"].startswith("cm4-server-")
    env_file = tmp_path / "run" / "jit.env"
    assert env_file.read_text() == f"ACTIONS_RUNNER_INPUT_JITCONFIG={JIT}\n"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o640
    assert (tmp_path / "state" / "last-runner-id").read_text().strip() == "42"
    assert TOKEN not in result.stdout + result.stderr
    assert JIT not in result.stdout + result.stderr


def test_next_registration_deletes_a_runner_that_never_ran_a_job(tmp_path, api):
    url, gh = api
    assert register(tmp_path, url).returncode == 0
    assert register(tmp_path, url).returncode == 0
    methods = [(r["method"], r["path"].rsplit("/", 1)[-1]) for r in gh.calls]
    assert methods == [("POST", "generate-jitconfig"), ("DELETE", "42"), ("POST", "generate-jitconfig")]


def test_token_mode_configures_an_ephemeral_runner_without_the_token_in_argv(tmp_path, api):
    url, _ = api
    runner_dir = tmp_path / "actions-runner"
    runner_dir.mkdir()
    log = tmp_path / "config-call.json"
    fake_config = runner_dir / "config.sh"
    # Records how it was called: argv, and whether the token came through the environment.
    fake_config.write_text(
        "#!/usr/bin/env bash\n"
        f"python3 -c 'import json,os,sys; json.dump({{\"argv\": sys.argv[1:], "
        f"\"token\": os.environ.get(\"ACTIONS_RUNNER_INPUT_TOKEN\")}}, open(\"{log}\", \"w\"))' \"$@\"\n"
    )
    fake_config.chmod(0o755)
    (runner_dir / ".runner").write_text("{}")  # left by a crash: must not block configuring
    result = register(tmp_path, url, "--mode", "token")
    assert result.returncode == 0, result.stderr
    call = json.loads(log.read_text())
    assert "--ephemeral" in call["argv"] and "--unattended" in call["argv"]
    assert call["argv"][call["argv"].index("--labels") + 1] == "self-hosted,pi-cm4,bench-server"
    assert call["argv"][call["argv"].index("--url") + 1].endswith("/example-org/vkbench")
    assert call["token"] == "AREGTOKEN123"
    assert "AREGTOKEN123" not in call["argv"]
    assert not (runner_dir / ".runner").exists()
    assert TOKEN not in result.stdout + result.stderr


def test_rejected_credential_fails_without_printing_it(tmp_path, api):
    url, gh = api
    gh.fail_all = 401
    result = register(tmp_path, url)
    assert result.returncode == 1
    assert "Bad credentials" in result.stderr
    assert TOKEN not in result.stdout + result.stderr
    assert not (tmp_path / "run" / "jit.env").exists()


def test_the_credential_can_come_from_a_root_only_file(tmp_path, api):
    url, gh = api
    token_file = tmp_path / "github-token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    result = register(tmp_path, url, "--token-file", str(token_file), token=None)
    assert result.returncode == 0, result.stderr
    assert gh.calls[-1]["auth"] == f"Bearer {TOKEN}"


def test_no_credential_is_an_error(tmp_path, api):
    url, gh = api
    result = register(tmp_path, url, token=None)
    assert result.returncode == 1
    assert "no credential" in result.stderr
    assert gh.calls == []
