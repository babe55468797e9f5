"""Issue 23: history/checked.json, the line-check ledger. A reader checks the lines of a series'
newest month only, when the ledger records the digest of exactly its closed shards; bytes are
always checked against the index, and an edited closed shard is line-checked again (and
refused) even when index.json was fixed to match it."""

from __future__ import annotations

import json

import pytest
from factory import make_result, write_result

from vkbench.errors import ResultFileError
from vkbench.history import store as store_module
from vkbench.history.checked import LEDGER_NAME, MAX_LEDGER_BYTES, checks_code, closed_shards_digest, read_ledger
from vkbench.history.ingest import ingest
from vkbench.history.store import HistoryStore, shard_digest

MONTHS = ("2026-08", "2026-09", "2026-10")


def _history(tmp_path, months=MONTHS, nights=2) -> HistoryStore:
    store = HistoryStore(tmp_path / "history")
    for month in months:
        for night in range(nights):
            res = tmp_path / f"r-{month}-{night}"
            write_result(res, make_result(run_id=f"run-{month}-{night}", timestamp=f"{month}-0{night + 1}T02:00:00Z"))
            ingest(store, [res])
    return store


@pytest.fixture
def line_checks(monkeypatch):
    """The shards whose lines were checked (check_point calls, by file), with the process-wide
    memo of checked bytes emptied so that it cannot stand in for the ledger."""
    monkeypatch.setattr(store_module, "_CHECKED_SHARDS", set())
    seen: list[str] = []
    original = store_module.check_point

    def counting(point, source):
        seen.append(str(source).rsplit(":", 1)[0])
        return original(point, source)

    monkeypatch.setattr(store_module, "check_point", counting)
    return seen


def _fix_index(store: HistoryStore, sid: str, month: str) -> None:
    """A hand edit that also fixed index.json's digest (the fault-injection suite's *-reindexed)."""
    index = json.loads(store.index_path.read_text())
    index["series"][sid]["shard_digests"][month] = shard_digest(store.shard_path(sid, month).read_bytes())
    store.index_path.write_text(json.dumps(index))


def _months(line_checks) -> set[str]:
    return {source.rsplit("/", 1)[-1].split(".")[0] for source in line_checks}


def _months_a_fresh_reader_checks(store: HistoryStore, line_checks) -> set[str]:
    """The months whose lines a new reader of the first series checks (the ingests' own checks,
    and what they left in the process-wide memo, forgotten first)."""
    line_checks.clear()
    store_module._CHECKED_SHARDS.clear()
    reader = HistoryStore(store.path)
    reader.read_series(reader.series_ids()[0])
    return _months(line_checks)


def _ingest_one_more(store: HistoryStore, tmp_path, run_id: str, day: int) -> None:
    res = tmp_path / run_id
    write_result(res, make_result(run_id=run_id, timestamp=f"{MONTHS[-1]}-{day:02d}T02:00:00Z"))
    ingest(HistoryStore(store.path), [res])


def test_ingest_records_every_series_closed_shards(tmp_path):
    store = _history(tmp_path)
    ledger = read_ledger(store.path)
    index = store.index()
    assert set(ledger) == set(index["series"]) and ledger
    for sid, entry in index["series"].items():
        assert ledger[sid] == closed_shards_digest(entry)


def test_a_reader_line_checks_only_the_newest_month(tmp_path, line_checks):
    store = _history(tmp_path)
    assert _months_a_fresh_reader_checks(store, line_checks) == {MONTHS[-1]}
    assert len(HistoryStore(store.path).read_series(store.series_ids()[0])) == len(MONTHS) * 2
    # the deep verify of an ingest too: the closed months' bytes are hashed, not parsed
    line_checks.clear()
    HistoryStore(store.path).verify(deep=True)
    assert _months(line_checks) == {MONTHS[-1]}


def test_without_the_ledger_every_line_is_checked_and_the_next_ingest_writes_it(tmp_path, line_checks):
    store = _history(tmp_path)
    (store.path / LEDGER_NAME).unlink()
    assert _months_a_fresh_reader_checks(store, line_checks) == set(MONTHS)
    _ingest_one_more(store, tmp_path, "again", 20)
    assert set(read_ledger(store.path)) == set(store.series_ids())


def test_a_ledger_of_other_line_checks_vouches_for_nothing(tmp_path, line_checks):
    store = _history(tmp_path)
    path = store.path / LEDGER_NAME
    doc = json.loads(path.read_text())
    assert doc["checks"] == checks_code()
    doc["checks"] = "0" * 64            # written by a vkbench whose checks were laxer
    path.write_text(json.dumps(doc))
    assert read_ledger(store.path) == {}
    assert _months_a_fresh_reader_checks(store, line_checks) == set(MONTHS)
    _ingest_one_more(store, tmp_path, "again", 20)     # re-checked under these checks, recorded again
    assert json.loads(path.read_text())["checks"] == checks_code() and read_ledger(store.path)


@pytest.mark.parametrize("edit", ["string-metric", "javascript-url", "binary"])
def test_an_edited_closed_shard_is_line_checked_again_even_with_a_fixed_index(tmp_path, edit):
    store = _history(tmp_path)
    sid = store.series_ids()[0]
    shard = store.shard_path(sid, MONTHS[0])
    lines = shard.read_text().splitlines()
    point = json.loads(lines[0])
    if edit == "string-metric":
        point["metrics"]["rps"]["median"] = "fast"
        shard.write_text("\n".join([json.dumps(point), *lines[1:]]) + "\n")
    elif edit == "javascript-url":
        point["workflow_run_url"] = "javascript:alert(1)"
        shard.write_text("\n".join([json.dumps(point), *lines[1:]]) + "\n")
    else:
        shard.write_bytes(b"\x00\xff" * 64 + b"\n")
    _fix_index(store, sid, MONTHS[0])
    with pytest.raises(ResultFileError) as err:
        HistoryStore(store.path).read_series(sid)
    assert shard.name in str(err.value)
    res = tmp_path / "new"
    write_result(res, make_result(run_id="new", timestamp=f"{MONTHS[-1]}-21T02:00:00Z"))
    with pytest.raises(ResultFileError) as err:
        ingest(HistoryStore(store.path), [res])
    assert shard.name in str(err.value)


def test_bytes_are_still_checked_against_the_index(tmp_path):
    store = _history(tmp_path)
    sid = store.series_ids()[0]
    shard = store.shard_path(sid, MONTHS[0])
    data = bytearray(shard.read_bytes())
    data[data.index(b'"run_id":"') + 10] ^= 1        # same size, another byte: only the sha256 tells
    shard.write_bytes(bytes(data))
    with pytest.raises(ResultFileError, match="does not match index.json"):
        HistoryStore(store.path).read_series(sid)


def test_a_nightly_ingest_into_the_newest_month_leaves_the_ledger_alone(tmp_path):
    store = _history(tmp_path)
    before = (store.path / LEDGER_NAME).read_bytes()
    res = tmp_path / "night"
    write_result(res, make_result(run_id="night", timestamp=f"{MONTHS[-1]}-25T02:00:00Z"))
    ingest(HistoryStore(store.path), [res])
    assert (store.path / LEDGER_NAME).read_bytes() == before
    # a new month closes the last one: the ledger follows
    res = tmp_path / "next-month"
    write_result(res, make_result(run_id="next-month", timestamp="2026-11-01T02:00:00Z"))
    ingest(HistoryStore(store.path), [res])
    after = read_ledger(store.path)
    index = HistoryStore(store.path).index()
    assert after != json.loads(before)["closed_shards"]
    assert all(after[sid] == closed_shards_digest(index["series"][sid]) for sid in after)


@pytest.mark.parametrize("content, needle", [
    (b"{not json", "corrupt JSON"),
    (b"[]", "top level is not an object"),
    (json.dumps({"format": 2, "checks": "0" * 64, "closed_shards": {}}).encode(), "ledger format 2 is newer"),
    (json.dumps({"format": 1, "checks": "0" * 64, "closed_shards": {"abc": "not-hex"}}).encode(), "closed_shards/abc"),
    (json.dumps({"format": 1, "checks": "0" * 64}).encode(), "closed_shards"),
    (json.dumps({"format": 1, "closed_shards": {}}).encode(), "checks"),
])
def test_a_damaged_or_newer_ledger_is_an_error_naming_it(tmp_path, content, needle):
    store = _history(tmp_path, months=MONTHS[:2], nights=1)
    (store.path / LEDGER_NAME).write_bytes(content)
    with pytest.raises(ResultFileError) as err:
        HistoryStore(store.path).read_series(store.series_ids()[0])
    assert LEDGER_NAME in str(err.value) and needle in str(err.value)
    assert "delete" in err.value.hint or "upgrade" in err.value.hint


def test_an_oversized_ledger_is_refused_before_it_is_read(tmp_path):
    store = _history(tmp_path, months=MONTHS[:2], nights=1)
    with open(store.path / LEDGER_NAME, "wb") as fh:
        fh.truncate(MAX_LEDGER_BYTES + 1)
    with pytest.raises(ResultFileError, match="more than a line-check ledger"):
        read_ledger(store.path)


def test_a_series_of_one_month_has_no_closed_shards(tmp_path):
    store = _history(tmp_path, months=MONTHS[:1])
    assert read_ledger(store.path) == {}
    assert not (store.path / LEDGER_NAME).exists()      # nothing to record: no file, no commit
