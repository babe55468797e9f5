"""ComposeBackend without an engine: the error when none answers, image choice, addresses, and
which stacks stale cleanup may remove."""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

from vkbench.errors import ContainerEngineError
from vkbench.topology import compose as compose_backend
from vkbench.topology.backend import DeploymentSpec, get_backend
from vkbench.topology.compose import ComposeBackend, default_image
from vkbench.topology.model import ServerSettings, Topology

PASSWORD = "Distinct-Secret-4711"
SETUP_HINT = "run tools/setup/containers.sh and source tools/containers-env.sh, or set DOCKER_HOST"


def spec(tmp_path, topology="standalone", version="8.0.1", engine="valkey", **settings):
    return DeploymentSpec(Topology.parse(topology), engine, version, ServerSettings(**settings), PASSWORD, tmp_path)


def test_get_backend_gives_the_compose_backend():
    assert isinstance(get_backend("compose"), ComposeBackend)


def test_no_engine_fails_with_exit_11_and_the_setup_hint(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/nothing-listens-here.sock")
    with pytest.raises(ContainerEngineError) as info:
        with ComposeBackend().deploy(spec(tmp_path)):
            pass
    assert info.value.exit_code == 11
    assert info.value.hint == SETUP_HINT
    assert "nothing-listens-here.sock" in info.value.message or "docker CLI" in info.value.message


def test_no_docker_cli_fails_the_same_way(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ContainerEngineError) as info:
        compose_backend.Docker().check_engine()
    assert info.value.hint == SETUP_HINT


def test_image_choice(tmp_path, monkeypatch):
    monkeypatch.delenv("VALKEY_IMAGE", raising=False)
    assert ComposeBackend().image_for(spec(tmp_path, version="9.1.2")) == "valkey/valkey:9.1.2"
    assert default_image("redis", "7.0.15") == "redis:7.0.15"
    monkeypatch.setenv("VALKEY_IMAGE", "localhost/vkbench-valkey:8.0.1")
    assert ComposeBackend().image_for(spec(tmp_path)) == "localhost/vkbench-valkey:8.0.1"
    assert ComposeBackend(image="valkey/valkey@sha256:ab").image_for(spec(tmp_path)) == "valkey/valkey@sha256:ab"


def test_stack_environment_carries_the_cell_and_never_the_password_in_files(tmp_path, monkeypatch):
    monkeypatch.delenv("VKBENCH_SERVER_HOST", raising=False)
    monkeypatch.setenv("EXTRA_ARGS", "--leaked-from-the-caller 1")
    stack = ComposeBackend()._new_stack(spec(tmp_path, "cluster:3", io_threads=2, extra_args=("--hz", "100")))
    assert stack.env["IO_THREADS"] == "2" and stack.env["EXTRA_ARGS"] == "--hz 100"
    assert stack.env["BIND_ADDRESS"] == stack.env["SERVER_HOST"] == "127.0.0.1"
    assert stack.env["VALKEY_PASSWORD"] == PASSWORD and stack.project.startswith("vkbench-")
    assert stack.env["VKBENCH_OWNER"].startswith(f"{socket.gethostname()}:{os.getpid()}:")
    assert PASSWORD not in stack.file.read_text()
    assert "cluster-init" in stack.file.read_text() and "bench.Dockerfile" not in stack.file.read_text()


def test_server_host_for_a_remote_engine_binds_and_announces_that_address(tmp_path):
    stack = ComposeBackend(server_host="192.0.2.10")._new_stack(spec(tmp_path))
    assert stack.env["BIND_ADDRESS"] == stack.env["SERVER_HOST"] == "192.0.2.10"
    stack = ComposeBackend(server_host="192.0.2.10")._new_stack(spec(tmp_path, bind="0.0.0.0"))
    assert (stack.env["BIND_ADDRESS"], stack.env["SERVER_HOST"]) == ("0.0.0.0", "192.0.2.10")


def test_remote_engine_uses_the_default_base_port_and_no_pids(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "ssh://pi-server")
    assert not compose_backend.engine_is_local()
    assert ComposeBackend()._pick_base_port(3, True, "192.0.2.10") == 6379
    assert ComposeBackend(base_port=7000)._pick_base_port(3, True, "192.0.2.10") == 7000


def test_local_engine_picks_a_free_port_block():
    base = ComposeBackend()._pick_base_port(6, True, "127.0.0.1")
    for port in range(base, base + 6):
        for p in (port, port + 10000):
            with socket.socket() as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", p))


def test_cleanup_stale_removes_only_projects_of_dead_owners_on_this_host(monkeypatch):
    dead = subprocess.Popen(["true"])
    dead.wait()
    me = socket.gethostname()
    live_owner = f"{me}:{os.getpid()}:{compose_backend.procs.process_start_time(os.getpid())}"
    rows = [
        {"project": "vkbench-dead", "owner": f"{me}:{dead.pid}:1", "run": "r1"},
        {"project": "vkbench-dead", "owner": f"{me}:{dead.pid}:1", "run": "r1"},
        {"project": "vkbench-reused-pid", "owner": f"{me}:{os.getpid()}:1", "run": "r2"},   # pid reused
        {"project": "vkbench-live", "owner": live_owner, "run": "r3"},
        {"project": "vkbench-other-host", "owner": f"not-{me}:{dead.pid}:1", "run": "r4"},
        {"project": "manual", "owner": "", "run": "manual"},
    ]
    removed = []
    monkeypatch.setattr(compose_backend.Docker, "containers", lambda self, *f: rows)
    monkeypatch.setattr(compose_backend, "_remove_project", lambda docker, project, **kw: removed.append(project))
    lines = ComposeBackend().cleanup_stale(None)
    assert removed == ["vkbench-dead", "vkbench-reused-pid"]
    assert lines[0] == "removed compose project vkbench-dead of killed run r1"


def test_cleanup_stale_without_an_engine_is_quietly_empty(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/none.sock")
    assert ComposeBackend().cleanup_stale(tmp_path) == []
