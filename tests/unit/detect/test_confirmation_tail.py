"""Issue 23: same-night confirmation reads the end of each series (whole month shards, newest
first), not ten years of it, and asks for exactly what the whole series gives: when the tail
does not decide (a last segment shorter than the rule's window, invalid runs, no good run inside
it) it reads the whole series."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from factory import make_result, write_result

from vkbench.detect import confirmations
from vkbench.detect.params import DetectionParams
from vkbench.history import HistoryStore
from vkbench.history import store as store_module
from vkbench.history.ingest import ingest

REPO = "https://github.com/valkey-io/valkey"
START = datetime(2026, 1, 1, 2, 0, tzinfo=timezone.utc)


def _history(tmp_path, nights: int, *, drop_from: int, factor: float = 0.9, invalid=(), machine_from: int | None = None):
    rng = np.random.default_rng(7)
    out = tmp_path / "res"
    for night in range(nights):
        level = factor if night >= drop_from else 1.0
        commit = f"{night:06x}" + "ab" * 17
        other_machine = machine_from is not None and night >= machine_from
        result = make_result(run_id=f"night-{night:04d}", cell_id="io1", rps={"SET": 400_000 * level * (1 + rng.normal(0, 0.01))},
                             io_threads=1, spread=0.005, timestamp=(START + timedelta(days=night)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                             commit=commit, version="unstable", valid=night not in invalid,
                             fingerprint_id="fp-other" if other_machine else "fp-aaaa")
        result["subject"]["code"] = {"url": REPO, "commit": commit, "ref": "unstable"}
        result["subject"]["build"] = {"source": "source-build", "id": "sha256:x", "config": {"id": "cfg1", "malloc": "libc"}}
        write_result(out / f"{night:04d}", result)
    store = HistoryStore(tmp_path / "h")
    ingest(store, [out])
    return store


def _requests(store: HistoryStore, change_points=()):
    return confirmations.confirmation_requests(HistoryStore(store.path), list(change_points), DetectionParams())


@pytest.fixture
def months_read(monkeypatch):
    read: list[str] = []
    original = HistoryStore._parsed_shard

    def counting(self, sid, month, entry, **kw):
        read.append(month)
        return original(self, sid, month, entry, **kw)

    monkeypatch.setattr(HistoryStore, "_parsed_shard", counting)
    return read


def _whole(monkeypatch, store, change_points=()):
    with monkeypatch.context() as m:
        m.setattr(confirmations, "CANDIDATE_TAIL", 10**9)
        return _requests(store, change_points)


def test_a_drop_on_the_newest_night_is_found_from_the_last_months_only(tmp_path, monkeypatch, months_read):
    store = _history(tmp_path, 400, drop_from=399)          # 13 months
    tail = _requests(store)
    assert len(tail) == 1 and tail[0]["bad"]["run_id"] == "night-0399" and tail[0]["good"]["run_id"] == "night-0398"
    assert len(set(months_read)) <= 5, sorted(set(months_read))
    months_read.clear()
    assert _whole(monkeypatch, store) == tail
    assert len(set(months_read)) == 14


def test_a_level_series_asks_for_nothing_either_way(tmp_path, monkeypatch):
    store = _history(tmp_path, 200, drop_from=10**6)
    assert _requests(store) == [] == _whole(monkeypatch, store)


def test_a_change_point_inside_the_tail_is_respected(tmp_path, monkeypatch):
    store = _history(tmp_path, 200, drop_from=198)
    sid = HistoryStore(store.path).series_ids()[0]
    accepted = [{"series_id": sid, "metric": "rps", "index": 198}]
    tail = _requests(store, accepted)
    assert tail == _whole(monkeypatch, store, accepted)
    assert not any(s["metric"] == "rps" for r in tail for s in r["series"])    # detection reports it
    assert any(s["metric"] == "rps" for r in _requests(store) for s in r["series"])  # else it would be asked for


@pytest.mark.parametrize("case", ["invalid-runs-fill-the-tail", "new-machine-short-segment"])
def test_when_the_tail_does_not_decide_the_whole_series_is_read(tmp_path, monkeypatch, months_read, case):
    if case == "invalid-runs-fill-the-tail":
        # every run of the last ~5 months but the newest few invalid: the rule's window of valid
        # runs lies further back than the tail
        store = _history(tmp_path, 300, drop_from=299, invalid=range(150, 297))
    else:
        # a machine change 10 nights ago: the last segment is inside the tail and decides alone
        store = _history(tmp_path, 300, drop_from=299, machine_from=290)
    tail = _requests(store)
    read_tail = set(months_read)
    assert tail == _whole(monkeypatch, store)
    if case == "invalid-runs-fill-the-tail":
        assert len(tail) == 1 and tail[0]["good"]["run_id"] == "night-0298"
        assert len(read_tail) == 10               # read whole: 300 nights are 10 months
    else:
        assert len(read_tail) <= 5


def test_read_series_tail_is_the_end_of_read_series(tmp_path):
    store = _history(tmp_path, 150, drop_from=10**6)
    reader = HistoryStore(store.path)
    sid = reader.series_ids()[0]
    entry = reader.index()["series"][sid]
    whole = reader.read_series(sid, entry)
    for at_least in (1, 29, 31, 60, 149, 150, 10**6):
        offset, tail = reader.read_series_tail(sid, entry, at_least)
        assert len(tail) >= min(at_least, len(whole))
        assert whole[offset:] == tail


def test_a_damaged_tail_shard_is_refused(tmp_path):
    store = _history(tmp_path, 90, drop_from=89)
    reader = HistoryStore(store.path)
    sid = reader.series_ids()[0]
    entry = reader.index()["series"][sid]
    newest = reader.shard_path(sid, sorted(entry["shards"])[-1])
    newest.write_bytes(newest.read_bytes()[:-10] + b"0123456789")
    with pytest.raises(store_module.ResultFileError, match="does not match index.json"):
        reader.read_series_tail(sid, entry, 10)
