"""Which catalog specs an A/B of a change runs (issue 20): files-to-groups.json, the core set for
broad files, every choice with its reason; `vkbench ab --changed-files` / `--specs-from-changes`."""

from __future__ import annotations

import io
import subprocess

import pytest

from vkbench.ab import ABOptions, changed_files, spec_cells_for_changes
from vkbench.catalogs.plan import plan_for_changes
from vkbench.catalogs.select import Selection, choose_specs, select_groups
from vkbench.cli.ab import read_changed_files
from vkbench.errors import UsageError
from vkbench.servers.gitmirror import Mirror

RUNNABLE = {"core-hash": ["hash"], "core-string": ["string"], "hash-b": ["hash"], "hash-a": ["hash"],
            "geo-only": ["geo"], "zset-x": ["sorted-set"]}
CORE = ["core-string", "core-hash", "core-array"]


def test_a_mapped_file_runs_its_groups_core_spec_or_the_first_runnable_one():
    selection = select_groups(["src/t_hash.c", "src/geo.c"], {"t_hash.c": ["hash"], "geo.c": ["geo", "sorted-set"]})
    assert (selection.groups, selection.core) == (["geo", "hash", "sorted-set"], False)
    choices = choose_specs(selection, RUNNABLE, CORE)
    assert [(c.name, c.why.split(":")[0]) for c in choices] == [
        ("geo-only", "group geo"), ("core-hash", "group hash"), ("zset-x", "group sorted-set")]
    assert "core set's spec" in choices[1].why and "first runnable" in choices[0].why
    assert selection.reasons == ["src/t_hash.c: t_hash.c -> hash", "src/geo.c: geo.c -> geo, sorted-set"]


def test_a_broad_file_runs_the_core_set_and_names_what_does_not_run():
    selection = select_groups(["src/server.c"], {"t_hash.c": ["hash"]})
    assert selection.core and selection.reasons == ["src/server.c: not in files-to-groups.json (a broad file) -> the core set"]
    choices = choose_specs(selection, RUNNABLE, CORE)
    assert [c.name for c in choices] == ["core-string", "core-hash"]
    assert selection.reasons[-1] == "core specs that do not run here (refused): core-array"
    empty = Selection(groups=["json"])
    assert choose_specs(empty, RUNNABLE, CORE) == [] and "no spec of it runs here" in empty.reasons[-1]


def test_pinned_catalog_hash_change_and_broad_change():
    plan, selection, choices = plan_for_changes(["src/t_hash.c"], {"duration": 3})
    assert selection.groups == ["hash"] and [c.name for c in choices] == [
        "memtier_benchmark-1Mkeys-hash-hmget-5-fields-with-100B-values-pipeline-10"]
    assert plan.cells and all(c.duration == 3 and "hash" in c.catalog.groups for c in plan.cells)
    plan, selection, choices = plan_for_changes(["src/networking.c"], {"duration": 3})
    assert selection.core and len(choices) == 15         # 17 core specs, the array and JSON ones refused
    assert {g for c in choices for g in c.groups} >= {"string", "hash", "list", "set", "sorted-set", "stream", "pubsub"}


def test_ab_selects_from_changed_files_and_writes_why(tmp_path):
    messages: list[str] = []
    options = ABOptions(base="a", candidate="b", out_dir=tmp_path, changed_files=["src/t_list.c"], spec_duration=2)
    cells = spec_cells_for_changes("file:///nowhere", options, messages.append)
    assert cells and all("list" in c.catalog.groups and c.duration == 2 for c in cells)
    assert "src/t_list.c: t_list.c -> list" in messages[0] and "runs memtier_benchmark-" in messages[0]
    written = (tmp_path / "specs.json").read_text()
    assert '"changed_files": [\n    "src/t_list.c"' in written and "core set's spec" in written
    with pytest.raises(UsageError, match="two ways"):
        spec_cells_for_changes("file:///nowhere", ABOptions(base="a", candidate="b", out_dir=tmp_path,
                                                            changed_files=["x.c"], cells=cells[:1]))
    with pytest.raises(UsageError, match="not BASE..HEAD"):
        changed_files("file:///nowhere", ABOptions(base="a", candidate="b", specs_from_changes="unstable"))


def test_changed_files_of_a_range_come_from_the_merge_base(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, timeout=30)
    (repo / "src").mkdir()
    (repo / "src" / "server.c").write_text("1\n")
    subprocess.run([*git, "add", "-A"], check=True, timeout=30)
    subprocess.run([*git, "commit", "-qm", "base"], check=True, timeout=30)
    subprocess.run([*git, "checkout", "-qb", "pr"], check=True, timeout=30)
    (repo / "src" / "t_hash.c").write_text("2\n")
    subprocess.run([*git, "add", "-A"], check=True, timeout=30)
    subprocess.run([*git, "commit", "-qm", "pr"], check=True, timeout=30)
    subprocess.run([*git, "checkout", "-q", "main"], check=True, timeout=30)
    (repo / "src" / "server.c").write_text("3\n")        # main moved on: not the pull request's change
    subprocess.run([*git, "commit", "-qam", "main moves"], check=True, timeout=30)
    monkeypatch.setenv("VKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    url = f"file://{repo}"
    mirror = Mirror.for_url(url, tmp_path / "cache")
    assert mirror.changed_files(mirror.resolve("main"), mirror.resolve("pr")) == ["src/t_hash.c"]


def test_changed_files_file_is_read_bounded():
    assert read_changed_files(io.StringIO("src/t_hash.c\n\n# comment\n  src/geo.c \n")) == ["src/t_hash.c", "src/geo.c"]
    assert read_changed_files(None) is None
    with pytest.raises(UsageError, match="4096"):
        read_changed_files(io.StringIO("x" * 5000 + "\n"))
