"""``vkbench history split``: move an existing history off the Pages branch, losing nothing.

Before: one branch (gh-pages) holds ``history/`` and the site, so Pages publishes every result
copy and raw output. After: a data branch holds ``history/`` - the *same git tree object*, so
not one byte of it changed - and the Pages branch's new tip holds everything but ``history/``.
Both new commits have the old tip as parent: the Pages branch moves forward (no force push),
and the data branch keeps the whole past. Both refs are pushed in one atomic push.

Before pushing, the history is checked as every reader checks it (index, shard digests, every
line) and its points counted; after pushing, the data branch is fetched back and its history
tree compared with the original.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import PublishError
from ..paths import check_branch_name, check_repo_arg, safe_subpath
from .publish import AUTHOR, _Git
from .store import HistoryStore


@dataclass
class SplitReport:
    source_branch: str
    data_branch: str
    history_tree: str
    series: int
    points: int
    data_commit: str
    pages_commit: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def count_points(history: Path) -> tuple[int, int]:
    """(series, points) of a history, every shard read and checked against the index."""
    store = HistoryStore(history)
    index = store.verify(deep=True)
    points = 0
    for sid, entry in index["series"].items():
        read = len(store.read_series(sid, entry))
        if read != entry.get("points", read):
            raise PublishError(f"{history}: series {sid} has {read} points in its shards but {entry['points']} in index.json",
                               hint="run `vkbench ingest --history DIR --rebuild-index` on a checkout of the branch first")
        points += read
    return len(index["series"]), points


def split_history(remote: str, *, source_branch: str = "gh-pages", data_branch: str = "vkbench-data",
                  history_subdir: str = "history", dry_run: bool = False) -> SplitReport:
    """Split ``history_subdir`` of ``source_branch`` off onto ``data_branch`` (see module doc)."""
    check_branch_name(source_branch)
    check_branch_name(data_branch)
    safe_subpath(history_subdir, "--history-subdir")
    remote = check_repo_arg(str(remote))
    if data_branch == source_branch:
        raise PublishError("the data branch must differ from the Pages branch", hint="e.g. --data-branch vkbench-data")
    temp = Path(tempfile.mkdtemp(prefix="vkbench-split-"))
    try:
        git = _Git(temp)
        git("init", "-q", "--bare")
        git("remote", "add", "origin", remote)
        heads = {line.split("\t", 1)[1] for line in git("ls-remote", "--heads", "origin").stdout.splitlines()}
        if f"refs/heads/{data_branch}" in heads:
            raise PublishError(f"{remote}: branch {data_branch!r} already exists", hint="the history was split already; publish with --branch DATA --site-branch PAGES")
        if f"refs/heads/{source_branch}" not in heads:
            raise PublishError(f"{remote}: no branch {source_branch!r}", hint="name the branch that holds history/ with --from")
        git("fetch", "-q", "--depth", "1", "origin", f"refs/heads/{source_branch}:refs/heads/{source_branch}")
        tip = git("rev-parse", source_branch).stdout.strip()
        root_entries = git("ls-tree", tip).stdout.splitlines()
        history_entry = [e for e in root_entries if e.split("\t", 1)[1] == history_subdir]
        if not history_entry or " tree " not in history_entry[0]:
            raise PublishError(f"{source_branch} has no {history_subdir}/ folder at its root", hint="pass --history-subdir")
        history_tree = history_entry[0].split()[2]

        checkout = temp / "check"
        checkout.mkdir()
        archive = subprocess.run(["git", "archive", "--format=tar", history_tree], cwd=temp, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(checkout)], input=archive, check=True, capture_output=True)
        series, points = count_points(checkout)

        data_tree = git("mktree", input_text=history_entry[0] + "\n").stdout.strip()
        pages_tree = git("mktree", input_text="".join(e + "\n" for e in root_entries if e not in history_entry)).stdout.strip()
        ident = ("-c", f"user.name={AUTHOR[0]}", "-c", f"user.email={AUTHOR[1]}")
        data_commit = git(*ident, "commit-tree", data_tree, "-p", tip, "-m",
                          f"history: split off {source_branch} ({series} series, {points} points; same tree {history_tree[:12]})").stdout.strip()
        pages_commit = git(*ident, "commit-tree", pages_tree, "-p", tip, "-m",
                           f"site: the history moved to {data_branch}; this branch holds only what Pages serves").stdout.strip()
        report = SplitReport(source_branch, data_branch, history_tree, series, points, data_commit, pages_commit)
        if dry_run:
            return report
        push = git("push", "-q", "--atomic", "origin", f"{data_commit}:refs/heads/{data_branch}",
                   f"{pages_commit}:refs/heads/{source_branch}", check=False)
        if push.returncode != 0:
            raise PublishError(f"pushing the split failed (nothing changed on the remote): {push.stderr.strip()}",
                               hint=f"{source_branch} may have moved (a publish ran): run the split again")
        git("fetch", "-q", "--depth", "1", "origin", f"+refs/heads/{data_branch}:refs/check/data")
        landed = git("rev-parse", f"refs/check/data:{history_subdir}").stdout.strip()
        if landed != history_tree:
            raise PublishError(f"{data_branch} holds history tree {landed}, not {history_tree}", hint="inspect both branches before publishing again")
        return report
    finally:
        shutil.rmtree(temp, ignore_errors=True)
