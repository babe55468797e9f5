"""The two-host setup for real: servers on one "machine", the client on another.

Two network namespaces joined by a veth pair stand for the Pi pair (tools/twohost_lab.py):
podman's API service listens inside the server namespace, the compose backend reaches it as a
remote engine (DOCKER_HOST=tcp://<server address>:<port>), the servers bind the server address,
and `vkbench run` runs in the client namespace. Every topology works, cluster nodes announce an
address the client reaches, results carry both machines' fingerprints, teardown leaves nothing,
and the host's own network (forwarding, firewall, links, routes, listeners) is untouched.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vkbench.results.io import load_result

from test_compose_backend import LOCAL_VERSION

pytestmark = pytest.mark.compose

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import twohost_lab  # noqa: E402  (a tool script, not a package module)

CELL = {"server": f"valkey:{LOCAL_VERSION}", "requests": 30000, "keyspace": 3000, "pipeline": 16,
        "repetitions": 2, "warmup": 2000}


@pytest.fixture(scope="module")
def host_before():
    return twohost_lab.host_network_snapshot(), twohost_lab.listening_addresses()


@pytest.fixture(scope="module")
def lab(host_before, tmp_path_factory):
    with twohost_lab.TwoHostLab(tmp_path_factory.mktemp("twohost")) as made:
        yield made


def _client_docker(lab, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(lab.in_client(["docker", *args]), capture_output=True, text=True,
                          env=lab.client_env(), timeout=120)


def test_every_topology_runs_with_the_client_and_the_servers_on_two_hosts(lab, tmp_path):
    cells = [dict(CELL), {**CELL, "topology": "cluster:3"}, {**CELL, "topology": "replication:1"}]
    argv = [sys.executable, "-m", "vkbench", "run", "--backend", "compose", "--out", str(tmp_path), "--json",
            *[arg for c in cells for arg in ("--cell", json.dumps(c))]]
    proc = subprocess.run(lab.in_client(argv), capture_output=True, text=True, env=lab.client_env(), timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [c["error"] for c in json.loads(proc.stdout)["cells"]] == [None, None, None]
    results = {r["dimensions"]["topology"]: r for r in map(load_result, tmp_path.glob("*.json"))}
    assert set(results) == {"standalone", "cluster:3", "replication:1"}
    for result in results.values():
        assert result["run"]["backend"] == "compose"
        assert result["subject"]["server_version"] == LOCAL_VERSION
        assert result["summary"]["SET"]["rps"]["median"] > 0 and result["summary"]["GET"]["rps"]["median"] > 0
        client, server = result["environment"], result["server_environment"]
        assert client["fingerprint_id"] and server["fingerprint_id"]
        assert server["engine_address"] == lab.docker_host
        assert server["container_runtime"].startswith("podman ") and server["cores"] >= 1
        assert server["arch"] == client["arch"]
    left = _client_docker(lab, "ps", "-a", "--filter", "label=vkbench.run", "--format", "{{.Names}}")
    assert left.returncode == 0 and left.stdout.strip() == "", left.stdout


PROBE = textwrap.dedent("""
    import json, os, subprocess, sys
    from pathlib import Path
    from vkbench.topology.backend import DeploymentSpec
    from vkbench.topology.compose import ComposeBackend
    from vkbench.topology.model import ServerSettings, Topology
    from vkbench.topology.readiness import connect

    server_ns, run_dir = sys.argv[1], Path(sys.argv[2])
    spec = DeploymentSpec(topology=Topology.parse("cluster:3"), engine="valkey", version=os.environ["VERSION"],
                          settings=ServerSettings(), password="two-host-probe", run_dir=run_dir)
    with ComposeBackend().deploy(spec) as deployment:
        nodes = []
        for endpoint in deployment.endpoints:
            client = connect(endpoint.host, endpoint.port, spec.password, timeout=5)
            nodes.append(client.execute_command("CLUSTER", "NODES"))
            client.close()
        listening = subprocess.run(["ip", "netns", "exec", server_ns, "ss", "-Hltn"], capture_output=True,
                                   text=True, check=True).stdout
        ports = [e.port for e in deployment.endpoints]
    print(json.dumps({"nodes": nodes, "listening": listening, "ports": ports,
                      "hosts": sorted({e.host for e in deployment.endpoints})}))
""")


def test_cluster_nodes_announce_and_bind_only_the_server_address(lab, tmp_path):
    env = {**lab.client_env(), "VERSION": LOCAL_VERSION}
    proc = subprocess.run(lab.in_client([sys.executable, "-c", PROBE, lab.server_ns, str(tmp_path)]),
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["hosts"] == [lab.server_address]
    for text in seen["nodes"]:
        addresses = {line.split()[1].split("@")[0].rsplit(":", 1)[0] for line in text.strip().splitlines()}
        assert addresses == {lab.server_address}, text
    servers = [line.split()[3] for line in seen["listening"].splitlines()
               if int(line.split()[3].rpartition(":")[2]) in seen["ports"]]
    assert sorted(servers) == sorted(f"{lab.server_address}:{port}" for port in seen["ports"])


def test_the_host_network_is_untouched(lab, host_before):
    snapshot, listeners = host_before
    during = twohost_lab.listening_addresses()
    assert not {a for a in during - listeners if a[0].startswith("198.18.")}, "a lab address listens in the host namespace"
    assert twohost_lab.host_network_snapshot() == snapshot
    lab.close()
    assert twohost_lab.host_network_snapshot() == snapshot
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert lab.server_ns not in namespaces and lab.client_ns not in namespaces
