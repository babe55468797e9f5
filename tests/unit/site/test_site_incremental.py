"""Incremental and atomic site builds.

An incremental build (the previous site's data/build-manifest.json says what is current) must
write exactly what a full build from the same history writes; a failing build must leave the
previous site untouched.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from vkbench.cli import main
from vkbench.errors import ResultFileError
from vkbench.site import build as build_module
from vkbench.site.build import build_site

import history_factory


def tree(root: Path) -> dict[str, bytes]:
    """Every file under root (relative path -> bytes), with index.json's build time dropped."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            if path.name == "index.json" and path.parent.name == "data":
                index = json.loads(data)
                index.pop("built")
                data = json.dumps(index).encode()
            out[str(path.relative_to(root))] = data
    return out


def tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def assert_same_tree(a: Path, b: Path) -> None:
    ta, tb = tree(a), tree(b)
    assert sorted(ta) == sorted(tb)
    differing = [name for name in ta if ta[name] != tb[name]]
    assert not differing, f"incremental and full builds differ in {differing[:5]}"


def add_run(root: Path, k: int, machine_class: str) -> list[str]:
    """Append run ``k`` to every series of ``machine_class`` (bytes appended to the shard, index
    updated), as ingest does. Returns the series ids touched."""
    index = json.loads((root / "index.json").read_text())
    touched = []
    for sid, entry in sorted(index["series"].items()):
        if entry["dims"]["machine_class"] != machine_class:
            continue
        month = entry["shards"][-1]
        last = json.loads((root / "series" / sid[:2] / sid / f"{month}.jsonl").read_text().splitlines()[-1])
        point = copy.deepcopy(last)
        ts = history_factory.START + timedelta(days=k, minutes=7)
        point.update(run_id=f"run-{k:03d}-{machine_class}", timestamp=history_factory.iso(ts),
                     commit=history_factory.commit_of("unstable", k), flags=["client-bound"], valid=False,
                     workflow_run_url=history_factory.RUN_URL.format(9000 + k * 2))
        point["metrics"]["rps"]["median"] *= 1.01
        point["metrics"]["p99"]["cv"] = 0.5
        new_month = point["timestamp"][:7]
        shard = root / "series" / sid[:2] / sid / f"{new_month}.jsonl"
        with shard.open("a") as fh:
            fh.write(json.dumps(point) + "\n")
        entry["shards"] = sorted(set(entry["shards"]) | {new_month})
        entry["points"] += 1
        entry["last"] = point["timestamp"]
        touched.append(sid)
    index["runs"] += 1
    (root / "index.json").write_text(json.dumps(index, indent=1))
    return touched


@pytest.fixture
def history(tmp_path) -> tuple[Path, dict]:
    root = tmp_path / "history"
    return root, history_factory.write_history(root)


def test_incremental_build_after_new_runs_equals_a_full_build(history, tmp_path):
    root, facts = history
    site, full = tmp_path / "site", tmp_path / "full"
    first = build_site(root, site, reference_dir=None)
    assert first.mode == "full" and first.rebuilt == len(facts["sids"])

    touched = add_run(root, history_factory.RUNS, "cloud-x86")          # same month
    report = build_site(root, site)
    assert report.mode == "incremental"
    assert (report.appended, report.kept, report.rebuilt) == (len(touched), len(facts["sids"]) - len(touched), 0)
    assert build_site(root, full, full=True).mode == "full"
    assert_same_tree(site, full)

    add_run(root, history_factory.RUNS + 1, "cloud-x86")                 # a new month's shard
    add_run(root, history_factory.RUNS + 1, "pi-cm4")
    report = build_site(root, site)
    assert report.appended == len(facts["sids"]) and report.rebuilt == 0
    build_site(root, full, full=True)
    assert_same_tree(site, full)


def test_changed_detection_rebuilds_the_series_it_names(history, tmp_path):
    root, facts = history
    site, full = tmp_path / "site", tmp_path / "full"
    build_site(root, site)
    detect = json.loads((root / "detect.json").read_text())
    sid = facts["improvement_sid"]
    moved = dict(detect["change_points"][1], index=5, run_id="run-005-pi-cm4")
    detect["change_points"][1] = moved
    detect["incidents"][1]["bad"]["run_id"] = "run-005-pi-cm4"
    detect["noise"][facts["regression_sid"]] = {"rps": {"cv": 0.05}}   # noise only: extended, not rebuilt
    (root / "detect.json").write_text(json.dumps(detect))
    report = build_site(root, site)
    assert report.rebuilt == 1 and report.appended == 1
    assert json.loads((site / "data" / "series" / f"{sid}.json").read_text())["cp"][0]["i"] == 5
    build_site(root, full, full=True)
    assert_same_tree(site, full)


def test_detection_that_changed_with_appended_points_extends_the_series_by_index(history, tmp_path):
    """Issue 23: the night's detection found a change point among the new points of a series
    (every night, somewhere in a big fleet). Detection ran on exactly these points, so its
    indexes place the change points: the series is extended (head and newest chunk), not rebuilt
    from ten years of shards, and the site equals a full build's."""
    root, facts = history
    site, full = tmp_path / "site", tmp_path / "full"
    build_site(root, site)
    sid = facts["improvement_sid"]
    machine_class = json.loads((root / "index.json").read_text())["series"][sid]["dims"]["machine_class"]
    touched = add_run(root, history_factory.RUNS, machine_class)
    index = json.loads((root / "index.json").read_text())
    detect = json.loads((root / "detect.json").read_text())
    k = next(i for i, cp in enumerate(detect["change_points"]) if cp["series_id"] == sid)
    new_run = f"run-{history_factory.RUNS:03d}-{machine_class}"
    detect["change_points"][k] = dict(detect["change_points"][k], index=index["series"][sid]["points"] - 1, run_id=new_run)
    for incident in detect["incidents"]:
        if sid in (incident.get("series_ids") or []):
            incident["bad"]["run_id"] = new_run
    detect["series_state"] = {s: {"inputs": "-", "points": index["series"][s]["points"], "sealed": "-",
                                  "last": {"timestamp": index["series"][s]["last"], "run_id": new_run},
                                  "last_month": index["series"][s]["shards"][-1], "last_shard": {"sha256": "-", "bytes": 1}}
                              for s in touched}
    (root / "detect.json").write_text(json.dumps(detect))
    reads = []
    read_points = build_module.History.read_points
    build_module.History.read_points = lambda self, s: reads.append(s) or read_points(self, s)
    try:
        report = build_site(root, site)
    finally:
        build_module.History.read_points = read_points
    assert report.rebuilt == 0 and report.appended == len(touched) and reads == []
    head = json.loads((site / "data" / "series" / f"{sid}.json").read_text())
    assert head["cp"][0]["i"] == index["series"][sid]["points"] - 1
    build_site(root, full, full=True)
    assert_same_tree(site, full)
    # detection that changed but did not run on these points (its count differs): rebuilt from the shards
    detect["change_points"][k]["magnitude"] = 0.5
    (root / "detect.json").write_text(json.dumps(detect))
    add_run(root, history_factory.RUNS + 1, machine_class)
    assert build_site(root, site).rebuilt >= 1


def test_a_late_point_or_an_edited_shard_rebuilds_the_series(history, tmp_path):
    root, facts = history
    site, full = tmp_path / "site", tmp_path / "full"
    build_site(root, site)
    sid = sorted(facts["sids"])[0]
    shard = root / "series" / sid[:2] / sid / "2026-10.jsonl"
    lines = shard.read_text().splitlines()
    edited = json.loads(lines[3])
    edited["metrics"]["rps"]["median"] = 1.0
    lines[3] = json.dumps(edited)
    shard.write_text("\n".join(lines) + "\n")
    report = build_site(root, site)
    assert report.rebuilt == 1 and report.kept == len(facts["sids"]) - 1
    build_site(root, full, full=True)
    assert_same_tree(site, full)


def test_missing_or_foreign_manifest_means_a_full_build(history, tmp_path, monkeypatch, capsys):
    root, _ = history
    site = tmp_path / "site"
    build_site(root, site)
    (site / "data" / build_module.MANIFEST).unlink()
    assert build_site(root, site).mode == "full"
    assert build_site(root, site).mode == "incremental"
    monkeypatch.setattr(build_module, "builder_id", lambda: "another-builder")
    assert build_site(root, site).mode == "full"
    main(["site", "build", "--history", str(root), "--out", str(site), "--full", "--no-reference"])
    assert "full build" in capsys.readouterr().out


def test_failed_build_leaves_the_previous_site_untouched(history, tmp_path):
    root, facts = history
    site = tmp_path / "gh-pages"
    (site / "history-note.txt").parent.mkdir()
    (site / "history-note.txt").write_text("not the site's: left alone")
    build_site(root, site)
    before = tree_hash(site)
    add_run(root, history_factory.RUNS, "cloud-x86")
    sid = next(s for s, d in facts["sids"].items() if d["machine_class"] == "cloud-x86")
    shard = root / "series" / sid[:2] / sid / "2026-10.jsonl"
    with shard.open("a") as fh:
        fh.write('{"run_id": "run-999", "timestamp": "2026-10-31T0')   # a line cut short
    for full in (False, True):
        with pytest.raises(ResultFileError) as err:
            build_site(root, site, full=full)
        assert str(shard) in err.value.message
        assert tree_hash(site) == before, "the previous site changed"
        assert sorted(os.listdir(site)) == sorted([".nojekyll", "assets", "data", "digest.html", "history-note.txt", "index.html"])


def test_leftovers_of_a_killed_build_are_removed(history, tmp_path):
    root, _ = history
    site = tmp_path / "site"
    (site / ".vkbench-build-dead" / "data").mkdir(parents=True)
    build_site(root, site)
    assert not [p for p in os.listdir(site) if p.startswith(".vkbench-")]


def files_of(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_unchanged_series_files_are_not_rewritten(history, tmp_path):
    root, facts = history
    site = tmp_path / "site"
    build_site(root, site)
    series = site / "data" / "series"
    inodes = {p: p.stat().st_ino for p in files_of(series)}
    touched = set(add_run(root, history_factory.RUNS, "pi-cm4"))
    build_site(root, site)
    assert files_of(series) == sorted(inodes)
    for path in files_of(series):
        sid = path.relative_to(series).parts[0].split(".")[0]
        assert (path.stat().st_ino == inodes[path]) == (sid not in touched), path
    shutil.rmtree(site)


def sparse_copy(site: Path, dest: Path) -> list[str]:
    """A folder holding only what the next build reads of ``site`` (a sparse checkout)."""
    inputs = build_module.site_inputs(site)
    for rel in inputs:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(site / rel, dest / rel)
    return inputs


def test_a_sparse_build_writes_what_changed_and_equals_a_whole_build(history, tmp_path, monkeypatch):
    """Nights: one more point in the same year; a night whose points cross into a new year; a
    night in the new year (the old year's chunks now closed); a series dropped. Each night the
    whole previous site is built incrementally (a), and a folder holding only site_inputs()
    sparsely (b): the previous site with (b)'s written files copied in and removed files deleted
    is (a), byte for byte, which is a full build. Closed years' chunks are neither read nor
    rewritten."""
    root, facts = history
    site, full = tmp_path / "site", tmp_path / "full"
    build_site(root, site)
    reads: list[str] = []
    real_read = build_module._read_site_file
    monkeypatch.setattr(build_module, "_read_site_file",
                        lambda out_dir, rel, expected: reads.append(rel) or real_read(out_dir, rel, expected))
    x86 = sorted(s for s, d in facts["sids"].items() if d["machine_class"] == "cloud-x86")
    nights = [[(history_factory.RUNS, "cloud-x86")],
              [(91, "cloud-x86"), (91, "pi-cm4"), (92, "cloud-x86"), (92, "pi-cm4")],   # Dec 31 and Jan 1
              [(93, "cloud-x86")],
              "drop"]
    for night, runs in enumerate(nights):
        if runs == "drop":      # a series leaves the history: its files leave the site
            dropped = x86[0]
            index = json.loads((root / "index.json").read_text())
            del index["series"][dropped]
            (root / "index.json").write_text(json.dumps(index))
            shutil.rmtree(root / "series" / dropped[:2] / dropped)
        else:
            for k, machine_class in runs:
                add_run(root, k, machine_class)
        old, sparse = tmp_path / f"old-{night}", tmp_path / f"sparse-{night}"
        shutil.copytree(site, old)
        inputs = sparse_copy(site, sparse)
        stamps = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in files_of(site / "data" / "series")}
        del reads[:]
        whole = build_site(root, site)
        whole_reads, reads[:] = list(reads), []
        part = build_site(root, sparse, sparse=True)
        assert part.sparse and not part.complete and part.mode == whole.mode == "incremental"
        assert (part.kept, part.appended, part.rebuilt) == (whole.kept, whole.appended, whole.rebuilt)
        assert part.rebuilt == 0
        assert set(reads) == set(whole_reads) and set(reads) <= set(inputs), "reads only what site_inputs lists"
        for rel in part.written:
            (old / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(sparse / rel, old / rel)
        for rel in part.removed:
            (old / rel).unlink()
        assert_same_tree(old, site)
        build_site(root, full, full=True)
        assert_same_tree(site, full)
        if night == 1:
            assert {p.name for p in (site / "data" / "series" / x86[0]).iterdir()} == {
                "2026.json", "2026.latency.json", "2027.json", "2027.latency.json"}
            head = json.loads((site / "data" / "series" / f"{x86[0]}.json").read_text())
            assert [(c["y"], c["i"], c["n"]) for c in head["chunks"]] == [(2026, 0, 32), (2027, 32, 1)]
        if night == 2:
            closed = [p for p in stamps if p.name.startswith("2026.")]
            assert closed and not [r for r in reads if "/2026." in r], "a closed year's chunk is not read"
            assert all((p.stat().st_ino, p.stat().st_mtime_ns) == stamps[p] for p in closed), "nor rewritten"
            assert not [r for r in part.written if "/2026." in r]
            assert not [p for p in (sparse / "data" / "series").rglob("2026.*")], "absent files stay absent"
            grown = {r for r in part.written if r.startswith("data/series/")}
            assert grown == {f"data/series/{s}{suffix}" for s in x86 for suffix in (".json", "/2027.json", "/2027.latency.json")}
        if night == 3:
            assert part.removed == sorted([f"data/series/{dropped}.json"] + [f"data/series/{dropped}/{y}{lat}.json" for y in (2026, 2027) for lat in ("", ".latency")])
            assert not (sparse / "data" / "series" / dropped).exists()


def test_a_sparse_build_without_a_manifest_writes_the_whole_site(history, tmp_path):
    root, _ = history
    site, sparse = tmp_path / "site", tmp_path / "sparse"
    build_site(root, site)
    (sparse / "data" / "series").mkdir(parents=True)
    (sparse / "data" / "series" / "stale.latency.json").write_text("{}")   # an older layout's file
    report = build_site(root, sparse, sparse=True)
    assert report.complete and report.mode == "full"
    assert report.removed == ["data/series/stale.latency.json"]
    assert_same_tree(sparse, site)
    assert sorted(report.written) == sorted(str(p.relative_to(sparse)) for p in files_of(sparse))
    assert build_module.site_inputs(sparse)[0] == "data/build-manifest.json"


def test_a_site_file_that_differs_from_the_manifest_gets_its_series_rebuilt(history, tmp_path):
    """An interrupted sparse build may have moved a newer chunk in before its manifest: the next
    build does not extend what it cannot trust (its digest differs), it rebuilds that series."""
    root, facts = history
    site, full = tmp_path / "site", tmp_path / "full"
    build_site(root, site)
    add_run(root, history_factory.RUNS, "cloud-x86")
    sid = sorted(s for s, d in facts["sids"].items() if d["machine_class"] == "cloud-x86")[0]
    chunk = site / "data" / "series" / sid / "2026.json"
    data = json.loads(chunk.read_text())
    data["ok"][0] = 0
    chunk.write_text(json.dumps(data))
    for sparse in (False, True):
        work = tmp_path / f"work-{sparse}"
        shutil.copytree(site, work)
        report = build_site(root, work, sparse=sparse)
        assert report.rebuilt == 1, "only the series whose chunk is not the recorded one"
        build_site(root, full, full=True)
        if not sparse:
            assert_same_tree(work, full)
        else:
            assert f"data/series/{sid}/2026.json" in report.written
            assert (work / "data" / "series" / sid / "2026.json").read_bytes() == (full / "data" / "series" / sid / "2026.json").read_bytes()
