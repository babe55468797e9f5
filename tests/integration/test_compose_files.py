"""`docker compose config` accepts every committed stack file (with a dummy password), refuses
one without VALKEY_PASSWORD, and interpolates the variables the way the docs say."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from vkbench.topology.compose_render import COMMITTED_TOPOLOGIES, stack_file_name
from vkbench.topology.model import Topology

pytestmark = pytest.mark.compose

REPO = Path(__file__).resolve().parents[2]
FILES = [REPO / "compose" / stack_file_name(Topology.parse(t)) for t in COMMITTED_TOPOLOGIES]
SETUP_HINT = "run tools/setup/containers.sh and source tools/containers-env.sh, or set DOCKER_HOST"


def compose_env(**variables: str) -> dict[str, str]:
    """The caller's environment plus DOCKER_CONFIG of tools/containers-env.sh (where the compose
    plugin is), minus every stack variable so only ``variables`` count."""
    env = {k: v for k, v in os.environ.items() if k not in
           ("VALKEY_PASSWORD", "VALKEY_IMAGE", "BASE_PORT", "BIND_ADDRESS", "SERVER_HOST", "IO_THREADS", "EXTRA_ARGS")}
    if "DOCKER_CONFIG" not in env:
        state = Path(env.get("VKBENCH_CONTAINERS_STATE", REPO / ".cache" / "containers"))
        env["DOCKER_CONFIG"] = str(state / "docker")
    return {**env, **variables}


def compose(file: Path, *args: str, **variables: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["docker", "compose", "-f", str(file), *args], env=compose_env(**variables),
                              capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        pytest.fail(f"the docker CLI is not on PATH\nhint: {SETUP_HINT}")


def unescape(text: str) -> str:
    """`config` prints a literal $ as $$ again (its output is a valid compose file)."""
    return text.replace("$$", "$")


@pytest.fixture(scope="module", autouse=True)
def compose_plugin():
    done = compose(FILES[0], "version")
    if done.returncode != 0:
        pytest.fail(f"docker compose (v2 plugin) is missing: {done.stderr.strip()}\nhint: {SETUP_HINT}")


@pytest.mark.parametrize("file", FILES, ids=lambda f: f.name)
def test_config_validates_with_a_dummy_password(file):
    done = compose(file, "--profile", "bench", "config", "--quiet", VALKEY_PASSWORD="dummy")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("file", FILES, ids=lambda f: f.name)
def test_config_refuses_a_missing_password(file):
    done = compose(file, "config", "--quiet")
    assert done.returncode != 0
    assert "VALKEY_PASSWORD" in done.stderr and "set VALKEY_PASSWORD" in done.stderr


def test_variables_reach_the_services():
    file = REPO / "compose" / "replication-1.yaml"
    done = compose(file, "config", "--format", "json", VALKEY_PASSWORD="dummy", VALKEY_IMAGE="example/valkey@sha256:00",
                   BASE_PORT="7000", BIND_ADDRESS="0.0.0.0", SERVER_HOST="192.0.2.7", IO_THREADS="4",
                   SERVER_CPUS="0-1", EXTRA_ARGS="--hz 100")
    assert done.returncode == 0, done.stderr
    services = json.loads(done.stdout)["services"]
    replica = services["replica-1"]
    script = unescape(replica["command"][0])
    assert replica["image"] == "example/valkey@sha256:00" and replica["cpuset"] == "0-1"
    assert replica["network_mode"] == "host"
    for text in ("--port $((7000 + 1))", "--bind 0.0.0.0", "--io-threads 4", "--replicaof 192.0.2.7 7000",
                 "--hz 100 <<EOF", "requirepass $VALKEY_PASSWORD"):
        assert text in script, text
    assert replica["environment"]["REDISCLI_AUTH"] == "dummy"
    assert "dummy" not in script


def test_defaults():
    done = compose(REPO / "compose" / "cluster-3.yaml", "config", "--format", "json", VALKEY_PASSWORD="dummy")
    services = json.loads(done.stdout)["services"]
    assert services["shard-0-primary"]["image"] == "valkey/valkey:8.0.1"
    assert "--port 6379" in services["shard-0-primary"]["command"][0]
    init = unescape(services["cluster-init"]["command"][0])
    assert "host=127.0.0.1\nbase=6379\n" in init and '-lt 3 ]' in init
    assert "cpuset" not in services["shard-0-primary"]   # empty SERVER_CPUS: all CPUs
