"""Issue 23: one store parses each shard once (a publish hands the ingest's store to detection,
confirmations and the site), and reads it again when the file changed or the store wrote it."""

from __future__ import annotations

import os

import pytest
from factory import make_result, write_result

from vkbench.errors import ResultFileError
from vkbench.history.ingest import ingest
from vkbench.history.store import HistoryStore


def _history(tmp_path, nights=2):
    store = HistoryStore(tmp_path / "history")
    for n in range(nights):
        write_result(tmp_path / f"r{n}", make_result(run_id=f"night-{n}", timestamp=f"2026-10-0{n + 1}T02:00:00Z"))
        ingest(store, [tmp_path / f"r{n}"])
    return store


def _count_parses(monkeypatch):
    from vkbench.history import store as store_module

    calls = []
    original = store_module.parse_jsonl
    monkeypatch.setattr(store_module, "parse_jsonl", lambda data, path, **kw: calls.append(path) or original(data, path, **kw))
    return calls


def test_a_store_parses_each_shard_once(tmp_path, monkeypatch):
    store = _history(tmp_path)
    reader = HistoryStore(store.path)
    parses = _count_parses(monkeypatch)
    sids = reader.series_ids()
    first = {sid: reader.read_series(sid) for sid in sids}
    assert len(parses) == len(sids)                                   # one shard per series
    reader.verify(deep=True)
    assert {sid: reader.read_series(sid) for sid in sids} == first
    assert reader.hash_shards(reader.index()) == store.hash_shards(store.index())
    assert len(parses) == len(sids)                                   # nothing parsed again
    assert [len(p) for p in first.values()] == [2] * len(sids)


def test_the_ingest_store_rereads_what_it_wrote(tmp_path, monkeypatch):
    store = _history(tmp_path, nights=1)
    sid = store.series_ids()[0]
    assert len(store.read_series(sid)) == 1
    write_result(tmp_path / "later", make_result(run_id="night-later", timestamp="2026-10-09T02:00:00Z"))
    ingest(store, [tmp_path / "later"])
    assert [p["run_id"] for p in store.read_series(sid)] == ["night-0", "night-later"]


def test_a_shard_changed_after_it_was_read_is_checked_again(tmp_path):
    store = _history(tmp_path)
    sid = store.series_ids()[0]
    store.read_series(sid)
    shard = store.shard_path(sid, "2026-10")
    data = shard.read_bytes()
    shard.write_bytes(data[:-40])            # truncated mid-line, in place
    with pytest.raises(ResultFileError, match="truncated or edited"):
        store.read_series(sid)
    shard.write_bytes(data)
    assert len(store.read_series(sid)) == 2
    # the same size and modification time, other bytes (ctime still moves): refused
    stat = shard.stat()
    shard.write_bytes(data.replace(b"night-1", b"night-9"))
    os.utime(shard, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with pytest.raises(ResultFileError, match="truncated or edited"):
        store.read_series(sid)
    with pytest.raises(ResultFileError, match="truncated or edited"):
        store.hash_shards(store.index())


def test_publish_hands_the_ingest_store_to_detection_and_the_site(tmp_path, monkeypatch):
    import subprocess

    from vkbench.detect.runner import run_detection
    from vkbench.history.publish import publish
    from vkbench.site.build import build_site

    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    for n in range(2):
        write_result(tmp_path / f"r{n}", make_result(run_id=f"night-{n}", timestamp=f"2026-09-0{n + 1}T02:00:00Z"))
        publish([tmp_path / f"r{n}"], str(remote), "gh-pages")
    write_result(tmp_path / "r2", make_result(run_id="night-2", timestamp="2026-10-03T02:00:00Z"))
    parses = _count_parses(monkeypatch)
    seen = []

    def after_ingest(root, store):
        assert store.path == root / "history"
        ingested = len(parses)               # the ingest checked every shard, each parsed once
        assert ingested == len(store.series_ids())
        run_detection(root / "history", store=store)
        build_site(root / "history", root / "site", store=store)
        seen.extend(path.name.split(".")[0] for path in parses[ingested:])

    # the whole tree on disk (shallow=False: no partial checkout), so the ingest checks every shard
    report = publish([tmp_path / "r2"], str(remote), "gh-pages", before_commit_store=after_ingest, shallow=False)
    # detection and the site parsed again only the shards the ingest wrote, each once
    assert report.pushed and seen == ["2026-10"] * len(report.ingest.series)


def test_a_series_read_again_is_the_same_sorted_copy(tmp_path):
    store = _history(tmp_path, nights=3)
    sid = store.series_ids()[0]
    first = store.read_series(sid)
    first.reverse()                         # a caller's list is its own
    again = store.read_series(sid)
    assert [p["run_id"] for p in again] == ["night-0", "night-1", "night-2"]
    write_result(tmp_path / "earlier", make_result(run_id="night-early", timestamp="2026-09-30T02:00:00Z"))
    ingest(store, [tmp_path / "earlier"])
    assert [p["run_id"] for p in store.read_series(sid)] == ["night-early", "night-0", "night-1", "night-2"]
