"""The server machine's fingerprint recorded for a remote engine: address without credentials."""

from __future__ import annotations

import pytest

from vkbench.topology.docker_engine import engine_address


@pytest.mark.parametrize(("docker_host", "recorded"), [
    ("tcp://198.18.4.1:2375", "tcp://198.18.4.1:2375"),
    ("ssh://pi@pi-server", "ssh://pi-server"),
    ("tcp://user:secret@10.0.0.5:2376", "tcp://10.0.0.5:2376"),
    ("unix:///run/podman/podman.sock", "unix:///run/podman/podman.sock"),
])
def test_the_engine_address_is_recorded_without_user_or_password(monkeypatch, docker_host, recorded):
    monkeypatch.setenv("DOCKER_HOST", docker_host)
    assert engine_address() == recorded


def test_no_docker_host_records_nothing(monkeypatch):
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    assert engine_address() is None
