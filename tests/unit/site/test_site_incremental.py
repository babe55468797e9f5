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


def test_unchanged_series_files_are_not_rewritten(history, tmp_path):
    root, facts = history
    site = tmp_path / "site"
    build_site(root, site)
    series = site / "data" / "series"
    inodes = {p.name: p.stat().st_ino for p in series.iterdir()}
    touched = set(add_run(root, history_factory.RUNS, "pi-cm4"))
    build_site(root, site)
    for path in series.iterdir():
        sid = path.name.split(".")[0]
        assert (path.stat().st_ino == inodes[path.name]) == (sid not in touched), path.name
    shutil.rmtree(site)
