"""The two-host setup for real: servers on one "machine", the client on another.

Two network namespaces joined by a veth pair stand for the Pi pair (tools/twohost_lab.py):
podman's API service listens inside the server namespace, the compose backend reaches it as a
remote engine (DOCKER_HOST=tcp://<server address>:<port>), the servers bind the server address,
and `vkbench run` runs in the client namespace. Every topology works (cluster with replicas
included), every server binds only the server address, every node and replica announces an
address the client reaches, results carry both machines' fingerprints, teardown leaves nothing,
and the host's own network (links, addresses, routes, IPv4/IPv6 forwarding, nf_tables and
iptables rules, listeners) is untouched.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vkbench.results.io import load_result

from test_compose_backend import LOCAL_VERSION

pytestmark = pytest.mark.compose

REPO = Path(__file__).resolve().parents[2]
import twohost_lab  # noqa: E402  (a tool script, not a package module)

CELL = {"server": f"valkey:{LOCAL_VERSION}", "requests": 30000, "keyspace": 3000, "pipeline": 16,
        "repetitions": 2, "warmup": 2000}
TOPOLOGIES = ["standalone", "replication:1", "cluster:3", "cluster:3:1"]
CLUSTER_BUS_OFFSET = 10000


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
    cells = [{**CELL, "topology": topology} for topology in TOPOLOGIES]
    argv = [sys.executable, "-m", "vkbench", "run", "--backend", "compose", "--out", str(tmp_path), "--json",
            *[arg for c in cells for arg in ("--cell", json.dumps(c))]]
    proc = subprocess.run(lab.in_client(argv), capture_output=True, text=True, env=lab.client_env(), timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [c["error"] for c in json.loads(proc.stdout)["cells"]] == [None] * len(cells)
    results = {r["dimensions"]["topology"]: r for r in map(load_result, tmp_path.glob("*.json"))}
    assert set(results) == set(TOPOLOGIES)
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


# Run in the client namespace: deploy each topology through the remote engine and record what
# the servers bind, what they announce (CLUSTER NODES/SLOTS, INFO replication) and whether the
# client reaches every announced address.
PROBE = textwrap.dedent("""
    import json, os, subprocess, sys, time
    from pathlib import Path
    from vkbench.topology.backend import DeploymentSpec
    from vkbench.topology.compose import ComposeBackend
    from vkbench.topology.model import ServerSettings, Topology
    from vkbench.topology.readiness import connect, parse_fields

    server_ns, run_dir, topologies = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    password = "two-host-probe"

    def ask(host, port, *command):
        client = connect(host, int(port), password, timeout=5)
        try:
            return client.execute_command(*command)
        finally:
            client.close()

    def reaches(host, port):
        try:
            return ask(host, port, "PING") is True
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"

    def slot_owners(endpoint, expected):
        # Replicas show up in every node's CLUSTER SLOTS once gossip has spread them.
        deadline = time.monotonic() + 15
        while True:
            slots = ask(endpoint.host, endpoint.port, "CLUSTER", "SLOTS")
            if all(len(entry) - 2 == expected for entry in slots) or time.monotonic() > deadline:
                return [[f"{node[0]}:{node[1]}" for node in entry[2:]] for entry in slots]
            time.sleep(0.2)

    seen = {}
    for text in topologies:
        topology = Topology.parse(text)
        spec = DeploymentSpec(topology=topology, engine="valkey", version=os.environ["VERSION"],
                              settings=ServerSettings(), password=password, run_dir=run_dir / text.replace(":", "-"))
        with ComposeBackend().deploy(spec) as deployment:
            endpoints = deployment.endpoints
            row = {"hosts": sorted({e.host for e in endpoints}), "ports": [e.port for e in endpoints],
                   "bind": [ask(e.host, e.port, "CONFIG", "GET", "bind")[1] for e in endpoints],
                   "listening": subprocess.run(["ip", "netns", "exec", server_ns, "ss", "-Hltn"],
                                               capture_output=True, text=True, check=True).stdout,
                   "replication": {e.name: parse_fields(ask(e.host, e.port, "INFO", "replication"))
                                   for e in endpoints}}
            announced = set()
            for fields in row["replication"].values():
                if fields.get("master_host"):
                    announced.add(f"{fields['master_host']}:{fields['master_port']}")
                for key, value in fields.items():
                    if key.startswith("slave") and key[5:].isdigit():
                        parts = dict(p.split("=", 1) for p in value.split(","))
                        announced.add(f"{parts['ip']}:{parts['port']}")
            if topology.is_cluster:
                row["nodes"] = [ask(e.host, e.port, "CLUSTER", "NODES") for e in endpoints]
                row["slots"] = {e.name: slot_owners(e, 1 + topology.replicas) for e in endpoints}
                for line in row["nodes"][0].splitlines():
                    announced.add(line.split()[1].split("@")[0].split(",")[0])
                for owners in row["slots"].values():
                    announced.update(a for entry in owners for a in entry)
            row["announced"] = sorted(announced)
            row["reached"] = {a: reaches(*a.rsplit(":", 1)) for a in sorted(announced)}
        seen[text] = row
    print(json.dumps(seen))
""")


@pytest.fixture(scope="module")
def probed(lab, tmp_path_factory):
    """{topology: what its deployment bound and announced}, from one probe run in the client namespace."""
    env = {**lab.client_env(), "VERSION": LOCAL_VERSION}
    run_dir = tmp_path_factory.mktemp("probe")
    proc = subprocess.run(lab.in_client([sys.executable, "-c", PROBE, lab.server_ns, str(run_dir), *TOPOLOGIES]),
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _listening(text: str) -> set[str]:
    return {line.split()[3] for line in text.splitlines()}


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_servers_bind_only_the_server_address(probed, lab, topology):
    seen = probed[topology]
    assert seen["hosts"] == [lab.server_address]
    assert seen["bind"] == [lab.server_address] * len(seen["ports"])
    ports = set(seen["ports"])
    if topology.startswith("cluster:"):
        ports |= {p + CLUSTER_BUS_OFFSET for p in seen["ports"]}
    listening = _listening(seen["listening"])
    on_ports = {a for a in listening if int(a.rpartition(":")[2]) in ports}
    assert on_ports == {f"{lab.server_address}:{p}" for p in ports}
    # Nothing in the server namespace listens anywhere else (no 0.0.0.0, ::, loopback).
    assert {a.rpartition(":")[0] for a in listening} == {lab.server_address}, listening


@pytest.mark.parametrize("topology", ["replication:1", "cluster:3", "cluster:3:1"])
def test_nodes_and_replicas_announce_an_address_the_client_reaches(probed, lab, topology):
    seen = probed[topology]
    assert seen["announced"], "nothing announced"
    assert seen["announced"] == sorted(f"{lab.server_address}:{p}" for p in seen["ports"]), seen["announced"]
    assert all(reached is True for reached in seen["reached"].values()), seen["reached"]
    roles = [fields["role"] for fields in seen["replication"].values()]
    per_primary, replicas = {"replication:1": (1, 1), "cluster:3": (0, 0), "cluster:3:1": (1, 3)}[topology]
    assert roles.count("slave") == replicas
    for fields in seen["replication"].values():
        if fields["role"] == "slave":
            assert fields["master_host"] == lab.server_address and fields["master_link_status"] == "up"
        else:
            assert int(fields["connected_slaves"]) == per_primary
    if topology.startswith("cluster:"):
        for text in seen["nodes"]:
            lines = text.strip().splitlines()
            assert len(lines) == len(seen["ports"])
            assert {line.split()[1].split("@")[0].rsplit(":", 1)[0] for line in lines} == {lab.server_address}, text
        # What a cluster client follows: every slot range names its primary and, with
        # replicas, its replica, all at the server address, as seen from every node.
        for node, owners in seen["slots"].items():
            assert len(owners) == 3 and all(len(entry) == 1 + per_primary for entry in owners), (node, owners)
            assert {a for entry in owners for a in entry} <= set(seen["announced"])


def test_the_host_network_is_untouched(lab, host_before):
    snapshot, listeners = host_before
    during = twohost_lab.listening_addresses()
    assert not {a for a in during - listeners if a[0].startswith("198.18.")}, "a lab address listens in the host namespace"
    assert twohost_lab.host_network_snapshot() == snapshot
    lab.close()
    assert twohost_lab.host_network_snapshot() == snapshot
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert lab.server_ns not in namespaces and lab.client_ns not in namespaces


def test_the_host_check_notices_each_kind_of_change():
    """The comparison above can fail: each change, made in a scratch namespace, shows up in
    exactly the part of the snapshot that covers it."""
    ns = f"vkb-chk-{secrets.token_hex(3)}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        def changed_by(*argv: str) -> dict:
            before = twohost_lab.host_network_snapshot(ns)
            subprocess.run(["ip", "netns", "exec", ns, *argv], check=True, capture_output=True)
            after = twohost_lab.host_network_snapshot(ns)
            return {key: (before[key], after[key]) for key in before if before[key] != after[key]}

        diff = changed_by("ip", "link", "add", "vkbchk0", "type", "veth", "peer", "name", "vkbchk1")
        assert set(diff) == {"links", "forwarding"}      # new links bring their own forwarding knobs
        diff = changed_by("ip", "addr", "add", "198.18.254.1/32", "dev", "vkbchk0")
        assert set(diff) == {"addresses", "routes"}      # the address and its local route
        assert diff["addresses"][1] == ["vkbchk0 inet 198.18.254.1/32"]
        subprocess.run(["ip", "-n", ns, "link", "set", "vkbchk0", "up"], check=True)
        diff = changed_by("ip", "route", "add", "198.18.253.0/24", "dev", "vkbchk0")
        assert set(diff) == {"routes"}
        diff = changed_by("sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
        assert set(diff) == {"forwarding"} and diff["forwarding"][1]["ipv6/conf/all/forwarding"] == "1"
        diff = changed_by("sysctl", "-qw", "net.ipv4.ip_forward=1")
        assert set(diff) == {"forwarding"} and diff["forwarding"][1]["ipv4/ip_forward"] == "1"
        diff = changed_by("iptables", "-A", "INPUT", "-s", "198.18.254.2", "-j", "DROP")
        assert set(diff) == {"nftables", "iptables-save"}
        assert any(line.startswith("rule ip filter INPUT #") for line in diff["nftables"][1])
        diff = changed_by("ip6tables", "-A", "FORWARD", "-s", "2001:db8::1", "-j", "DROP")
        assert set(diff) == {"nftables", "ip6tables-save"}
        # A rule replaced by one that differs only in its verdict: nf_tables keeps its handle,
        # the snapshot still tells them apart.
        diff = changed_by("iptables", "-R", "INPUT", "1", "-s", "198.18.254.2", "-j", "ACCEPT")
        assert set(diff) == {"nftables", "iptables-save"}
        assert len(diff["nftables"][0]) == len(diff["nftables"][1])
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
