"""`build_site`: data files are correct and compact; bad histories fail clearly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vkbench.errors import MissingBinaryError, ResultFileError
from vkbench.site import build as build_module
from vkbench.site.build import build_site
from vkbench.site.compact import epoch, num
from vkbench.site.series_data import load_series

import history_factory


def load(path: Path):
    return json.loads(path.read_text())


def decode_times(series: dict) -> list[int]:
    out, acc = [], series["t0"]
    for d in series["dt"]:
        acc += d
        out.append(acc)
    return out


def test_layout(built_site):
    out, report, facts = built_site
    assert (out / "index.html").is_file() and (out / ".nojekyll").is_file()
    for name in ("uPlot.iife.min.js", "uPlot.min.css"):
        assert (out / "assets" / "vendor" / name).is_file()
    assert (out / "assets" / "app" / "main.js").is_file()
    assert "{{BUILD}}" not in (out / "index.html").read_text()
    assert report.series == len(facts["sids"]) and report.points == len(facts["sids"]) * history_factory.RUNS
    assert report.references == len(list((Path(__file__).parents[3] / "results" / "reference").glob("*.json")))


def test_index_lists_every_series_with_dims_and_last_values(built_site):
    out, _, facts = built_site
    index = load(out / "data" / "index.json")
    assert {s["id"] for s in index["series"]} == set(facts["sids"])
    dims = index["dims"]
    for row in index["series"]:
        decoded = {k: index["values"][j][row["d"][j]] for j, k in enumerate(dims)}
        expected = facts["sids"][row["id"]]
        assert decoded["server"] == f"valkey:{expected['version']}"
        assert decoded["io_threads"] == expected["io_threads"] and decoded["command"] == expected["command"]
        assert decoded["arch"] == history_factory.CLASSES[expected["machine_class"]]
        last = facts["points"][row["id"]][-1]
        assert row["last"]["m"]["rps"][0] == num(last["metrics"]["rps"]["median"])
        assert row["n"] == history_factory.RUNS
    assert set(index["classes"]) == set(history_factory.CLASSES)
    x86 = index["classes"]["cloud-x86"]
    assert x86["open_regressions"] == 1
    assert x86["latest"]["series"] == x86["series"], "every series of the class is in its newest run"
    assert x86["latest"]["url"].startswith("https://github.com/valkey-io/vkbench/actions/runs/")
    assert index["incidents"] == {"open": 1, "open_regressions": 1, "improvements": 1}
    assert index["commit_repos"]["valkey"] == "valkey-io/valkey"


def test_series_file_columns_match_the_history(built_site):
    out, _, facts = built_site
    sid = facts["regression_sid"]
    points = facts["points"][sid]
    s, latency = load_series(out / "data" / "series", sid)
    assert s["n"] == len(points)
    assert decode_times(s) == [epoch(p["timestamp"]) for p in points]
    rps = s["m"]["rps"]
    assert rps["med"] == [num(p["metrics"]["rps"]["median"]) for p in points]
    assert all(lo <= med * 1.0001 and hi >= med * 0.9999 for lo, med, hi in zip(rps["lo"], rps["med"], rps["hi"]))
    assert s["ok"] == [1 if p["valid"] else 0 for p in points]
    assert [s["commits"][c] for c in s["c"]] == [p["commit"][:12] for p in points]
    assert [s["run_prefix"] + r for r in s["runs"]] == [p["workflow_run_url"] for p in points]
    assert [s["fps"][f]["id"] for f in s["fp"]] == [p["fingerprint_id"] for p in points]
    assert "AMD EPYC" in s["fps"][0]["label"]
    assert s["cp"] == [{"metric": "rps", "i": history_factory.REGRESSION["at"], "dir": "regression", "mag": -0.08, "incident": "inc-set-io2-x86"}]
    assert s["noise"]["rps"] == 0.012
    assert set(s["m"]) == {"rps", "p50"} and set(s["more"]) == {"avg", "min", "p95", "p99", "p999", "max"}
    assert latency["m"]["p99"]["med"] == [num(p["metrics"]["p99"]["median"]) for p in points]


def test_invalid_points_flags_segments_and_annotations(built_site):
    out, _, facts = built_site
    imp = load(out / "data" / "series" / f"{facts['improvement_sid']}.json")   # the head
    assert imp["seg"] == [0, history_factory.KERNEL_UPDATE_AT]
    assert imp["notes"] == [{"i": history_factory.IMPROVEMENT["at"], "text": "io-threads prefetch batching merged", "incident": "inc-get-io2-pi"}]
    io4 = next(sid for sid, d in facts["sids"].items() if d["io_threads"] == 4)
    s, _ = load_series(out / "data" / "series", io4)
    invalid = [i for i, ok in enumerate(s["ok"]) if not ok]
    assert invalid == [i for i, p in enumerate(facts["points"][io4]) if not p["valid"]] and invalid
    assert all(s["flags"][s["fl"][i]] == ["client-bound"] for i in invalid)


def test_detect_and_reference_files(built_site):
    out, _, facts = built_site
    detect = load(out / "data" / "detect.json")
    assert [i["id"] for i in detect["incidents"]] == ["inc-set-io2-x86", "inc-get-io2-pi"]
    assert "noise" not in detect and "segments" not in detect, "per-series detail lives in the series files"
    refs = load(out / "data" / "reference.json")["references"]
    pi = [r for r in refs if r["machine_class"] == "pi-cm4"]
    assert [r["values"]["SET"]["rps"] for r in pi] == [173040, 394368, 345495, 609050, 632791, 1122840]
    assert all(r["where"] is None or "://" not in r["where"] for r in refs)


def test_data_files_are_compact(built_site):
    out, _, facts = built_site
    n_series, n_points = len(facts["sids"]), len(facts["sids"]) * history_factory.RUNS
    series_dir = out / "data" / "series"
    main_bytes = sum(p.stat().st_size for p in series_dir.rglob("*.json") if not p.name.endswith(".latency.json"))
    assert main_bytes / n_points < 110, "headline file: about 100 bytes per point or less"
    assert (out / "data" / "index.json").stat().st_size / n_series < 600
    assert (out / "data" / "detect.json").stat().st_size < 4096




def test_rebuild_keeps_siblings_and_drops_stale_data(small_history, tmp_path):
    root, _ = small_history
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "keep.txt").write_text("gh-pages history lives here")
    stale = tmp_path / "data" / "series" / "0000000000000000.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}")
    build_site(root, tmp_path)
    assert (tmp_path / "history" / "keep.txt").is_file()
    assert not stale.exists()


def test_missing_index_is_a_clear_error(tmp_path):
    (tmp_path / "series").mkdir()
    with pytest.raises(ResultFileError) as err:
        build_site(tmp_path, tmp_path / "out")
    assert "no index.json" in err.value.message and "vkbench ingest" in err.value.hint
    assert err.value.exit_code == 7
    assert not (tmp_path / "out").exists(), "nothing is written for a bad history"


def test_missing_history_dir(tmp_path):
    with pytest.raises(ResultFileError, match="no such history directory"):
        build_site(tmp_path / "nope", tmp_path / "out")


def test_corrupt_shard_names_file_and_line(small_history, tmp_path):
    root, facts = small_history
    copy = tmp_path / "h"
    shutil.copytree(root, copy)
    sid = facts["regression_sid"]
    shard = next((copy / "series" / sid[:2] / sid).glob("*.jsonl"))
    shard.write_text(shard.read_text() + '{"run_id": "x", "trunc\n')
    with pytest.raises(ResultFileError) as err:
        build_site(copy, tmp_path / "out")
    assert f"{shard}:{history_factory.RUNS + 1}" in err.value.message


def test_listed_shard_missing(small_history, tmp_path):
    root, facts = small_history
    copy = tmp_path / "h"
    shutil.copytree(root, copy)
    sid = facts["regression_sid"]
    shutil.rmtree(copy / "series" / sid[:2] / sid)
    with pytest.raises(ResultFileError, match="listed in index.json but missing"):
        build_site(copy, tmp_path / "out")


def test_newer_history_version_is_refused(small_history, tmp_path):
    root, _ = small_history
    copy = tmp_path / "h"
    shutil.copytree(root, copy)
    (copy / "format.json").write_text('{"history_version": 99}')
    with pytest.raises(ResultFileError) as err:
        build_site(copy, tmp_path / "out")
    assert "newer" in err.value.message and "upgrade" in err.value.hint


def test_detect_json_is_optional(small_history, tmp_path):
    root, _ = small_history
    copy = tmp_path / "h"
    shutil.copytree(root, copy)
    (copy / "detect.json").unlink()
    report = build_site(copy, tmp_path / "out")
    assert report.series > 0
    assert load(tmp_path / "out" / "data" / "detect.json")["incidents"] == []


def test_damaged_vendored_uplot_is_refused(small_history, tmp_path, monkeypatch):
    root, _ = small_history
    vendor = tmp_path / "vendor"
    shutil.copytree(build_module.vendor_dir(), vendor)
    (vendor / "uplot" / "uPlot.iife.min.js").write_text("tampered")
    monkeypatch.setattr(build_module, "vendor_dir", lambda: vendor)
    with pytest.raises(MissingBinaryError) as err:
        build_site(root, tmp_path / "out")
    assert "uPlot.iife.min.js" in err.value.message and "sync_site_vendor" in err.value.hint
    assert not (tmp_path / "out" / "data").exists(), "nothing is swapped in when the build fails"


def test_explicit_repo_overrides_commit_links(small_history, tmp_path):
    root, _ = small_history
    build_site(root, tmp_path, repo="me/valkey-fork")
    assert load(tmp_path / "data" / "index.json")["commit_repos"]["valkey"] == "me/valkey-fork"


def test_a_metric_a_year_lacks_is_null_there_once_the_chunks_are_combined():
    """Counts start in the second year: the 2026 chunk has no count column, the 2027 chunk has;
    combined, the count is null for the 2026 points (as one file over all points had it)."""
    from vkbench.site.series_data import SeriesState, build_series, series_files

    def point(k: int, year: int, count: float | None = None) -> dict:
        metrics = {"rps": {"median": 1000.0 + k, "ci_low": 990.0, "ci_high": 1010.0, "cv": 0.01}}
        if count is not None:
            metrics["instructions_per_op"] = {"median": count, "ci_low": count, "ci_high": count, "cv": 0.0001}
        return {"run_id": f"r{k}", "timestamp": f"{year}-12-{20 + k % 10:02d}T02:00:00Z" if year == 2026 else f"{year}-01-{1 + k:02d}T02:00:00Z",
                "fingerprint_id": "fp", "valid": True, "metrics": metrics,
                **({"instructions_method": "m1"} if count is not None else {})}

    points = [point(k, 2026) for k in range(3)] + [point(k, 2027, 2000.0 + k) for k in range(3, 5)]
    head, chunks, _ = series_files("s", points, {}, {}, [], lambda f: None)
    assert [(c["y"], c["i"], c["n"]) for c in head["chunks"]] == [(2026, 0, 3), (2027, 3, 2)]
    assert "instructions_per_op" not in chunks[2026][0]["m"] and "im" not in chunks[2026][0]
    assert head["metrics"] == ["rps", "instructions_per_op"]
    main, _ = build_series("s", points, {}, lambda f: None)
    assert main["m"]["instructions_per_op"]["med"] == [None, None, None, 2000.0 + 3, 2000.0 + 4]
    assert [main["methods"][c] for c in main["im"]] == ["", "", "", "m1", "m1"]
    assert main["bounds"] == [{"i": 3, "cut": 1, "kind": "method", "text": "method changed: none → m1"}]
    assert main["t0"] == epoch(points[0]["timestamp"]) and len(main["dt"]) == 5
    # The state an incremental build keeps gives the same head when the 2027 points come later.
    state = SeriesState()
    state.add(points[:3])
    state = SeriesState.from_record(json.loads(json.dumps(state.record())))
    later, _, _ = series_files("s", points[3:], {}, {}, [], lambda f: None, state=state)
    assert later == head
