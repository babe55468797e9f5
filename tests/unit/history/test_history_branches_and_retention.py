"""Publishing a long history cheaply: shallow fetches, the site alone on the Pages branch (the
history on a data branch, both pushed atomically), the split of an existing history, and
retention (raw outputs and result copies pruned, series points kept)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from factory import make_result, write_result

from cli_outcome import vk
from vkbench.errors import PublishError
from vkbench.history.publish import publish
from vkbench.history.split import count_points


def git(*args, cwd=None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def night(tmp_path: Path, n: int, *, raw: bool = True, cells: int = 2) -> Path:
    folder = tmp_path / f"night{n}"
    for io in range(1, cells + 1):
        result = make_result(run_id=f"run-{n:03d}", timestamp=f"2026-10-{n + 1:02d}T02:00:00Z", io_threads=io,
                             rps={"SET": 400_000.0 + n, "GET": 450_000.0 - n})
        write_result(folder, result, name=f"{result['run']['cell_id']}.json")
        if raw:
            (folder / f"{result['run']['cell_id']}.raw").mkdir(exist_ok=True)
            (folder / f"{result['run']['cell_id']}.raw" / "rep-0.out").write_text(f"raw output {n}\n")
            (folder / f"{result['run']['cell_id']}.raw" / "profile.folded").write_text(f"main;f {n}\n")
    return folder


def fake_site(seen: list):
    """A before_commit that 'builds' a site: one file per publish plus a counter, and records
    what the previous site held when the build started (the incremental build reads it)."""
    def build(root: Path) -> None:
        site = root / "site"
        seen.append(sorted(p.name for p in site.glob("*")) if site.is_dir() else None)
        site.mkdir(exist_ok=True)
        count = len(list(site.glob("n*.html")))
        (site / f"n{count}.html").write_text(f"night {count}")
    return build


def tree(remote: Path, ref: str) -> list[str]:
    return git("ls-tree", "-r", "--name-only", ref, cwd=remote).split()


@pytest.fixture
def remote(tmp_path):
    path = tmp_path / "pages.git"
    git("init", "-q", "--bare", str(path))
    return path


def test_site_branch_holds_only_the_site_and_history_lands_on_the_data_branch(tmp_path, remote):
    seen: list = []
    for n in range(3):
        report = publish([night(tmp_path, n)], str(remote), "vkbench-data", site_branch="gh-pages", site_subdir="site",
                         before_commit=fake_site(seen), workdir=tmp_path / f"w{n}")
        assert report.pushed and report.ingest.added == 4
        assert (tmp_path / f"w{n}" / ".git" / "shallow").exists() or n == 0, "tips only were fetched"
    assert seen == [None, ["n0.html"], ["n0.html", "n1.html"]], "each build starts from the published site"
    pages = tree(remote, "gh-pages")
    assert pages == ["site/n0.html", "site/n1.html", "site/n2.html"], "no result copy, raw output or series on the Pages branch"
    data = tree(remote, "vkbench-data")
    assert not [p for p in data if p.startswith("site/")]
    assert sum(1 for p in data if p.startswith("history/runs/") and p.endswith(".json")) == 6
    assert len(git("rev-list", "gh-pages", cwd=remote).split()) == 3
    assert len(git("rev-list", "vkbench-data", cwd=remote).split()) == 3
    again = publish([night(tmp_path, 2)], str(remote), "vkbench-data", site_branch="gh-pages", site_subdir="site",
                    before_commit=lambda root: None, workdir=tmp_path / "w-again")
    assert not again.pushed, "re-publishing the same night changes nothing on either branch"


def test_a_rejected_site_push_lands_neither_branch(tmp_path, remote):
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nwhile read old new ref; do [ \"$ref\" = refs/heads/gh-pages ] && exit 1; done\nexit 0\n")
    hook.chmod(0o755)
    with pytest.raises(PublishError, match="failed after"):
        publish([night(tmp_path, 0)], str(remote), "vkbench-data", site_branch="gh-pages", site_subdir="site",
                before_commit=fake_site([]), max_retries=0, retry_for=5)
    assert git("for-each-ref", cwd=remote).strip() == "", "the atomic push left no branch behind"


def test_site_branch_needs_a_separate_site_folder(tmp_path, remote):
    with pytest.raises(PublishError, match="needs the site's folder"):
        publish([night(tmp_path, 0)], str(remote), "vkbench-data", site_branch="gh-pages")
    with pytest.raises(PublishError, match="both 'gh-pages'"):
        publish([night(tmp_path, 0)], str(remote), "gh-pages", site_branch="gh-pages", site_subdir="site")
    with pytest.raises(PublishError, match="separate folders"):
        publish([night(tmp_path, 0)], str(remote), "data", site_branch="gh-pages", site_subdir="history")


def test_split_moves_the_same_history_tree_and_keeps_every_point(tmp_path, remote):
    for n in range(3):  # today's layout: history/ and site/ on gh-pages
        publish([night(tmp_path, n)], str(remote), "gh-pages", before_commit=fake_site([]), shallow=False)
    before_tree = git("rev-parse", "gh-pages:history", cwd=remote).strip()
    before_tip = git("rev-parse", "gh-pages", cwd=remote).strip()
    code, out = vk("history", "split", "--repo-dir", remote, "--json")
    assert code == 0, out
    report = json.loads(out)
    assert (report["series"], report["points"]) == (4, 12)
    assert git("rev-parse", "vkbench-data:history", cwd=remote).strip() == before_tree
    assert tree(remote, "gh-pages") == ["site/n0.html", "site/n1.html", "site/n2.html"]
    assert git("rev-parse", "gh-pages^", cwd=remote).strip() == before_tip, "the Pages branch moved forward, no force push"
    assert git("rev-parse", "vkbench-data^", cwd=remote).strip() == before_tip
    # publishing goes on in the new layout, from the site the split left
    seen: list = []
    publish([night(tmp_path, 3)], str(remote), "vkbench-data", site_branch="gh-pages", site_subdir="site", before_commit=fake_site(seen))
    assert seen == [["n0.html", "n1.html", "n2.html"]]
    checkout = tmp_path / "data"
    git("clone", "-q", "--branch", "vkbench-data", str(remote), str(checkout))
    assert count_points(checkout / "history") == (4, 16)
    code, out = vk("history", "split", "--repo-dir", remote)
    assert code == 8 and "already exists" in out


def test_split_refuses_a_damaged_history_and_pushes_nothing(tmp_path, remote):
    publish([night(tmp_path, 0)], str(remote), "gh-pages", before_commit=fake_site([]))
    work = tmp_path / "edit"
    git("clone", "-q", "--branch", "gh-pages", str(remote), str(work))
    shard = next((work / "history" / "series").rglob("*.jsonl"))
    shard.write_text(shard.read_text()[:-10] + "\n")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "damage", cwd=work)
    git("push", "-q", "origin", "gh-pages", cwd=work)
    code, out = vk("history", "split", "--repo-dir", remote)
    assert code == 7, out
    assert "vkbench-data" not in git("branch", "--list", cwd=remote)


def _history(tmp_path: Path, remote: Path) -> Path:
    for n in range(4):
        publish([night(tmp_path, n)], str(remote), "gh-pages")
    checkout = tmp_path / "h"
    git("clone", "-q", "--branch", "gh-pages", str(remote), str(checkout))
    return checkout / "history"


def test_retain_prunes_old_raw_outputs_and_result_copies_and_nothing_else(tmp_path, remote):
    history = _history(tmp_path, remote)
    series_before = {p: p.read_bytes() for p in (history / "series").rglob("*.jsonl")}
    index_before = (history / "index.json").read_bytes()
    # nights are 2026-10-01..04 at 02:00; "now" is 2026-10-06T00:00: ages 4.9, 3.9, 2.9, 1.9 days
    code, out = vk("history", "retain", "--history", history, "--keep-raw-days", 3, "--keep-results-days", 4,
                   "--now", "2026-10-06T00:00:00Z", "--json")
    assert code == 0, out
    report = json.loads(out)
    assert (report["raw_pruned"], report["results_pruned"]) == (4, 2)
    runs = history / "runs" / "2026-10"
    assert sorted(p.name for p in runs.iterdir()) == ["run-000", "run-001", "run-002", "run-003"], "run folders stay"
    assert not list((runs / "run-000").glob("*.json")) and not list((runs / "run-000").glob("*.raw"))
    assert len(list((runs / "run-001").glob("*.json"))) == 2 and not list((runs / "run-001").glob("*.raw"))
    assert len(list((runs / "run-002").glob("*.raw"))) == 2 and len(list((runs / "run-003").glob("*.raw"))) == 2
    log = [json.loads(line) for line in (runs / "run-000" / "retention.log").read_text().splitlines()]
    assert len(log) == 1 and len(log[0]["removed"]) == 6 and log[0]["policy"]["keep_raw_days"] == 3
    assert {p: p.read_bytes() for p in (history / "series").rglob("*.jsonl")} == series_before, "series points are kept forever"
    assert (history / "index.json").read_bytes() == index_before
    assert count_points(history) == (4, 16)
    code, out = vk("history", "retain", "--history", history, "--keep-raw-days", 3, "--keep-results-days", 4, "--now", "2026-10-06T00:00:00Z")
    assert code == 0 and out.startswith("pruned 0 raw"), "a second pass removes nothing more"
    code, out = vk("detect", "--history", history)
    assert code == 0, out


def test_retain_keeps_the_profiles_of_incident_runs(tmp_path, remote):
    history = _history(tmp_path, remote)
    detect = {"generated": "2026-10-05T00:00:00Z", "parameters": {}, "change_points": [], "segments": {}, "noise": {},
              "incidents": [{"id": "i1", "title": "t", "status": "open", "direction": "regression", "metric": "rps", "magnitude": -0.1,
                             "series_ids": [], "machine_class": "cloud-x86", "annotation": None,
                             "good": {"run_id": "run-000", "version": "unstable", "commit": "a", "timestamp": "2026-10-01T02:00:00Z"},
                             "bad": {"run_id": "run-001", "version": "unstable", "commit": "b", "timestamp": "2026-10-02T02:00:00Z"}}]}
    (history / "detect.json").write_text(json.dumps(detect))
    code, out = vk("history", "retain", "--history", history, "--keep-raw-days", 0, "--now", "2026-10-30T00:00:00Z", "--json")
    assert code == 0, out
    assert json.loads(out)["profiles_kept"] == 4
    runs = history / "runs" / "2026-10"
    assert sorted(p.name for p in (runs / "run-000").rglob("*") if p.is_file() and p.suffix != ".json") == ["profile.folded", "profile.folded", "retention.log"]
    assert not list((runs / "run-002").glob("*.raw"))


def test_publish_applies_retention_before_committing(tmp_path, remote):
    for n in range(2):
        publish([night(tmp_path, n)], str(remote), "gh-pages")
    code, out = vk("publish", night(tmp_path, 2), "--repo-dir", remote, "--no-detect", "--keep-raw-days", 0, "--keep-results-days", 0)
    assert code == 0, out
    files = tree(remote, "gh-pages")
    assert not [p for p in files if ".raw/" in p or (p.startswith("history/runs/") and p.endswith(".json"))]
    assert sum(1 for p in files if p.endswith("retention.log")) == 3
    assert sum(1 for p in files if p.endswith(".jsonl")) == 4
