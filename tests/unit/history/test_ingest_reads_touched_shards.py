"""Ingest reads the shards a night appends to, not the whole history (issue 23): the other
shards are checked by name and size; the deep check of every shard stays with
`vkbench history verify`."""

from __future__ import annotations

import pytest
from factory import make_result, write_result

from vkbench.errors import ResultFileError
from vkbench.history.ingest import ingest
from vkbench.history.store import HistoryStore


def test_ingest_reads_only_the_shards_the_night_appends_to(tmp_path, monkeypatch):
    store = HistoryStore(tmp_path / "history")
    for i in range(4):   # two months of two series (versions), then a night of one series only
        for version in ("unstable", "8.0"):
            write_result(tmp_path / "past", make_result(run_id=f"night-{i}", version=version,
                                                        timestamp=f"2026-{10 + i // 2}-{1 + i:02d}T02:00:00Z"))
    ingest(store, [tmp_path / "past"])
    index = store.index()
    assert sum(len(e["shards"]) for e in index["series"].values()) == 8   # 4 series x 2 months

    read: list[tuple[str, str]] = []
    original = HistoryStore.verify_shard

    def spy(self, sid, month, entry, data=None):
        read.append((sid, month))
        return original(self, sid, month, entry, data)

    monkeypatch.setattr(HistoryStore, "verify_shard", spy)
    write_result(tmp_path / "night", make_result(run_id="night-9", version="unstable", timestamp="2026-11-20T02:00:00Z"))
    report = ingest(store, [tmp_path / "night"])
    assert report.added == 2
    unstable = {sid for sid, e in store.index()["series"].items() if e["dims"]["version"] == "unstable"}
    assert len(unstable) == 2
    assert sorted(read) == sorted((sid, "2026-11") for sid in unstable)


def test_an_untouched_shard_edited_in_place_is_left_to_the_deep_verify(tmp_path):
    store = HistoryStore(tmp_path / "history")
    write_result(tmp_path / "past", make_result(run_id="night-0", timestamp="2026-10-01T02:00:00Z"))
    ingest(store, [tmp_path / "past"])
    sid = sorted(store.index()["series"])[0]
    shard = store.shard_path(sid, "2026-10")
    data = bytearray(shard.read_bytes())
    i = data.index(b'"median"')
    data[i + 10] = ord("9") if data[i + 10] != ord("9") else ord("8")   # same size, other number
    shard.write_bytes(bytes(data))
    write_result(tmp_path / "night", make_result(run_id="night-1", timestamp="2026-11-01T02:00:00Z"))
    ingest(store, [tmp_path / "night"])          # touches November only
    with pytest.raises(ResultFileError, match="2026-10"):
        store.verify(deep=True)                  # what `vkbench history verify` runs


def test_shard_bytes_are_line_checked_once_per_process(tmp_path, monkeypatch):
    from vkbench.history import store as store_module

    store = HistoryStore(tmp_path / "history")
    write_result(tmp_path / "past", make_result(run_id="night-0", timestamp="2026-10-01T02:00:00Z"))
    ingest(store, [tmp_path / "past"])
    sid = sorted(store.index()["series"])[0]
    monkeypatch.setattr(store_module, "_CHECKED_SHARDS", set())
    calls = []
    original = store_module.check_point
    monkeypatch.setattr(store_module, "check_point", lambda p, s: calls.append(s) or original(p, s))
    first = store.read_series(sid)
    assert len(calls) == 1
    assert store.read_series(sid) == first      # the same points, not checked again
    assert len(calls) == 1
    # other bytes (a bad line) are checked, and refused
    shard = store.shard_path(sid, "2026-10")
    shard.write_bytes(shard.read_bytes().replace(b'"run_id": "night-0"', b'"run_id": "../x"').replace(b'"run_id":"night-0"', b'"run_id":"../x"'))
    with pytest.raises(ResultFileError):
        store_module.read_jsonl(shard)
    assert len(calls) == 2
