"""A publish reads each series 3-4 times (detection, confirmations, the site): shard bytes whose
lines were all checked once in this process are only parsed again (issue 23). Ingest still checks
every shard in full (tests/hardening/test_fault_injection.py: a damaged history stops ingest)."""

from __future__ import annotations

import pytest
from factory import make_result, write_result

from vkbench.errors import ResultFileError
from vkbench.history.ingest import ingest
from vkbench.history.store import HistoryStore


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
