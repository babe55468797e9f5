"""History store and ingest: layout, idempotency, atomicity, refusal of bad input."""

from __future__ import annotations

import json

import pytest
from factory import make_result, nightly_series, write_result

from vkbench.errors import ResultFileError
from vkbench.history import HistoryStore, ingest, series_key
from vkbench.history.series import segments, sid_of
from vkbench.history.store import read_jsonl


def test_series_key_is_dims_minus_repetitions_and_runner_plus_command_and_machine():
    result = make_result(machine_class="pi-cm4")
    sid, dims = series_key(result, "SET")
    assert "repetitions" not in dims and "runner" not in dims
    assert dims["command"] == "SET" and dims["machine_class"] == "pi-cm4"
    assert dims["version"] == "unstable" and dims["pipeline"] == 16
    assert sid == sid_of(dims) and len(sid) == 16
    # repetitions do not change the series; a dimension does
    assert series_key(make_result(machine_class="pi-cm4", repetitions=5), "SET")[0] == sid
    assert series_key(make_result(machine_class="pi-cm4", pipeline=1), "SET")[0] != sid
    assert series_key(result, "GET")[0] != sid


def test_sid_is_sha256_of_canonical_json():
    import hashlib

    dims = {"b": 1, "a": [1, 2], "command": "SET"}
    expected = hashlib.sha256(b'{"a":[1,2],"b":1,"command":"SET"}').hexdigest()[:16]
    assert sid_of(dims) == expected


def test_ingest_layout_and_index(tmp_path):
    paths = nightly_series(tmp_path / "res", [400_000, 410_000, 405_000], month="2026-10", workflow_run_url="https://example/runs/1")
    raw = paths[0].parent / "valkey-unstable_standalone_io2_vb_P16_c50_d3.raw"
    raw.mkdir()
    (raw / "rep0.txt").write_text("raw output")
    store = HistoryStore(tmp_path / "h")
    report = ingest(store, [tmp_path / "res"])
    assert (report.files, report.added, report.skipped, report.new_series) == (3, 3, 0, 1)

    assert json.loads((tmp_path / "h" / "format.json").read_text()) == {"history_version": 3}
    index = store.index()
    assert index["history_version"] == 3 and index["runs"] == 3
    (sid,) = index["series"]
    entry = index["series"][sid]
    assert entry["points"] == 3 and entry["shards"] == ["2026-10"] and entry["arch"] == "x86_64"
    assert entry["first"] == "2026-10-01T02:00:00Z" and entry["last"] == "2026-10-03T02:00:00Z"
    assert entry["last_point"]["rps"] == 405_000 and entry["last_point"]["run_id"] == "run-0002"
    assert (tmp_path / "h" / "series" / sid[:2] / sid / f"2026-10.{sid}.jsonl").exists()
    # verbatim copy + raw outputs + fingerprint once
    copy = tmp_path / "h" / "runs" / "2026-10" / "run-0000" / "valkey-unstable_standalone_io2_vb_P16_c50_d3.json"
    assert copy.read_bytes() == paths[0].read_bytes()
    assert (copy.parent / "valkey-unstable_standalone_io2_vb_P16_c50_d3.raw" / "rep0.txt").read_text() == "raw output"
    assert list(store.fingerprints()) == ["fp-aaaa"]

    point = store.read_series(sid)[0]
    assert list(point) == ["run_id", "cell_id", "timestamp", "version", "server_version", "commit", "build_id",
                           "fingerprint_id", "valid", "flags", "workflow_run_url", "metrics"]
    assert point["metrics"]["rps"]["median"] == 400_000 and point["metrics"]["rps"]["n"] == 3
    assert set(point["metrics"]) == {"rps", "p50", "p99", "avg"}
    assert point["workflow_run_url"] == "https://example/runs/1"


def test_ingest_is_idempotent(tmp_path):
    nightly_series(tmp_path / "res", [1.0e5, 1.1e5])
    store = HistoryStore(tmp_path / "h")
    ingest(store, [tmp_path / "res"])
    index_before = (tmp_path / "h" / "index.json").read_bytes()
    report = ingest(store, [tmp_path / "res"])
    assert (report.added, report.skipped) == (0, 2)
    assert (tmp_path / "h" / "index.json").read_bytes() == index_before   # not even rewritten
    (sid,) = store.series_ids()
    assert len(store.read_series(sid)) == 2


def test_same_file_twice_in_one_batch_counts_once(tmp_path):
    path = write_result(tmp_path / "res", make_result())
    report = ingest(HistoryStore(tmp_path / "h"), [path, path])
    assert (report.files, report.added) == (1, 2)      # two commands, one file


def test_shards_by_month_and_sorted_reading(tmp_path):
    store = HistoryStore(tmp_path / "h")
    # ingest out of order: December first, then October and November
    late = write_result(tmp_path / "a", make_result(run_id="r3", timestamp="2026-12-02T02:00:00Z", rps={"SET": 3.0}))
    ingest(store, [late])
    early = [
        write_result(tmp_path / "b", make_result(run_id="r1", timestamp="2026-10-31T23:00:00Z", rps={"SET": 1.0})),
        write_result(tmp_path / "b", make_result(run_id="r2", timestamp="2026-11-01T00:30:00Z", rps={"SET": 2.0})),
    ]
    ingest(store, early)
    (sid,) = store.series_ids()
    assert store.shard_months(sid) == ["2026-10", "2026-11", "2026-12"]
    assert store.index()["series"][sid]["shards"] == ["2026-10", "2026-11", "2026-12"]
    assert [p["run_id"] for p in store.read_series(sid)] == ["r1", "r2", "r3"]
    entry = store.index()["series"][sid]
    assert entry["points"] == 3 and entry["first"].startswith("2026-10-31") and entry["last_point"]["run_id"] == "r3"
    assert sorted(p.name for p in (tmp_path / "h" / "runs").iterdir()) == ["2026-10", "2026-11", "2026-12"]


def test_a_bad_file_in_the_batch_writes_nothing(tmp_path):
    good = nightly_series(tmp_path / "res", [1.0e5, 1.1e5])
    bad = tmp_path / "res" / "zz-broken.json"
    bad.write_text('{"schema_version": 1, "kind": "vkbench.result"')     # truncated
    store = HistoryStore(tmp_path / "h")
    with pytest.raises(ResultFileError) as exc:
        ingest(store, [*good, bad])
    assert "zz-broken.json" in str(exc.value)
    assert not (tmp_path / "h").exists() or not any((tmp_path / "h").iterdir())


def test_a_bad_file_leaves_an_existing_history_untouched(tmp_path):
    store = HistoryStore(tmp_path / "h")
    ingest(store, nightly_series(tmp_path / "res", [1.0e5]))
    snapshot = {p: p.read_bytes() for p in (tmp_path / "h").rglob("*") if p.is_file()}
    invalid = make_result(run_id="new")
    invalid = dict(invalid, validity={"valid": "yes", "flags": []})      # fails the schema
    bad = tmp_path / "new" / "invalid.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps(invalid))
    fresh = write_result(tmp_path / "new", make_result(run_id="fresh", timestamp="2026-10-05T02:00:00Z"))
    with pytest.raises(ResultFileError, match="invalid.json"):
        ingest(store, [fresh, bad])
    assert {p: p.read_bytes() for p in (tmp_path / "h").rglob("*") if p.is_file()} == snapshot


def test_newer_result_schema_is_refused_naming_the_file(tmp_path):
    newer = dict(make_result(), schema_version=2)
    path = tmp_path / "future.json"
    path.write_text(json.dumps(newer))
    with pytest.raises(ResultFileError, match=r"future\.json.*schema_version 2 is newer"):
        ingest(HistoryStore(tmp_path / "h"), [path])


def test_corrupt_index_is_an_error_not_an_empty_history(tmp_path):
    store = HistoryStore(tmp_path / "h")
    ingest(store, nightly_series(tmp_path / "res", [1.0e5]))
    (tmp_path / "h" / "index.json").write_text('{"history_version": 1, "series": {')
    with pytest.raises(ResultFileError, match="index.json: corrupt JSON"):
        store.index()
    with pytest.raises(ResultFileError, match="index.json"):
        ingest(store, nightly_series(tmp_path / "more", [1.0e5], start_day=5))


def test_newer_history_version_is_refused(tmp_path):
    store = HistoryStore(tmp_path / "h")
    ingest(store, nightly_series(tmp_path / "res", [1.0e5]))
    (tmp_path / "h" / "format.json").write_text('{"history_version": 99}')
    with pytest.raises(ResultFileError, match="history_version 99 is newer"):
        store.index()


def test_corrupt_series_line_names_the_shard(tmp_path):
    store = HistoryStore(tmp_path / "h")
    ingest(store, nightly_series(tmp_path / "res", [1.0e5]))
    (sid,) = store.series_ids()
    shard = store.shard_path(sid, "2026-10")
    shard.write_text(shard.read_text() + '{"run_id": "x", "timest\n')
    with pytest.raises(ResultFileError, match=r"2026-10\.[0-9a-f]{16}\.jsonl:2: corrupt series line"):
        read_jsonl(shard)
    with pytest.raises(ResultFileError, match=r"2026-10\.[0-9a-f]{16}\.jsonl: .* where index.json records"):
        store.read_series(sid)


def test_crash_before_the_index_heals_on_reingest(tmp_path, monkeypatch):
    """Shards written, index not: re-running the ingest adds nothing twice and fixes the index."""
    store = HistoryStore(tmp_path / "h")
    paths = nightly_series(tmp_path / "res", [1.0e5, 1.1e5])

    def crash(self, index):
        raise KeyboardInterrupt("power cut")

    monkeypatch.setattr(HistoryStore, "write_index", crash)
    with pytest.raises(KeyboardInterrupt):
        ingest(store, paths)
    monkeypatch.undo()
    assert not (tmp_path / "h" / "index.json").exists()
    assert not list((tmp_path / "h").rglob(".*.jsonl.*"))        # no temp files left behind
    report = ingest(store, paths)
    assert (report.added, report.skipped) == (0, 2)
    (sid,) = store.series_ids()
    assert store.index()["series"][sid]["points"] == 2
    assert len(store.read_series(sid)) == 2


def test_segments_from_fingerprints():
    points = [{"fingerprint_id": f} for f in ["a", "a", "b", "b", "b", "a"]]
    assert segments(points) == [
        {"start_index": 0, "fingerprint_id": "a"},
        {"start_index": 2, "fingerprint_id": "b"},
        {"start_index": 5, "fingerprint_id": "a"},
    ]


def test_raw_dirs_inside_a_results_dir_are_not_results(tmp_path):
    write_result(tmp_path / "res", make_result())
    raw = tmp_path / "res" / "cell.raw"
    raw.mkdir()
    (raw / "memtier.json").write_text('{"ALL STATS": {}}')       # memtier's own JSON
    report = ingest(HistoryStore(tmp_path / "h"), [tmp_path / "res"])
    assert report.files == 1


def test_rebuild_index_repairs_a_lost_index(tmp_path):
    from click.testing import CliRunner

    from vkbench.cli.ingest import ingest_cmd

    store = HistoryStore(tmp_path / "h")
    ingest(store, nightly_series(tmp_path / "res", [1.0e5, 1.1e5, 1.2e5]))
    good = store.index()
    (tmp_path / "h" / "index.json").write_text("garbage")
    out = CliRunner().invoke(ingest_cmd, ["--history", str(tmp_path / "h"), "--rebuild-index"])
    assert out.exit_code == 0, out.output
    assert "index rebuilt from the shards: 1 series, 3 runs" in out.output
    rebuilt = store.index()
    assert rebuilt["series"] == good["series"] and rebuilt["runs"] == 3
