"""memtier's TOTALS row is the result's ``aggregate``, never a command series: in new results, and
in older results and histories that hold it as one (ingest, rebuild, export, compare, detection
and the site leave it out)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from click.testing import CliRunner
from factory import make_result, write_result

from vkbench.cli.export import export_group
from vkbench.compare import compare_dirs
from vkbench.detect import run_detection
from vkbench.history import HistoryStore
from vkbench.history.ingest import ingest
from vkbench.history.series import series_key
from vkbench.results import io as results_io
from vkbench.results.aggregate import split_aggregate
from vkbench.results.io import load_result
from vkbench.runner.aggregate import summarize_repetitions

TOTALS_RPS = 850_000.0


def memtier_result(**kwargs) -> dict:
    """A result as vkbench writes it today: SET and GET, the Totals row as aggregate."""
    return make_result(rps={"SET": 400_000.0, "GET": 450_000.0, "TOTALS": TOTALS_RPS}, tool="memtier_benchmark", **kwargs)


def as_older_result(result: dict) -> dict:
    """The same result as vkbench wrote it before: TOTALS a command in records and summary."""
    old = copy.deepcopy(result)
    old["summary"]["TOTALS"] = old.pop("aggregate")
    for repetition in old["repetitions"]:
        repetition["records"].append(repetition.pop("aggregate"))
    return old


def test_a_result_keeps_totals_as_its_aggregate():
    result = memtier_result()
    assert set(result["summary"]) == {"SET", "GET"}
    assert result["aggregate"]["rps"]["median"] == TOTALS_RPS
    for repetition in result["repetitions"]:
        assert {r["command"] for r in repetition["records"]} == {"SET", "GET"}
        assert repetition["aggregate"]["command"] == "TOTALS"


def test_the_runner_shape_is_split_before_writing():
    """execute.py builds records from the parser (TOTALS among them), summarizes, then splits."""
    records = [{"command": c, "rps": v, "latency_ms": {"avg": 1.0}} for c, v in (("SET", 1.0), ("TOTALS", 2.0))]
    repetitions = [{"index": i, "records": copy.deepcopy(records)} for i in range(3)]
    result = split_aggregate({"repetitions": repetitions, "summary": summarize_repetitions(repetitions)})
    assert set(result["summary"]) == {"SET"} and result["aggregate"]["rps"]["median"] == 2.0
    assert all(r["aggregate"]["command"] == "TOTALS" and len(r["records"]) == 1 for r in result["repetitions"])


def test_an_older_result_is_read_in_todays_shape(tmp_path):
    path = write_result(tmp_path, as_older_result(memtier_result()))
    assert "TOTALS" in json.loads(path.read_text())["summary"]
    loaded = load_result(path)
    assert set(loaded["summary"]) == {"SET", "GET"} and loaded["aggregate"]["rps"]["median"] == TOTALS_RPS


def _two_dirs(tmp_path: Path) -> tuple[Path, Path]:
    base, cand = tmp_path / "base", tmp_path / "cand"
    write_result(base, as_older_result(memtier_result(version="9.0.0")))
    write_result(cand, as_older_result(memtier_result(version="9.1.2")))
    return base, cand


def test_compare_and_export_leave_totals_out(tmp_path):
    base, cand = _two_dirs(tmp_path)
    rows, _ = compare_dirs(base, cand, metrics=("rps",))
    assert {r.command for r in rows} == {"SET", "GET"}
    out = CliRunner().invoke(export_group, ["gab", str(cand), "--out", str(tmp_path / "gab")])
    assert out.exit_code == 0, out.output
    names = [e["name"] for e in json.loads((tmp_path / "gab" / "rps.json").read_text())]
    assert len(names) == 2 and not any("TOTALS" in n for n in names)


def _history_with_an_older_totals_series(tmp_path: Path, monkeypatch) -> tuple[Path, str]:
    """A history an older vkbench ingested: TOTALS became a series there."""
    results = tmp_path / "res"
    for night in range(3):
        write_result(results, as_older_result(memtier_result(run_id=f"run-{night}",
                                                             timestamp=f"2026-11-0{night + 1}T02:00:00Z")))
    history = tmp_path / "history"
    with monkeypatch.context() as m:
        m.setattr(results_io, "split_aggregate", lambda data: data)    # the reader of an older vkbench
        ingest(HistoryStore(history), [results])
    totals_sid, _ = series_key(as_older_result(memtier_result()), "TOTALS")
    assert totals_sid in HistoryStore(history).index()["series"]
    return history, totals_sid


def test_an_older_histories_totals_series_is_ignored_by_detection_the_site_ingest_and_rebuild(tmp_path, monkeypatch):
    from vkbench.site.build import build_site

    history, totals_sid = _history_with_an_older_totals_series(tmp_path, monkeypatch)
    store = HistoryStore(history)

    doc = run_detection(history, write=False)
    assert doc["series"] == 2
    assert all(cp["series_id"] != totals_sid for cp in doc["change_points"])

    site = tmp_path / "site"
    build_site(history, site)
    published = [p for p in site.rglob("*.json") if totals_sid in p.read_text() or totals_sid in p.name]
    assert published == []

    # A new night (an older result again) adds to SET and GET only; the TOTALS series stays as it was.
    write_result(tmp_path / "night4", as_older_result(memtier_result(run_id="run-4", timestamp="2026-11-04T02:00:00Z")))
    before = store.index()["series"][totals_sid]["points"]
    report = ingest(store, [tmp_path / "night4"])
    assert report.added == 2
    assert store.index()["series"][totals_sid]["points"] == before

    # The index rebuilt from the shards and runs/ still lists it (so nothing is refused), readers still skip it.
    store.index_path.unlink()
    rebuilt = store.rebuild_index()
    assert totals_sid in rebuilt["series"]
    assert run_detection(history, write=False)["series"] == 2
