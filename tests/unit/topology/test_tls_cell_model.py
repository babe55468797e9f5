"""TLS cells without servers (issue 20): the throw-away certificates, the server directives per
topology, what refuses TLS (a binary without it, instruction counts), BUILD_TLS for source builds."""

from __future__ import annotations

import shutil
import stat
import subprocess

import pytest

from vkbench.errors import MissingBinaryError, UsageError
from vkbench.matrix.cells import cell_from_arg
from vkbench.matrix.model import instructions_refusal
from vkbench.servers.source_build import BuildConfig
from vkbench.topology.model import NodeSpec, ServerSettings, Topology, server_config
from vkbench.topology.tls import has_tls, make_tls_files, require_tls

needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl command missing")


@needs_openssl
def test_certificates_are_fresh_private_and_verify_against_their_own_ca(tmp_path):
    files = make_tls_files(tmp_path / "tls")
    assert sorted(p.name for p in (tmp_path / "tls").iterdir()) == ["ca.crt", "client.crt", "client.key", "server.crt", "server.key"]
    for key in (files.server_key, files.client_key):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "tls").stat().st_mode) == 0o700
    for cert in (files.server_cert, files.client_cert):
        proc = subprocess.run(["openssl", "verify", "-CAfile", str(files.ca_cert), str(cert)], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
    text = subprocess.run(["openssl", "x509", "-in", str(files.server_cert), "-noout", "-text"], capture_output=True,
                          text=True, timeout=60).stdout
    assert "IP Address:127.0.0.1" in text and "TLS Web Client Authentication" in text
    other = make_tls_files(tmp_path / "other")
    assert other.ca_cert.read_bytes() != files.ca_cert.read_bytes()      # a CA per cell


def directives(topology: str, node: NodeSpec, tls) -> dict[str, tuple]:
    out = server_config(Topology.parse(topology), node, port=7000, primary_port=7001, settings=ServerSettings(),
                        password="pw", workdir="/tmp/x", tls=tls)
    return {d[0]: d[1:] for d in out}


def test_tls_servers_listen_on_the_tls_port_only_and_link_over_tls(tmp_path):
    from vkbench.topology.tls import TlsFiles

    files = TlsFiles(tmp_path, *(tmp_path / n for n in ("ca.crt", "server.crt", "server.key", "client.crt", "client.key")))
    primary = NodeSpec(0, "primary", "primary", 0, None)
    standalone = directives("standalone", primary, files)
    assert standalone["port"] == ("0",) and standalone["tls-port"] == ("7000",)
    assert standalone["tls-auth-clients"] == ("yes",) and standalone["tls-ca-cert-file"] == (str(files.ca_cert),)
    assert "tls-cluster" not in standalone and "tls-replication" not in standalone
    cluster = directives("cluster:3", NodeSpec(0, "shard-0-primary", "primary", 0, None), files)
    assert cluster["tls-cluster"] == ("yes",) and cluster["tls-replication"] == ("yes",)
    replica = directives("replication:1", NodeSpec(1, "replica-1", "replica", 0, 0), files)
    assert replica["tls-replication"] == ("yes",) and replica["replicaof"] == ("127.0.0.1", "7001")
    plain = directives("standalone", primary, None)
    assert plain["port"] == ("7000",) and not any(k.startswith("tls-") for k in plain)


def test_a_binary_without_openssl_is_refused_with_the_builds_that_have_tls(tmp_path):
    fake = tmp_path / "valkey-server"
    fake.write_bytes(b"#!/bin/sh\n")
    assert has_tls(fake) is None          # not an ELF file: cannot tell, so not refused
    require_tls(fake, "valkey:custom")
    python = shutil.which("python3")
    if python and has_tls(__import__("pathlib").Path(python).resolve()) is False:
        with pytest.raises(UsageError, match="built without TLS support") as caught:
            require_tls(__import__("pathlib").Path(python).resolve(), "valkey:9.1.2")
        assert "valkey:8.0.1" in caught.value.hint
    (tmp_path / "valkey-tls.so").write_bytes(b"")
    assert has_tls(fake) is True          # BUILD_TLS=module: the module beside the server


def test_instruction_counts_refuse_tls_cells():
    cell = cell_from_arg('{"server": "valkey:8.0.1", "requests": 1000, "workload": {"tls": true}}')
    assert "tls" in instructions_refusal(cell)


def test_source_builds_take_build_tls_from_the_environment(monkeypatch):
    assert dict(BuildConfig.from_env().make_vars)["BUILD_TLS"] == "no"
    monkeypatch.setenv("VKBENCH_BUILD_TLS", "yes")
    assert dict(BuildConfig.from_env().make_vars)["BUILD_TLS"] == "yes"
    monkeypatch.setenv("VKBENCH_BUILD_TLS", "maybe")
    with pytest.raises(MissingBinaryError, match="VKBENCH_BUILD_TLS"):
        BuildConfig.from_env()


def test_tls_true_on_a_cell_or_a_group_is_the_workload_field():
    from vkbench.matrix.expand import expand_matrix
    from vkbench.matrix.model import MatrixFile

    short = cell_from_arg('{"server": "valkey:8.0.1", "tls": true}')
    long = cell_from_arg('{"server": "valkey:8.0.1", "workload": {"tls": true}}')
    assert short.workload.tls and short.cell_id == long.cell_id
    assert cell_from_arg('{"server": "valkey:8.0.1", "tls": false}').workload is None
    both = cell_from_arg('{"server": "valkey:8.0.1", "tool": "memtier_benchmark", "tls": true, "workload": {"ratio": "1:10"}}')
    assert both.workload.tls and both.workload.ratio == "1:10"
    cells = expand_matrix(MatrixFile.model_validate({"name": "m", "groups": [{"server": "valkey:8.0.1", "tls": [False, True]}]}))
    assert [bool(c.workload and c.workload.tls) for c in cells] == [False, True]
