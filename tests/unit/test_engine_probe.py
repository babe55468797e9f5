"""The container engine is identified by its API, within one deadline, and never moves the fingerprint.

Stand-ins only: a Unix socket that answers like podman or Docker, one that accepts and never
answers (a hung engine), and docker/podman CLIs that hang. Nothing here depends on a real engine.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from pathlib import Path

import pytest

from vkbench import envinfo
from vkbench.engine_probe import engine_address, probe_engine

PODMAN_VERSION = {"Components": [{"Name": "Podman Engine", "Version": "4.3.1"}, {"Name": "Conmon", "Version": "2.1.6"}],
                  "Version": "4.3.1", "ApiVersion": "1.41"}
DOCKER_VERSION = {"Components": [{"Name": "Engine", "Version": "27.3.1"}, {"Name": "containerd", "Version": "1.7"}],
                  "Version": "27.3.1", "ApiVersion": "1.47"}


@contextlib.contextmanager
def engine_standin(path: Path, answer: bytes | None):
    """A Unix socket at ``path``: answers every connection with ``answer``, or holds it open silently (None)."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            if answer is None:
                held.append(conn)   # a hung engine: accepts, reads nothing, says nothing
                continue
            with conn:
                conn.settimeout(5)
                with contextlib.suppress(OSError):
                    conn.recv(4096)
                    conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"unix://{path}"
    finally:
        stop.set()
        thread.join(timeout=10)
        for conn in held:
            conn.close()
        server.close()


def http_answer(body: dict, status: str = "200 OK") -> bytes:
    data = json.dumps(body).encode()
    return f"HTTP/1.0 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data


@pytest.fixture
def sock_dir(tmp_path_factory):
    # Unix socket paths are limited to ~108 bytes; pytest's tmp_path can be longer.
    import tempfile
    with tempfile.TemporaryDirectory(prefix="vkp") as name:
        yield Path(name)


@pytest.mark.parametrize(("answer", "runtime"), [(PODMAN_VERSION, "podman 4.3.1"), (DOCKER_VERSION, "docker 27.3.1")])
def test_the_engine_names_itself_through_its_api(sock_dir, answer, runtime):
    with engine_standin(sock_dir / "engine.sock", http_answer(answer)) as address:
        probe = probe_engine(address, timeout=10)
    assert probe.runtime == runtime
    assert probe.problem is None
    assert probe.as_fields() == {"container_runtime": runtime, "container_runtime_probe": "ok"}


def test_a_hung_engine_is_recorded_as_a_failed_probe(sock_dir):
    with engine_standin(sock_dir / "hung.sock", None) as address:
        probe = probe_engine(address, timeout=0.3)
    assert probe.runtime is None
    assert probe.problem == f"no answer from {address} within 0.3 s"


@pytest.mark.parametrize(("address", "problem"), [
    ("ssh://pi@pi-server", "ssh://pi-server: the API is not probed over ssh"),
    ("tcp://user:secret@host-without-port", "tcp://host-without-port: tcp address without host or port"),
])
def test_addresses_that_are_not_probed_say_why_without_credentials(address, problem):
    probe = probe_engine(address, timeout=1)
    assert probe.runtime is None
    assert probe.problem == problem


def test_an_error_answer_or_a_non_engine_is_a_failed_probe(sock_dir):
    with engine_standin(sock_dir / "e.sock", http_answer({"message": "nope"}, "500 Internal Server Error")) as address:
        assert "answered HTTP/1.0 500" in probe_engine(address, timeout=10).problem
    with engine_standin(sock_dir / "n.sock", http_answer({"hello": "world"})) as address:
        assert "is not an engine's answer" in probe_engine(address, timeout=10).problem


def test_a_missing_socket_is_a_failed_probe(sock_dir):
    probe = probe_engine(f"unix://{sock_dir}/absent.sock", timeout=1)
    assert probe.runtime is None and probe.problem


def test_docker_host_wins_over_default_sockets():
    assert engine_address({"DOCKER_HOST": "tcp://10.0.0.5:2375"}) == "tcp://10.0.0.5:2375"


@pytest.fixture
def hanging_clis(tmp_path, monkeypatch):
    """docker and podman CLIs that hang (and leave a mark if anything runs them)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    marker = tmp_path / "cli-was-run"
    for name in ("docker", "podman"):
        cli = bin_dir / name
        cli.write_text(f"#!/bin/sh\necho \"$0 $*\" >> {marker}\nexec sleep 30\n")
        cli.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    return marker


def test_the_fingerprint_is_the_same_whether_the_engine_answers_hangs_or_is_not_asked(sock_dir, hanging_clis, monkeypatch):
    with engine_standin(sock_dir / "podman.sock", http_answer(PODMAN_VERSION)) as address:
        monkeypatch.setenv("DOCKER_HOST", address)
        answered = envinfo.fingerprint(probe_container_runtime=True)
    with engine_standin(sock_dir / "hung.sock", None) as address:
        monkeypatch.setenv("DOCKER_HOST", address)
        hung = envinfo.fingerprint(probe_container_runtime=True)
    not_asked = envinfo.fingerprint(probe_container_runtime=False)

    assert answered["container_runtime"] == "podman 4.3.1"
    assert answered["container_runtime_probe"] == "ok"
    assert hung["container_runtime"] is None
    assert hung["container_runtime_probe"].startswith(f"no answer from {address} within")
    assert not_asked["container_runtime_probe"] == "not probed"
    assert answered["fingerprint_id"] == hung["fingerprint_id"] == not_asked["fingerprint_id"]
    assert not hanging_clis.exists(), "the fingerprint asked a CLI: " + hanging_clis.read_text()


def test_ids_recorded_before_the_engine_left_the_fingerprint_are_unchanged():
    env = {"arch": "x86_64", "cpu_model": "AMD EPYC", "cores": 2, "memory_bytes": 8 << 30, "kernel": "6.1.0",
           "cpufreq_governor": None, "thp": "madvise", "board_model": None, "virtualization": "kvm",
           "container_runtime": None, "image": None}
    import hashlib
    before = hashlib.sha256(json.dumps(env, sort_keys=True).encode()).hexdigest()[:16]
    assert envinfo.fingerprint_id(env) == before
    assert envinfo.fingerprint_id({**env, "container_runtime": "docker 4.3.1"}) == before
