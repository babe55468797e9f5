"""A history on disk in part (issue 23): a partial clone with a sparse checkout.

A publish fetches the branch tip without file contents (``git fetch --depth 1 --filter=blob:none``:
commits and trees only) and checks out what a night reads: the history's small files, its
fingerprints, and the month shards and run folders of the months it touches. Ten years of
shards stay in git, listed in the index with the skip-worktree bit, and cost nothing until read.

Every reader goes through :class:`~.store.HistoryStore`, which asks this module for a shard that
is tracked but not on disk: :meth:`PartialCheckout.materialize` fetches the missing contents in
one batch (by object id, as git's own lazy fetch does one at a time) and checks the files out
of the index. So what a night checks out first is only a prefetch: a reader that needs an older
month gets it, slower.

Integrity: a shard that is not on disk is what git's tree says it is (content-addressed, checked
when fetched); the store checks its bytes against index.json (size and sha256) the moment it is
read. Nothing writes a shard that is not on disk: the months a night writes are checked out first.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterable

from ..errors import PublishError
from .series import month_of

#: What every sparse checkout of a history branch holds besides the months a night reads: the
#: branch's top level (and the site folders of a one-branch layout), the history's own files and
#: fingerprints; neither a series shard nor a run folder.
BASE_PATTERNS = ("/*", "!/{h}/series/*/*/*", "!/{h}/runs/*/")

#: In the repository: the files :meth:`PartialCheckout.materialize` checked out since the checkout
#: was made (NUL-separated), so a commit drops those a writer removed.
MATERIALIZED = "vkbench-materialized"

_GIT_SETTINGS = (
    # a lazily fetched object must not start a background gc or maintenance in the checkout
    ("gc.auto", "0"), ("maintenance.auto", "false"), ("fetch.writeCommitGraph", "false"),
    ("core.sparseCheckout", "true"), ("core.sparseCheckoutCone", "false"),
)


def sparse_patterns(history_subdir: str, months: Iterable[str], run_months: Iterable[str] = ()) -> list[str]:
    """The sparse-checkout patterns (non-cone: gitignore rules, the last match wins) of a checkout
    holding ``months``' shards of every series and ``run_months``' run folders."""
    h = history_subdir.strip("/")
    out = [p.format(h=h) for p in BASE_PATTERNS]
    out += [f"/{h}/series/*/*/{month}.*" for month in sorted(set(months))]
    out += [f"/{h}/runs/{month}/" for month in sorted(set(run_months))]
    return out


def night_months(results: list[dict], run_days: Iterable[int], now: datetime | None = None) -> tuple[list[str], list[str]]:
    """(shard months, run-folder months) a partial checkout starts with: the months the results
    fall in, this month and the last (detection asks for more of each series it reads:
    detect/runner.py ``_prefetch``), and for each retention period the months whose runs pass
    it tonight (with a month and a half of slack for nights without a publish)."""
    now = now or datetime.now(timezone.utc)
    ours = {month_of(r["run"]["timestamp"]) for r in results if isinstance((r.get("run") or {}).get("timestamp"), str)}
    shards = ours | {now.strftime("%Y-%m"), (now.replace(day=1) - timedelta(days=1)).strftime("%Y-%m")}
    runs = set(ours)
    for days in run_days:
        newest = now - timedelta(days=days)
        day = newest - timedelta(days=45)
        while day <= newest:
            runs.add(day.strftime("%Y-%m"))
            day += timedelta(days=14)
        runs.add(newest.strftime("%Y-%m"))
    return sorted(shards), sorted(runs)


def configure(git) -> None:
    """Set the checkout up as a partial clone of ``origin`` (git settings only)."""
    for key, value in _GIT_SETTINGS:
        git("config", key, value)
    git("config", "remote.origin.promisor", "true")
    git("config", "remote.origin.partialclonefilter", "blob:none")


def prefetch_blobs(git, oids: Iterable[str]) -> None:
    """Fetch these objects' contents from ``origin`` in one request, as git's own lazy fetch
    does for one (``fetch --stdin`` with object ids): reading them afterwards fetches nothing."""
    wanted = sorted(set(oids))
    if wanted:
        git("-c", "fetch.negotiationAlgorithm=noop", "fetch", "-q", "--no-tags", "--no-write-fetch-head",
            "--recurse-submodules=no", "--filter=blob:none", "--stdin", "origin", input_text="\n".join(wanted) + "\n")


class PartialCheckout:
    """The tracked files of a sparse work tree that are not on disk, and how to get them.

    ``root``: the work tree; ``git(*args, check=True)``: runs git there (publish's runner)."""

    def __init__(self, root: Path, git=None):
        self.root = Path(root)
        self._git = git or _runner(self.root)
        self._absent: set[str] | None = None
        self._by_dir: dict[str, set[str]] = {}     # folder -> names of its absent files
        self._oids: dict[str, str] = {}            # absent path -> its blob id (from git's index)

    def _skipped(self) -> dict[str, str]:
        """``{path: blob id}`` of what git tracks with the skip-worktree bit and is not on disk."""
        oids = {}
        for item in self._git("ls-files", "-s", "-t", "-z").stdout.split("\0"):
            if item.startswith("S "):           # "S <mode> <blob id> <stage>\t<path>"
                meta, _, path = item.partition("\t")
                if not os.path.lexists(self.root / path):
                    oids[path] = meta.split()[2]
        return oids

    def absent(self) -> set[str]:
        """Paths (relative to the root, ``/``-separated) git tracks with the skip-worktree bit and
        that are not on disk. Read once (``git ls-files -t``), then kept up to date."""
        if self._absent is None:
            self._oids = self._skipped()
            self._absent = set(self._oids)
            self._by_dir = {}
            for rel in self._absent:
                folder, _, name = rel.rpartition("/")
                self._by_dir.setdefault(folder, set()).add(name)
        return self._absent

    def relative(self, path: str | os.PathLike) -> str | None:
        """``path`` relative to the root, ``/``-separated; None outside the work tree."""
        try:
            return Path(path).resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return None

    def is_absent(self, path: str | os.PathLike) -> bool:
        rel = self.relative(path)
        return rel is not None and rel in self.absent()

    def absent_names(self, directory: str | os.PathLike) -> list[str]:
        """Names of the absent files directly in ``directory``."""
        rel = self.relative(directory)
        return [] if rel is None else self.absent_in(rel)

    def absent_in(self, folder: str) -> list[str]:
        """Names of the absent files directly in ``folder`` (relative to the root, ``/``-separated)."""
        self.absent()
        return sorted(self._by_dir.get(folder.strip("/"), ()))

    def materialize(self, paths: Iterable[str | os.PathLike]) -> int:
        """Check out those of ``paths`` that are absent: their contents fetched in one request
        (:func:`prefetch_blobs`), then written from git's index (``checkout
        --ignore-skip-worktree-bits``: O(paths); adding them to the sparse patterns would match
        every tracked file against every pattern). Returns how many. Safe from several processes
        (detection's workers): one at a time, under a lock in the repository."""
        wanted = sorted({rel for rel in (self.relative(p) for p in paths) if rel is not None and rel in self.absent()})
        if not wanted:
            return 0
        lock = self.root / ".git" / "vkbench-sparse.lock"
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            prefetch_blobs(self._git, [self._oids[rel] for rel in wanted])
            self._git("checkout", "--ignore-skip-worktree-bits", "--pathspec-from-file=-", "--pathspec-file-nul",
                      input_text="\0".join(wanted))
            with open(self.root / ".git" / MATERIALIZED, "a", encoding="utf-8") as log:   # for removed()
                log.write("".join(rel + "\0" for rel in wanted))
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
        missing = [rel for rel in wanted if not (self.root / rel).is_file()]
        if missing:
            raise PublishError(f"{self.root / missing[0]}: git did not check it out from the partial clone",
                               hint="the remote must serve missing objects of a partial clone (uploadpack.allowFilter); "
                                    "publish with --full-fetch")
        self._absent.difference_update(wanted)
        for rel in wanted:
            self._oids.pop(rel, None)
            folder, _, name = rel.rpartition("/")
            self._by_dir.get(folder, set()).discard(name)
        return len(wanted)

    def removed(self) -> list[str]:
        """Files checked out by :meth:`materialize` (in any process) and gone now (retention
        removed them): what a commit must drop. ``git add -A`` does not: git marks a missing file
        outside the sparse patterns skip-worktree, as if it had never been checked out."""
        try:
            recorded = (self.root / ".git" / MATERIALIZED).read_text(encoding="utf-8").split("\0")
        except FileNotFoundError:
            return []
        return sorted({rel for rel in recorded if rel and not os.path.lexists(self.root / rel)})

    def forget_materialized(self) -> None:
        """A fresh checkout of the branch: nothing was checked out by a reader yet."""
        (self.root / ".git" / MATERIALIZED).unlink(missing_ok=True)

    def stage_removed(self) -> int:
        """Drop :meth:`removed` from git's index (the next commit deletes them). Returns how many."""
        gone = self.removed()
        if gone:
            self._git("update-index", "--force-remove", "-z", "--stdin", input_text="\0".join(gone) + "\0")
        return len(gone)


def find(history_dir: str | os.PathLike) -> PartialCheckout | None:
    """The partial checkout ``history_dir`` lies in, if it does: a git work tree whose sparse
    checkout is on (as publish leaves it for the steps after it). None otherwise (a complete
    history: every reader finds every file)."""
    here = Path(history_dir).resolve()
    for top in (here, *here.parents):
        dot_git = top / ".git"
        if dot_git.is_dir():
            if not (dot_git / "info" / "sparse-checkout").is_file():
                return None
            run = _runner(top)
            if run("config", "--bool", "core.sparseCheckout", check=False).stdout.strip() != "true":
                return None
            return PartialCheckout(top, run)
        if dot_git.exists():
            return None          # a linked work tree or a submodule: never sparse here
    return None


def _runner(root: Path):
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", LC_ALL="C")

    def git(*args: str, check: bool = True, input_text: str | None = None) -> subprocess.CompletedProcess:
        proc = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True, input=input_text)
        if check and proc.returncode != 0:
            raise PublishError(f"git {' '.join(args[:3])} failed in {root}: {proc.stderr.strip() or proc.stdout.strip()}",
                               hint="the history's partial checkout is damaged: publish again (it starts from a fresh one)")
        return proc
    return git


__all__ = ["PartialCheckout", "configure", "find", "night_months", "prefetch_blobs", "sparse_patterns"]
