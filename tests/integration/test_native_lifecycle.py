"""The native backend's life cycle with real servers: teardown on errors and signals, leftovers of a
killed run, secrets kept out of ps, and a port stolen between probe and start."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vkbench.errors import MissingBinaryError, ServerStartError
from vkbench.servers import resolve_server
from vkbench.topology import native, procs
from vkbench.topology.backend import DeploymentSpec
from vkbench.topology.model import ServerSettings, Topology
from vkbench.topology.native import NativeBackend
from vkbench.topology.readiness import connect, wait_ready

pytestmark = pytest.mark.integration

VERSION = "9.1.2"

# Deploys, prints the deployment's pids and ports as one JSON line, then waits to be killed.
CHILD = """
import json, sys, time
from pathlib import Path
from vkbench.topology.backend import DeploymentSpec
from vkbench.topology.model import ServerSettings, Topology
from vkbench.topology.native import NativeBackend
spec = DeploymentSpec(Topology.parse(sys.argv[1]), "valkey", sys.argv[2], ServerSettings(), "pw-" + "x" * 20,
                      Path(sys.argv[3]))
with NativeBackend(fetch=False).deploy(spec) as d:
    print(json.dumps({"pids": d.server_pids, "ports": [e.port for e in d.endpoints]}), flush=True)
    time.sleep(120)
"""


@pytest.fixture(autouse=True)
def _binaries_in_cache():
    for version in (VERSION, "8.0.1"):
        try:
            resolve_server("valkey", version, fetch=False)
        except MissingBinaryError as exc:
            pytest.fail(f"{exc.message}\nhint: {exc.hint}")


def _spec(tmp_path: Path, topology: str = "standalone", password: str | None = None) -> DeploymentSpec:
    return DeploymentSpec(Topology.parse(topology), "valkey", VERSION, ServerSettings(),
                          password or secrets.token_hex(16), tmp_path / "run")


def _all_gone(pids: list[int], ports: list[int], cluster: bool = False) -> None:
    deadline = time.monotonic() + 30       # exits are quick; a loaded machine may delay them
    while any(procs.is_alive(p, None) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not any(procs.is_alive(p, None) for p in pids)
    assert procs.ports_in_use(ports, cluster=cluster) == []


@pytest.fixture
def start_child(tmp_path):
    """Start CHILD deploying ``topology``; whatever happens in the test, no child and no server
    outlives it (a failed assertion must not leave a cluster running for two minutes)."""
    children: list[subprocess.Popen] = []

    def start(topology: str) -> subprocess.Popen:
        child = subprocess.Popen([sys.executable, "-c", CHILD, topology, VERSION, str(tmp_path / "run")],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        children.append(child)
        return child

    yield start
    for child in children:
        if child.poll() is None:
            child.terminate()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
    procs.cleanup_stale(tmp_path / ".state")


def test_teardown_on_exception(tmp_path):
    with pytest.raises(RuntimeError, match="benchmark blew up"):
        with NativeBackend(fetch=False).deploy(_spec(tmp_path, "replication:1")) as deployment:
            pids, ports = deployment.server_pids, [e.port for e in deployment.endpoints]
            raise RuntimeError("benchmark blew up")
    _all_gone(pids, ports)
    assert list((tmp_path / ".state").glob("*.json")) == []


def test_reused_run_dir_starts_empty(tmp_path):
    # A replica writes the synced RDB into its dir; the next deployment there must neither load
    # that data nor choke on an RDB from a newer version.
    with NativeBackend(fetch=False).deploy(_spec(tmp_path, "replication:1", "pw1")) as deployment:
        client = connect("127.0.0.1", deployment.primaries[0].port, "pw1")
        client.set("left-over", "1")
        client.close()
        time.sleep(0.2)
    older = DeploymentSpec(Topology.parse("replication:1"), "valkey", "8.0.1", ServerSettings(), "pw2", tmp_path / "run")
    with NativeBackend(fetch=False).deploy(older) as deployment:
        for endpoint in deployment.endpoints:
            client = connect("127.0.0.1", endpoint.port, "pw2")
            assert client.dbsize() == 0, endpoint.name
            client.close()


def test_config_is_private_and_password_not_in_ps(tmp_path):
    password = "pw-" + secrets.token_hex(12)
    with NativeBackend(fetch=False).deploy(_spec(tmp_path, "cluster:2:1", password)) as deployment:
        for endpoint in deployment.endpoints:
            config = tmp_path / "run" / endpoint.name / "valkey.conf"
            assert config.stat().st_mode & 0o777 == 0o600
            assert f"requirepass {password}" in config.read_text()
            assert password not in procs.process_cmdline(endpoint.pid)
            assert password.encode() not in Path(f"/proc/{endpoint.pid}/environ").read_bytes()
        logs = deployment.log_files
        assert len(logs) == 4 and all(log.is_file() for log in logs)
    for log in logs:
        assert password not in log.read_text()


def test_stale_cleanup_after_sigkilled_run(tmp_path, start_child):
    child = start_child("replication:1")
    try:
        started = json.loads(child.stdout.readline() or "{}")
        assert started.get("pids"), child.stderr.read()
    finally:
        child.kill()   # SIGKILL: no teardown runs, the servers stay behind
        child.wait()
    assert all(procs.is_alive(pid, None) for pid in started["pids"])
    assert len(list((tmp_path / ".state").glob("native-*.json"))) == 2

    removed = NativeBackend().cleanup_stale(tmp_path / ".state")

    assert len(removed) == 2 and all(line.startswith("killed leftover server") for line in removed)
    _all_gone(started["pids"], started["ports"])
    assert list((tmp_path / ".state").glob("native-*.json")) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_signal_while_running_tears_down(tmp_path, start_child, sig):
    child = start_child("replication:1")
    started = json.loads(child.stdout.readline() or "{}")
    assert started.get("pids"), child.stderr.read()
    child.send_signal(sig)
    assert child.wait(timeout=60) != 0
    _all_gone(started["pids"], started["ports"])
    assert list((tmp_path / ".state").glob("native-*.json")) == []


def test_ctrl_c_during_startup_tears_down(tmp_path, start_child):
    # A 3-shard cluster needs ~2 s to become ready: interrupt as soon as all servers exist.
    child = start_child("cluster:3")
    state = tmp_path / ".state"
    deadline = time.monotonic() + 60       # the child's Python start and 3 servers: longer when loaded
    records: list[dict] = []
    while len(records) < 3 and time.monotonic() < deadline:
        records = [json.loads(p.read_text()) for p in state.glob("native-*.json")] if state.is_dir() else []
        time.sleep(0.01)
    assert len(records) == 3
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert out == ""                 # never became ready
    assert "KeyboardInterrupt" in err
    _all_gone([r["pid"] for r in records], [r["port"] for r in records], cluster=True)
    assert list(state.glob("native-*.json")) == []


def test_port_taken_after_probe_is_retried(tmp_path, monkeypatch):
    thief = socket.socket()
    thief.bind(("127.0.0.1", 0))
    thief.listen()
    real_allocate = procs.allocate_ports
    calls = []

    def allocate(count, **kwargs):
        calls.append(count)
        ports = real_allocate(count, **kwargs)
        return [thief.getsockname()[1]] + ports[1:] if len(calls) == 1 else ports

    monkeypatch.setattr(native.procs, "allocate_ports", allocate)
    try:
        with NativeBackend(fetch=False).deploy(_spec(tmp_path)) as deployment:
            assert deployment.endpoints[0].port != thief.getsockname()[1]
    finally:
        thief.close()
    assert len(calls) == 2


def test_missing_binary_fails_with_setup_hint(tmp_path, monkeypatch):
    monkeypatch.setenv("VKBENCH_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(MissingBinaryError) as err:
        with NativeBackend(fetch=False).deploy(_spec(tmp_path)):
            pass
    assert "tools/setup/binaries.sh" in err.value.hint
    assert not (tmp_path / "run").exists()


def test_server_that_cannot_start_names_its_log(tmp_path):
    spec = DeploymentSpec(Topology.parse("standalone"), "valkey", VERSION,
                          ServerSettings(extra_args=("--no-such-directive", "1")), "pw", tmp_path / "run")
    with pytest.raises(ServerStartError) as err:
        with NativeBackend(fetch=False).deploy(spec):
            pass
    assert "no-such-directive" in err.value.message
    assert err.value.hint
    assert list((tmp_path / ".state").glob("*.json")) == []
    assert os.listdir(tmp_path / "run" / "primary")


def test_not_ready_error_names_node_what_it_said_and_log(tmp_path):
    with NativeBackend(fetch=False).deploy(_spec(tmp_path, "replication:1", "pw")) as deployment:
        replica = deployment.replicas[0]
        client = connect("127.0.0.1", replica.port, "pw")
        client.execute_command("REPLICAOF", "NO", "ONE")   # breaks the topology on purpose
        client.close()
        with pytest.raises(ServerStartError) as err:
            wait_ready(deployment.endpoints, "pw", Topology.parse("replication:1"), timeout=0.3,
                       log_tail=lambda endpoint: f"<log of {endpoint.name}>")
    message = err.value.message
    assert "not ready after" in message and "replica-1" in message
    assert "connected_slaves:0" in message or "master_link_status" in message
    assert "<log of " in message
    assert err.value.hint
