"""Real servers in every topology kind, several versions: ready means ready, locked down, cleaned up.

Binaries come from the cache that tools/setup/binaries.sh fills. A missing one FAILS the test
with that hint (a skipped benchmark backend test would hide a broken setup).
"""

from __future__ import annotations

import secrets
import socket
import time
from pathlib import Path

import pytest
import valkey

from vkbench.errors import MissingBinaryError
from vkbench.servers import resolve_server
from vkbench.topology import procs
from vkbench.topology.backend import Deployment, DeploymentSpec
from vkbench.topology.model import ServerSettings, Topology
from vkbench.topology.native import NativeBackend
from vkbench.topology.readiness import connect, info, parse_fields

pytestmark = pytest.mark.integration

CASES = [
    ("valkey", "9.0.0", "standalone"),
    ("valkey", "9.0.0", "cluster:3"),
    ("valkey", "9.0.0", "replication:1"),
    ("valkey", "9.1.2", "standalone"),
    ("valkey", "9.1.2", "cluster:3"),
    ("valkey", "9.1.2", "replication:1"),
    ("valkey", "9.1.2", "cluster:2:1"),
    ("valkey", "8.0.1", "standalone"),
    ("valkey", "8.0.1", "cluster:3"),
    ("valkey", "8.0.1", "replication:1"),
    ("redis", "7.0.15", "replication:1"),
]


def require_cached(engine: str, version: str) -> None:
    try:
        resolve_server(engine, version, fetch=False)
    except MissingBinaryError as exc:
        pytest.fail(f"{exc.message}\nhint: {exc.hint}")


def listening_addresses(port: int) -> set[str]:
    """Local addresses in LISTEN state on ``port``, from /proc/net/tcp and tcp6."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, port_hex = local.split(":")
            if state == "0A" and int(port_hex, 16) == port:
                found.add(address)
    return found


def unauthenticated_reply(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
        sock.sendall(b"PING\r\n")
        return sock.recv(200)


def assert_really_ready(deployment: Deployment, password: str, topology: Topology) -> None:
    """Checked right after deploy() returned, independently of readiness.py's own loop."""
    clients = {e.name: connect(e.host, e.port, password) for e in deployment.endpoints}
    try:
        for endpoint in deployment.endpoints:
            client = clients[endpoint.name]
            assert client.ping()
            if topology.is_cluster:
                state = parse_fields(client.execute_command("CLUSTER", "INFO"))
                assert state["cluster_state"] == "ok", (endpoint.name, state)
                assert state["cluster_slots_assigned"] == "16384"
                assert state["cluster_slots_ok"] == "16384"
                assert state["cluster_known_nodes"] == str(len(deployment.endpoints))
        for replica in deployment.replicas:
            primary = next(p for p in deployment.primaries if p.shard == replica.shard)
            fields = info(clients[replica.name], "replication")
            assert fields["role"] == "slave" and fields["master_link_status"] == "up", fields
            assert int(fields["master_port"]) == primary.port
            # The primary pings its replicas every 10 s, which moves its offset; wait for the catch-up
            # (within a second when quiet; a loaded machine may delay the replica for longer).
            deadline = time.monotonic() + 30.0
            while True:
                primary_offset = info(clients[primary.name], "replication")["master_repl_offset"]
                replica_offset = info(clients[replica.name], "replication")["slave_repl_offset"]
                if primary_offset == replica_offset or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert primary_offset == replica_offset
        if topology.is_cluster:
            # A write routed through the cluster works: slots really are served.
            cluster = valkey.ValkeyCluster(host="127.0.0.1", port=deployment.endpoints[0].port, password=password)
            try:
                for key in ("a", "b", "c", "d"):
                    cluster.set(key, key)
                    assert cluster.get(key) == key.encode()
            finally:
                cluster.close()
    finally:
        for client in clients.values():
            client.close()


@pytest.mark.parametrize(("engine", "version", "topology_text"), CASES,
                         ids=[f"{e}-{v}-{t}" for e, v, t in CASES])
def test_topology(engine, version, topology_text, tmp_path):
    require_cached(engine, version)
    topology = Topology.parse(topology_text)
    password = secrets.token_hex(16)
    spec = DeploymentSpec(topology, engine, version, ServerSettings(io_threads=2), password, tmp_path / "run")
    backend = NativeBackend(fetch=False)

    with backend.deploy(spec) as deployment:
        assert len(deployment.endpoints) == len(topology.nodes())
        assert deployment.server_version == version
        assert deployment.build["source"] == "cache" and deployment.build["id"].startswith("sha256:")
        assert deployment.startup_s is not None and deployment.startup_s < 10
        assert_really_ready(deployment, password, topology)
        for endpoint in deployment.endpoints:
            assert unauthenticated_reply(endpoint.port).startswith(b"-NOAUTH"), endpoint.name
            assert listening_addresses(endpoint.port) == {"0100007F"}, endpoint.name   # 127.0.0.1 only
            client = connect(endpoint.host, endpoint.port, password)
            assert client.config_get("io-threads") == {"io-threads": "2"}
            assert client.config_get("protected-mode") == {"protected-mode": "yes"}
            client.close()
        pids, ports = deployment.server_pids, [e.port for e in deployment.endpoints]
        assert len(pids) == len(ports) and all(procs.is_alive(pid, None) for pid in pids)
        assert len(list((tmp_path / ".state").glob("native-*.json"))) == len(ports)

    assert not any(procs.is_alive(pid, None) for pid in pids)
    assert procs.ports_in_use(ports, cluster=topology.is_cluster) == []
    assert list((tmp_path / ".state").glob("native-*.json")) == []
