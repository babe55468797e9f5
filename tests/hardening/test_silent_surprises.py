"""Issue 18, silent surprises: a result re-ingested with other numbers (warned; an error under
--strict, which the publish workflow uses) and ``--rebuild-index`` after a shard was deleted
(rebuilt from the result copies under runs/, with what could not be recovered named). Each
asserts the exit code, the message, and with the tree-hash helper what changed and what not."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli_outcome import vk
from factory import make_result, write_result
from test_escapes import tree_hash

from vkbench.history.ingest import ingest
from vkbench.history.store import HistoryStore

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def work(tmp_path) -> Path:
    write_result(tmp_path / "first", make_result(run_id="run-a", timestamp="2026-11-02T02:00:00Z",
                                                 rps={"SET": 400_000.0, "GET": 450_000.0}))
    ingest(HistoryStore(tmp_path / "history"), [tmp_path / "first"])
    write_result(tmp_path / "again", make_result(run_id="run-a", timestamp="2026-11-02T02:00:00Z",
                                                 rps={"SET": 300_000.0, "GET": 450_000.0}))
    return tmp_path


# -- the same run_id/cell_id with other numbers ------------------------------------------------

def test_reingest_with_other_numbers_warns_naming_file_and_values(work):
    before = tree_hash(work / "history")
    code, text = vk("ingest", work / "again", "--history", work / "history")
    assert code == 0, text
    assert "warning:" in text and str(work / "again") in text
    assert "run-a/" in text and "already in series/" in text
    assert "metrics.rps.median 400000.0 kept, 300000.0 ignored" in text
    assert "0 point(s) added" in text and "2 already present" in text
    assert tree_hash(work / "history") == before      # the history's numbers stay; nothing written


def test_reingest_with_other_numbers_under_strict_fails_with_exit_13(work):
    before = tree_hash(work / "history")
    code, text = vk("ingest", work / "again", "--history", work / "history", "--strict")
    assert code == 13, text
    assert "already present with other numbers (nothing was written)" in text
    assert "metrics.rps.median 400000.0 kept, 300000.0 ignored" in text and str(work / "again") in text
    assert "hint:" in text and "--run-id" in text
    assert tree_hash(work / "history") == before


def test_reingest_of_the_same_file_is_quiet_even_under_strict(work):
    before = tree_hash(work / "history")
    code, text = vk("ingest", work / "first", "--history", work / "history", "--strict")
    assert code == 0, text
    assert "warning" not in text and "2 already present" in text
    assert tree_hash(work / "history") == before


def test_two_inputs_with_one_key_and_other_numbers_fail_under_strict(tmp_path):
    write_result(tmp_path / "in", make_result(run_id="run-b", rps={"SET": 1000.0}), name="one.json")
    write_result(tmp_path / "in", make_result(run_id="run-b", rps={"SET": 2000.0}), name="two.json")
    code, text = vk("ingest", tmp_path / "in", "--history", tmp_path / "history", "--strict")
    assert code == 13, text
    assert "two.json" in text and "one.json" in text
    assert list((tmp_path / "history").rglob("*")) == []      # the lock's folder, empty


def test_the_publish_job_ingests_strictly():
    """The one workflow step that ingests (tools/ci/publish.sh: `vkbench ci publish`, the publish
    job) passes --strict."""
    from vkbench.ci.publish import publish_argv

    script = (REPO / "tools" / "ci" / "publish.sh").read_text()
    assert script.splitlines()[-1] == "ci publish"
    for env in ({"VKBENCH_PAGES_REPO": "/r.git"}, {"VKBENCH_PAGES_REPO": "/r.git", "VKBENCH_DATA_BRANCH": "data"}):
        argv = publish_argv(env, Path("results"), Path("work"))
        assert argv[0] == "publish" and "--strict" in argv
    source = (REPO / "bench" / "vkbench" / "ci" / "publish.py").read_text()
    assert source.count("[\"publish\"") == 1       # no other call of vkbench publish in the step
    # What the workflows run (comments may name the commands: they explain, they do not ingest).
    steps = "\n".join(line for p in (REPO / ".github" / "workflows").glob("*.yml")
                      for line in p.read_text().splitlines() if not line.lstrip().startswith("#"))
    assert "vkbench ingest" not in steps and "vkbench publish" not in steps


# -- --rebuild-index after a shard was deleted -------------------------------------------------

@pytest.fixture
def nights(tmp_path) -> Path:
    """24 nights over two months, SET and GET: 48 points in 4 shards (2 series x 2 months)."""
    for day in range(24):
        month, dom = ("2026-10", day + 1) if day < 12 else ("2026-11", day - 11)
        write_result(tmp_path / "in", make_result(run_id=f"run-{day:02d}", timestamp=f"{month}-{dom:02d}T02:00:00Z",
                                                  rps={"SET": 400_000.0 + day, "GET": 450_000.0 + day}))
    ingest(HistoryStore(tmp_path / "history"), [tmp_path / "in"])
    return tmp_path / "history"


def _shards(history: Path) -> list[Path]:
    return sorted((history / "series").rglob("*.jsonl"))


def test_rebuild_index_restores_a_deleted_shard_from_the_result_copies(nights):
    before = tree_hash(nights / "series", nights / "runs", nights / "fingerprints")
    assert sum(json.loads(nights.joinpath("index.json").read_text())["series"][s]["points"]
               for s in json.loads(nights.joinpath("index.json").read_text())["series"]) == 48
    _shards(nights)[0].unlink()
    code, text = vk("ingest", "--history", nights, "--rebuild-index")
    assert code == 0, text
    assert "12 point(s) restored into their shards from the result copies under runs/" in text
    assert "could not be recovered" not in text
    assert tree_hash(nights / "series", nights / "runs", nights / "fingerprints") == before   # byte for byte
    index = json.loads(nights.joinpath("index.json").read_text())
    assert sum(entry["points"] for entry in index["series"].values()) == 48
    code, text = vk("detect", "--history", nights, "--no-write")      # the repaired history reads cleanly
    assert code == 0, text


def test_rebuild_index_names_what_neither_a_shard_nor_a_copy_holds(nights):
    shard = _shards(nights)[0]
    lost = [json.loads(line) for line in shard.read_text().splitlines()][:5]
    shard.unlink()
    for point in lost:      # retention removed these result copies
        shutil.rmtree(nights / "runs" / point["timestamp"][:7] / point["run_id"])
    runs_before = tree_hash(nights / "runs")
    code, text = vk("ingest", "--history", nights, "--rebuild-index")
    assert code == 0, text
    assert "7 point(s) restored" in text
    assert f"series {shard.parent.name}: 5 of 24 point(s) the old index listed could not be recovered" in text
    assert tree_hash(nights / "runs") == runs_before
