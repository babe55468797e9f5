"""Issue 23: a history checked out in part (history/partial.py: a sparse checkout, as publish
leaves it) reads as the whole history: every reader finds what is only in git, checks it when it
reads it, and nothing is taken for missing or deleted."""

from __future__ import annotations

import subprocess
from pathlib import Path

from factory import make_result, write_result

from vkbench.history import HistoryStore
from vkbench.history.ingest import ingest
from vkbench.history.partial import configure, find, sparse_patterns

MONTHS = ("2026-06", "2026-07", "2026-08")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _history(tmp_path: Path) -> Path:
    """A committed history: io-threads 2 ran every month, io-threads 4 only in the first."""
    repo = tmp_path / "whole"
    results = []
    for k, month in enumerate(MONTHS):
        for io in ((2, 4) if k == 0 else (2,)):
            results.append(write_result(tmp_path / "res" / f"{month}-{io}", make_result(
                run_id=f"run-{month}-{io}", cell_id=f"io{io}", io_threads=io, timestamp=f"{month}-10T02:00:00Z")))
    ingest(HistoryStore(repo / "history"), results)
    git(tmp_path, "init", "-q", "-b", "data", str(repo))
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "history")
    return repo


def _partial(tmp_path: Path, repo: Path, months: list[str]) -> Path:
    clone = tmp_path / "part"
    git(tmp_path, "clone", "-q", "--no-checkout", str(repo), str(clone))

    def run(*args, check=True, input_text=None):
        return subprocess.run(["git", *args], cwd=clone, check=check, capture_output=True, text=True, input=input_text)

    configure(run)
    (clone / ".git" / "info" / "sparse-checkout").write_text("\n".join(sparse_patterns("history", months)) + "\n")
    git(clone, "checkout", "-q", "data")
    return clone


def test_a_partial_checkout_reads_as_the_whole_history(tmp_path):
    repo = _history(tmp_path)
    whole = HistoryStore(repo / "history")
    index = whole.index()
    clone = _partial(tmp_path, repo, [MONTHS[-1]])
    part = HistoryStore(clone / "history")
    assert find(clone / "history") is not None and part.checkout is not None and whole.checkout is None
    on_disk = {p.name for p in (clone / "history" / "series").rglob("*.jsonl")}
    assert on_disk and all(name.startswith(MONTHS[-1]) for name in on_disk)
    io4 = next(sid for sid, e in index["series"].items() if e["dims"]["io_threads"] == 4)
    assert not (clone / "history" / "series" / io4[:2] / io4).exists()    # none of its months is checked out

    # the checks every reader makes pass without fetching a shard
    part.verify(index, deep=True)
    part.verify(index, names_only=True)
    assert part.hash_shards(index) == whole.hash_shards(index)
    assert {p.name for p in (clone / "history" / "series").rglob("*.jsonl")} == on_disk
    assert len(part.run_folders()) == len(whole.run_folders()) == index["runs"]

    # reading a series checks its months out
    for sid in index["series"]:
        assert part.read_series(sid) == whole.read_series(sid)
    assert {p.name for p in (clone / "history" / "series").rglob("*.jsonl")} == {
        p.name for p in (repo / "history" / "series").rglob("*.jsonl")}
    # ...and a commit of the checkout takes nothing for deleted
    git(clone, "add", "-A", "--sparse")
    assert git(clone, "status", "--porcelain") == ""


def test_an_absent_shard_is_checked_when_read(tmp_path):
    """What git holds is checked against index.json the moment it is read: a shard edited in the
    branch without its index entry is refused (exit 7 naming it), as on a whole checkout."""
    import pytest

    from vkbench.errors import ResultFileError

    repo = _history(tmp_path)
    index = HistoryStore(repo / "history").index()
    sid = next(iter(index["series"]))
    shard = next((repo / "history" / "series" / sid[:2] / sid).glob(f"{MONTHS[0]}.*"))
    text = shard.read_text()
    assert '"valid":true' in text
    shard.write_text(text.replace('"valid":true', '"valid":false', 1))
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qam", "an edited month")
    part = HistoryStore(_partial(tmp_path, repo, [MONTHS[-1]]) / "history")
    part.verify(deep=True)                  # not on disk: not read
    with pytest.raises(ResultFileError, match=shard.name):
        part.read_series(sid)


def test_the_ci_steps_clone_of_the_history_is_partial(tmp_path):
    """`vkbench ci alert|digest|dispatch` read the history from pages.clone_history: the same
    partial checkout (this month and the last on disk, the rest fetched by the reader)."""
    from vkbench.ci.pages import clone_history

    repo = _history(tmp_path)
    git(repo, "config", "uploadpack.allowFilter", "true")
    env = {"VKBENCH_PAGES_REPO": f"file://{repo}", "VKBENCH_DATA_BRANCH": "data"}
    history = clone_history(tmp_path / "clone", env)
    store = HistoryStore(history)
    assert store.checkout is not None
    assert not list((history / "series").rglob(f"{MONTHS[0]}.*"))      # an old month: in git only
    missing = [line for line in git(tmp_path / "clone", "rev-list", "--objects", "--missing=print", "HEAD").splitlines()
               if line.startswith("?")]
    assert missing, "the old months' contents were fetched"
    store.verify(deep=True)
    whole = HistoryStore(repo / "history")
    assert all(store.read_series(sid) == whole.read_series(sid) for sid in whole.series_ids())
