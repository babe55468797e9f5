"""History format 3 (shard files named after their series) and the migration from format 2:
every point kept, resumable, idempotent; older histories read as they are until migrated."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_outcome import vk
from factory import nightly_series

from vkbench.errors import ResultFileError
from vkbench.history import HistoryStore, ingest
from vkbench.history.migrate import migrate_history
from vkbench.history.store import HISTORY_VERSION
from vkbench.site.build import build_site


def make_history(tmp_path: Path) -> Path:
    """Three series across two months (SET, GET; days roll past the 28th into the next month)."""
    root = tmp_path / "h"
    store = HistoryStore(root)
    ingest(store, nightly_series(tmp_path / "res-set", [1e5 + i for i in range(32)], command="SET"))
    ingest(store, nightly_series(tmp_path / "res-get", [2e5 + i for i in range(32)], command="GET"))
    ingest(store, nightly_series(tmp_path / "res-p1", [3e5 + i for i in range(5)], pipeline=1))
    return root


def downgrade_to_v2(root: Path) -> None:
    """Format 2 as docs/history-format.md described it: series/<sid[:2]>/<sid>/<YYYY-MM>.jsonl."""
    for shard in (root / "series").glob("*/*/*.jsonl"):
        month, sid, _ = shard.name.split(".")
        assert sid == shard.parent.name
        os.rename(shard, shard.with_name(f"{month}.jsonl"))
    for name in ("index.json", "format.json"):
        data = json.loads((root / name).read_text())
        data["history_version"] = 2
        (root / name).write_text(json.dumps(data))


def all_points(root: Path) -> dict[str, list[dict]]:
    store = HistoryStore(root)
    index = store.index()
    return {sid: store.read_series(sid, entry) for sid, entry in index["series"].items()}


def test_new_histories_name_each_shard_after_its_series(tmp_path):
    root = make_history(tmp_path)
    names = sorted(p.relative_to(root / "series").as_posix() for p in (root / "series").rglob("*.jsonl"))
    assert len(names) == 5 and all(n.split("/")[2].split(".")[1] == n.split("/")[1] for n in names), names
    assert json.loads((root / "format.json").read_text()) == {"history_version": HISTORY_VERSION} == {"history_version": 3}


def test_format_2_is_read_as_it_is_and_migrated_without_losing_a_point(tmp_path):
    root = make_history(tmp_path)
    before = all_points(root)
    assert sum(map(len, before.values())) == 69
    downgrade_to_v2(root)
    assert all_points(root) == before                            # readers read format 2 in its own layout
    build_site(root, tmp_path / "site-v2")                       # the site too

    code, text = vk("history", "migrate", "--history", root, "--json")
    assert code == 0, text
    report = json.loads(text)
    assert report == {"from_version": 2, "to_version": 3, "series": 3, "shards": 5, "points": 69, "dry_run": False}
    assert all_points(root) == before
    assert not [p for p in (root / "series").rglob("*.jsonl") if p.name.count(".") != 2]
    assert json.loads((root / "format.json").read_text())["history_version"] == 3
    assert json.loads((root / "index.json").read_text())["history_version"] == 3

    code, text = vk("history", "migrate", "--history", root)  # idempotent
    assert code == 0 and "already at format 3" in text and "69 points" in text, text


def test_an_interrupted_migration_is_named_and_finished(tmp_path):
    root = make_history(tmp_path)
    before = all_points(root)
    downgrade_to_v2(root)
    first = sorted((root / "series").glob("*/*/*.jsonl"))[0]
    os.rename(first, first.with_name(f"{first.stem}.{first.parent.name}.jsonl"))  # one shard renamed, then a crash
    with pytest.raises(ResultFileError) as err:
        all_points(root)
    assert str(first) in err.value.message and "migration was interrupted" in err.value.message
    assert "vkbench history migrate" in err.value.hint
    report = migrate_history(root)
    assert (report.from_version, report.points) == (2, 69)
    assert all_points(root) == before


def test_a_damaged_shard_stops_the_migration_before_any_rename(tmp_path):
    root = make_history(tmp_path)
    downgrade_to_v2(root)
    shards = sorted((root / "series").glob("*/*/*.jsonl"))
    shards[-1].write_bytes(shards[-1].read_bytes()[:-10] + b"\n")
    with pytest.raises(ResultFileError, match="does not match index.json"):
        migrate_history(root)
    assert sorted((root / "series").glob("*/*/*.jsonl")) == shards      # nothing renamed
    assert json.loads((root / "index.json").read_text())["history_version"] == 2


def test_the_next_ingest_migrates_and_says_so(tmp_path):
    root = make_history(tmp_path)
    before = all_points(root)
    downgrade_to_v2(root)
    report = ingest(HistoryStore(root), nightly_series(tmp_path / "res-more", [4e5], pipeline=64))
    assert any("migrated 2 -> 3" in note for note in report.notes), report.notes
    after = all_points(root)
    assert {sid: after[sid] for sid in before} == before and sum(map(len, after.values())) == 70


def test_a_newer_format_is_refused_naming_the_file(tmp_path):
    root = make_history(tmp_path)
    (root / "index.json").write_text(json.dumps(dict(json.loads((root / "index.json").read_text()), history_version=4)))
    code, text = vk("history", "migrate", "--history", root)
    assert code == 7 and f"{root / 'index.json'}: history_version 4 is newer" in text, text
