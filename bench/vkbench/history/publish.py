"""Publish results into the history on a git branch (gh-pages), safe against concurrent runs.

Each attempt starts from the remote branch as it is *now*, re-applies the ingest (plus the
caller's ``before_commit`` steps: detection, site build) and pushes without force. A push
rejected because another publisher got there first (non-fast-forward) is retried from the
new tip after a backoff with full jitter (a random wait up to a doubling cap, so N racing
publishers spread out instead of colliding again in lockstep). Retries are bounded by time
(``retry_for`` seconds), not by a count: 20 publishers at once all land with the defaults
(tests/hardening/test_publish_twenty.py). Because the ingest is re-applied rather than files merged,
every run lands exactly once and the branch history stays linear.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, TypeVar

from ..errors import PublishError
from ..paths import check_branch_name, check_no_symlink, check_repo_arg, safe_subpath
from ..servers.source_build import sigterm_raises
from .ingest import IngestReport, ingest, input_files, load_all
from .partial import PartialCheckout, configure as configure_partial, night_months, prefetch_blobs, sparse_patterns
from .store import HistoryStore

AUTHOR = ("vkbench", "vkbench@users.noreply.github.com")
_CREDENTIALS = re.compile(r"(\w+://)[^/@\s]+@")
T = TypeVar("T")


@dataclass(frozen=True)
class SiteBuild:
    """How publish builds the trend site into its folder (``vkbench.site.build``, handed in by
    the CLI: the history package does not import the site's). ``build(site_dir, store, sparse)``
    returns a report with ``written``/``removed`` (paths relative to the site folder) and
    ``complete``; ``reads(site_dir)``: the files of the previous site the next build reads (known
    from its manifest). With a separate site branch, publish checks out only those (a partial
    clone) and commits exactly what the build wrote and removed."""

    build: Callable[[Path, HistoryStore, bool], object]
    reads: Callable[[Path], list[str]]
    #: the build's manifest, relative to the site folder: ``reads`` works from it alone
    manifest: str = "data/build-manifest.json"


@dataclass
class PublishReport:
    pushed: bool
    attempts: int
    commit: str | None
    branch: str
    ingest: IngestReport | None
    workdir: Path
    messages: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "pushed": self.pushed, "attempts": self.attempts, "commit": self.commit, "branch": self.branch,
            "ingest": self.ingest.to_dict() if self.ingest else None, "workdir": str(self.workdir),
        }


def redact(text: str) -> str:
    """Remove credentials from URLs (https://x-access-token:TOKEN@github.com/...)."""
    return _CREDENTIALS.sub(r"\1***@", text)


class _Git:
    def __init__(self, cwd: Path):
        self.cwd = cwd
        self.env = dict(os.environ, GIT_TERMINAL_PROMPT="0", LC_ALL="C")

    def __call__(self, *args: str, check: bool = True, input_text: str | None = None) -> subprocess.CompletedProcess:
        proc = subprocess.run(["git", *args], cwd=self.cwd, env=self.env, capture_output=True, text=True, input=input_text)
        if check and proc.returncode != 0:
            raise PublishError(
                redact(f"git {' '.join(args)} failed in {self.cwd}: {proc.stderr.strip() or proc.stdout.strip()}"),
                hint="check the remote URL and the token's contents: write permission",
            )
        return proc


def is_worktree(path: str | os.PathLike) -> bool:
    p = Path(path)
    if not p.is_dir():
        return False
    proc = subprocess.run(["git", "rev-parse", "--is-inside-work-tree", "--show-toplevel"], cwd=p, capture_output=True, text=True)
    if proc.returncode != 0:
        return False
    lines = proc.stdout.split()
    return lines[:1] == ["true"] and Path(lines[1]).resolve() == p.resolve()


def publish(
    results: Iterable[str | os.PathLike],
    remote: str | os.PathLike,
    branch: str = "gh-pages",
    *,
    history_subdir: str = "history",
    message: str | None = None,
    max_retries: int | None = None,
    before_commit: Callable[[Path], None] | None = None,
    workdir: str | os.PathLike | None = None,
    before_commit_store: Callable[[Path, HistoryStore], None] | None = None,
    backoff: float = 0.5,
    max_backoff: float = 15.0,
    retry_for: float = 900.0,
    site_branch: str | None = None,
    site_subdir: str | None = None,
    shallow: bool = True,
    strict: bool = False,
    run_days: Iterable[int] = (),
    site: SiteBuild | None = None,
) -> PublishReport:
    """Ingest ``results`` into ``<checkout>/<history_subdir>`` on ``branch`` and push.

    ``remote`` is a git URL, a bare repository path, or an existing work tree (its ``origin``
    is then the remote and the work tree is used in place; it must be clean). Otherwise a
    checkout is made in ``workdir`` (a temporary directory, removed afterwards, if None).
    ``before_commit(checkout_root)`` runs after every (re-)ingest, before the commit: use it to
    write detect.json or build the site into the same checkout. ``before_commit_store(checkout_root,
    store)``, after it, is also handed the :class:`HistoryStore` the ingest read and wrote through:
    reading through it, detection and the site do not parse again the shards the ingest checked.

    A rejected push is retried until ``retry_for`` seconds have passed since the first attempt
    (and, if given, at most ``max_retries`` times).

    ``shallow``: fetch only the branch tips (``--depth 1``), so a publish costs the night's
    work, not the branch's past (not for an existing work tree, which is used as it is); and
    the history's tip in part (history/partial.py): its small files and the months the
    results fall in, the rest fetched when a reader needs it. ``run_days``: the retention
    periods in days; the run folders of the months retention prunes tonight are checked out.
    ``site``: build the site into ``site_subdir`` after the hooks (:class:`SiteBuild`); on a
    separate, shallow site branch the build is sparse: it reads and writes what changed only.
    ``site_branch``: ``branch`` then holds the history (a data branch nobody publishes) and
    ``site_branch`` only ``<site_subdir>/`` (what the browser loads); both are pushed in one
    atomic push, so either both land or neither does (docs/history-format.md, "Branches").
    """
    # names from flags are checked here too (the library is called without the CLI as well):
    # a branch that git would read as an option or a forced refspec, a remote that starts with
    # '-', a history folder outside the checkout
    check_branch_name(branch)
    safe_subpath(history_subdir, "--history-subdir")
    if site_branch is not None:
        check_branch_name(site_branch)
        _check_site_split(branch, site_branch, history_subdir, site_subdir)
    remote_str = check_repo_arg(str(remote))
    if site is not None and not site_subdir:
        raise PublishError("building the site needs its folder", hint="pass --site-out FOLDER")
    if site_subdir is not None:
        safe_subpath(site_subdir, "--site-out")
    paths = input_files(results)
    loaded = load_all(paths)                    # every file valid before any git work
    months = night_months(loaded, run_days)
    with sigterm_raises():   # SIGTERM unwinds like Ctrl-C: the temporary checkout is removed
        return _publish(paths, remote_str, branch, history_subdir, message, max_retries,
                        _before_commit_hooks(before_commit, before_commit_store), workdir,
                        backoff, max_backoff, retry_for, site_branch, site_subdir, shallow, strict, months, site)


def _before_commit_hooks(before_commit, before_commit_store) -> Callable[[Path, HistoryStore], None] | None:
    """Both hooks as one, called with the checkout and the ingest's store."""
    if before_commit is None and before_commit_store is None:
        return None

    def hooks(root: Path, store: HistoryStore) -> None:
        if before_commit is not None:
            before_commit(root)
        if before_commit_store is not None:
            before_commit_store(root, store)
    return hooks


def _publish(paths, remote_str, branch, history_subdir, message, max_retries, before_commit, workdir, backoff, max_backoff, retry_for,
             site_branch, site_subdir, shallow, strict=False, months=None, site=None):
    in_place = is_worktree(remote_str)
    temp = None
    if in_place:
        root = Path(remote_str)
        git = _Git(root)
        if git("status", "--porcelain").stdout.strip():
            raise PublishError(f"{root}: the work tree has uncommitted changes", hint="publish needs a clean checkout of the branch; commit or discard them")
        if not git("remote", check=False).stdout.split().count("origin"):
            raise PublishError(f"{root}: no 'origin' remote to push to", hint="git remote add origin URL")
    else:
        if workdir is None:
            temp = Path(tempfile.mkdtemp(prefix="vkbench-publish-"))
            root = temp / "checkout"
        else:
            root = Path(workdir)
        root.mkdir(parents=True, exist_ok=True)
        git = _Git(root)
    try:
        if not in_place:
            git("init", "-q")
            if git("remote", check=False).stdout.split().count("origin"):
                git("remote", "set-url", "--", "origin", remote_str)
            else:
                git("remote", "add", "--", "origin", remote_str)
        layout = _Layout(branch, history_subdir, site_branch, site_subdir, shallow and not in_place, strict,
                         months if shallow and not in_place and months is not None else None, site)
        return _publish_loop(git, root, paths, layout, message, max_retries, before_commit, backoff, max_backoff, retry_for)
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


@dataclass(frozen=True)
class _Layout:
    """Where things go: the history on ``branch``; the site in ``site_subdir``, on
    ``site_branch`` when the site is split off (else on ``branch`` too)."""

    branch: str
    history_subdir: str
    site_branch: str | None
    site_subdir: str | None
    shallow: bool
    strict: bool = False     # ingest --strict: a known run_id/cell_id with other numbers fails the publish
    #: a partial checkout of the history (history/partial.py): (shard months, run-folder months)
    #: it starts with; None: the whole tree on disk
    partial: tuple[list[str], list[str]] | None = None
    site: SiteBuild | None = None

    @property
    def sparse_site(self) -> bool:
        """The site branch is checked out in part and built sparse (what changed only)."""
        return self.site is not None and self.site_branch is not None and self.partial is not None


_SITE_INDEX = "vkbench-site.index"   # the site branch's own index file inside .git


def _check_site_split(branch: str, site_branch: str, history_subdir: str, site_subdir: str | None) -> None:
    if not site_subdir:
        raise PublishError("a separate site branch needs the site's folder", hint="pass --site-out FOLDER with --site-branch")
    if site_branch == branch:
        raise PublishError(f"the site branch and the data branch are both {branch!r}", hint="name another --branch for the history, e.g. vkbench-data")
    parts = {Path(history_subdir).parts[:1] and Path(history_subdir).parts[0], Path(site_subdir).parts[0]}
    if len(parts) != 2 or any(p in ("", ".", "..") for p in parts) or Path(site_subdir).is_absolute():
        raise PublishError(f"the site folder {site_subdir!r} and the history folder {history_subdir!r} must be separate folders of the branch",
                           hint="e.g. --site-out site with the history in history/")


class _Rejected(Exception):
    """A push another writer got ahead of (its stderr, redacted)."""


def _until_pushed(try_once: Callable[[int], T], branch: str, messages: list[str], *, backoff: float, max_backoff: float,
                  retry_for: float, max_retries: int | None) -> T:
    """Call ``try_once(attempt)`` (which starts from the remote tip, commits and pushes, raising
    :class:`_Rejected` when the push loses a race) until it returns, retrying after a backoff with
    full jitter for at most ``retry_for`` seconds (and ``max_retries`` times, if given). The one
    retry loop of every branch update: publish, confirmation and bisect records."""
    deadline = time.monotonic() + retry_for
    attempt = 0
    last_error = ""
    while True:
        attempt += 1
        try:
            return try_once(attempt)
        except _Rejected as exc:
            last_error = str(exc)
        messages.append(f"attempt {attempt}: push rejected: {last_error.splitlines()[-1] if last_error else '?'}")
        # full jitter: anywhere between 0 and a cap that doubles with each rejection
        delay = random.uniform(0, min(max_backoff, backoff * 2 ** min(attempt - 1, 20)))
        out_of_time = time.monotonic() + delay > deadline
        if out_of_time or (max_retries is not None and attempt > max_retries):
            break
        time.sleep(delay)
    raise PublishError(
        f"pushing {branch} failed after {attempt} attempts in {retry_for - max(0.0, deadline - time.monotonic()):.0f} s: {last_error}",
        hint="another publisher may be stuck, or the token cannot push; re-run the job (publishing is idempotent)",
    )


def _publish_loop(git, root, paths, layout, message, max_retries, before_commit, backoff, max_backoff, retry_for):
    branch = layout.branch
    ref = f"refs/remotes/origin/{branch}"
    messages: list[str] = []

    def try_once(attempt: int) -> PublishReport:
        patterns = None if layout.partial is None else sparse_patterns(layout.history_subdir, *layout.partial)
        _reset_to_remote(git, branch, ref, shallow=layout.shallow, sparse=patterns)
        # the branch's content is outside input: a symlinked history (or a folder on the way)
        # would take the ingest out of the checkout
        check_no_symlink(root, root / layout.history_subdir, "history")
        site_parent = None
        if layout.site_branch is not None:
            site_parent = _checkout_site(git, root, layout)
            check_no_symlink(root, root / layout.site_subdir, "site")
        partial = PartialCheckout(root, git) if patterns is not None else None
        if partial is not None:
            partial.forget_materialized()
        store = HistoryStore(root / layout.history_subdir, checkout=partial)
        report = ingest(store, paths, strict=layout.strict)
        if before_commit is not None:
            before_commit(root, store)
        built = None
        if layout.site is not None:
            check_no_symlink(root, root / layout.site_subdir, "site")   # the branch may carry a symlinked site folder
            built = layout.site.build(root / layout.site_subdir, store, layout.sparse_site)
        data_paths = ["."] if layout.site_branch is None else [".", f":(exclude){layout.site_subdir}"]
        # --sparse: new files (a new month's shards) may lie outside the checkout's patterns;
        # tracked files not on disk are never taken for deleted, and those a reader checked out and
        # retention removed are dropped explicitly
        if partial is not None:
            partial.stage_removed()
        git("add", "-A", *(["--sparse"] if patterns is not None else []), "--", *data_paths)
        data_changed = git("diff", "--cached", "--quiet", check=False).returncode != 0
        site_commit = None
        if layout.site_branch is not None:
            site_commit = _commit_site(git, root, layout, site_parent, message or "site: rebuilt from the history",
                                       built if layout.sparse_site else None)
        if not data_changed and site_commit is None:
            messages.append("nothing new to publish")
            return PublishReport(False, attempt, None, branch, report, root, messages)
        refspecs = []
        if data_changed:
            text = message or f"history: ingest {report.files} result file(s), {report.added} new point(s)"
            git("-c", f"user.name={AUTHOR[0]}", "-c", f"user.email={AUTHOR[1]}", "commit", "-q", "--no-verify", "-m", text)
            refspecs.append(f"HEAD:refs/heads/{branch}")
        if site_commit is not None:
            refspecs.append(f"{site_commit}:refs/heads/{layout.site_branch}")
        commit = git("rev-parse", "HEAD").stdout.strip() if data_changed else site_commit
        push = git("push", "-q", *(["--atomic"] if len(refspecs) > 1 else []), "origin", *refspecs, check=False)
        if push.returncode != 0:
            raise _Rejected(redact(push.stderr.strip()))
        return PublishReport(True, attempt, commit, branch, report, root, messages)

    return _until_pushed(try_once, branch, messages, backoff=backoff, max_backoff=max_backoff, retry_for=retry_for,
                         max_retries=max_retries)


@dataclass
class UpdateReport:
    pushed: bool
    attempts: int
    commit: str | None
    output: str
    messages: list[str] = field(default_factory=list)


def update_branch(
    remote: str | os.PathLike,
    branch: str,
    apply: Callable[[Path], str],
    message: str,
    *,
    backoff: float = 0.5,
    max_backoff: float = 15.0,
    retry_for: float = 900.0,
    max_retries: int | None = None,
) -> UpdateReport:
    """Apply one change to the branch and push it, with publish's retry loop: every attempt starts
    from the remote tip (a shallow fetch), calls ``apply(checkout_root)`` (it writes the change,
    e.g. a confirmation or bisect record into ``history/``, and returns what it reports), commits
    whatever changed and pushes without force. Nothing changed: no commit, ``pushed`` False.
    The checkout is partial, as publish's: ``apply`` reads the history through HistoryStore,
    which fetches what is not on disk."""
    check_branch_name(branch)
    remote_str = check_repo_arg(str(remote))
    messages: list[str] = []
    with sigterm_raises(), tempfile.TemporaryDirectory(prefix="vkbench-update-") as temp:
        root = Path(temp) / "checkout"
        root.mkdir()
        git = _Git(root)
        git("init", "-q")
        git("remote", "add", "--", "origin", remote_str)
        ref = f"refs/remotes/origin/{branch}"

        # a partial checkout (history/partial.py): the history's own files and this month's and the
        # last one's shards; what apply's readers need besides is fetched when they read it
        patterns = sparse_patterns("history", night_months([], ())[0])

        def try_once(attempt: int) -> UpdateReport:
            _reset_to_remote(git, branch, ref, shallow=True, sparse=patterns)
            partial = PartialCheckout(root, git)
            partial.forget_materialized()
            output = apply(root)
            partial.stage_removed()
            git("add", "-A", "--sparse")
            if git("diff", "--cached", "--quiet", check=False).returncode == 0:
                return UpdateReport(False, attempt, None, output, messages)
            git("-c", f"user.name={AUTHOR[0]}", "-c", f"user.email={AUTHOR[1]}", "commit", "-q", "--no-verify", "-m", message)
            push = git("push", "-q", "origin", f"HEAD:refs/heads/{branch}", check=False)
            if push.returncode != 0:
                raise _Rejected(redact(push.stderr.strip()))
            return UpdateReport(True, attempt, git("rev-parse", "HEAD").stdout.strip(), output, messages)

        return _until_pushed(try_once, branch, messages, backoff=backoff, max_backoff=max_backoff, retry_for=retry_for,
                             max_retries=max_retries)


def _site_git(git: _Git) -> _Git:
    """The same repository with the site branch's own index (the work tree is shared: the
    site folder is excluded from the data branch's commits)."""
    site = _Git(git.cwd)
    site.env = dict(git.env, GIT_INDEX_FILE=str(Path(git("rev-parse", "--absolute-git-dir").stdout.strip()) / _SITE_INDEX))
    return site


def _checkout_site(git: _Git, root: Path, layout: _Layout) -> str | None:
    """Put the site branch's ``<site_subdir>/`` into the work tree (the incremental site build
    starts from it); returns the site branch's tip, or None when it does not exist yet."""
    ref = f"refs/remotes/origin/{layout.site_branch}"
    site = _site_git(git)
    shutil.rmtree(root / layout.site_subdir, ignore_errors=True)
    if not git("ls-remote", "--heads", "origin", f"refs/heads/{layout.site_branch}").stdout.strip():
        site("read-tree", "--empty")
        return None
    git("fetch", "-q", *(["--depth", "1"] if layout.shallow else []), *(["--filter=blob:none"] if layout.sparse_site else []),
        "origin", f"+refs/heads/{layout.site_branch}:{ref}")
    site("read-tree", ref)
    if layout.sparse_site:
        # the manifest, then only what the build will read: the heads and newest chunks
        listing = _tree_files(git, ref, layout.site_subdir)
        manifest = [p for p in (f"{layout.site_subdir}/{layout.site.manifest}",) if p in listing]
        _checkout_files(git, site, ref, listing, manifest)
        reads = [f"{layout.site_subdir}/{rel}" for rel in layout.site.reads(root / layout.site_subdir)]
        _checkout_files(git, site, ref, listing, [p for p in reads if p in listing and p not in manifest])
    elif git("ls-tree", "-d", ref, "--", layout.site_subdir).stdout.strip():
        site("checkout", "-f", ref, "--", layout.site_subdir)   # only the site folder: nothing else lands in the data tree
    return git("rev-parse", ref).stdout.strip()


def _tree_files(git: _Git, ref: str, folder: str) -> dict[str, str]:
    """``{path: blob id}`` of the files under ``folder`` in ``ref`` (trees only: no contents fetched)."""
    out = {}
    for line in git("ls-tree", "-r", "-z", "--full-tree", ref, "--", folder).stdout.split("\0"):
        if line:
            meta, path = line.split("\t", 1)
            out[path] = meta.split()[2]
    return out


def _checkout_files(git: _Git, site: _Git, ref: str, listing: dict[str, str], paths: list[str]) -> None:
    """Write ``paths`` of ``ref`` into the work tree, their contents fetched in one batch first (a
    checkout of paths would fetch each missing one on its own)."""
    if not paths:
        return
    prefetch_blobs(git, [listing[p] for p in paths])
    site("checkout", "-f", ref, "--pathspec-from-file=-", "--pathspec-file-nul", input_text="\0".join(paths))


def _commit_site(git: _Git, root: Path, layout: _Layout, parent: str | None, message: str, built=None) -> str | None:
    """Commit the site folder alone onto the site branch; None when it did not change. ``built``:
    a sparse build's report: exactly its written and removed files change (the others are not on
    disk); a complete one replaces the folder."""
    site = _site_git(git)
    if built is not None:
        sub = layout.site_subdir
        if built.complete:
            site("rm", "-r", "-q", "-f", "--cached", "--ignore-unmatch", "--", sub)
        if built.written:
            site("add", "-f", "--sparse", "--pathspec-from-file=-", "--pathspec-file-nul",
                 input_text="\0".join(f"{sub}/{rel}" for rel in built.written))
        if built.removed:
            site("update-index", "--force-remove", "-z", "--stdin", input_text="\0".join(f"{sub}/{rel}" for rel in built.removed) + "\0")
    elif (root / layout.site_subdir).exists() or site("ls-files", "--", layout.site_subdir).stdout.strip():
        site("add", "-A", "-f", "--", layout.site_subdir)   # on top of the site branch's index: unchanged files are not re-hashed
    tree = site("write-tree").stdout.strip()
    if parent is not None and tree == git("rev-parse", f"{parent}^{{tree}}").stdout.strip():
        return None
    args = ["commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
    return git("-c", f"user.name={AUTHOR[0]}", "-c", f"user.email={AUTHOR[1]}", *args).stdout.strip()


def _reset_to_remote(git: _Git, branch: str, ref: str, *, shallow: bool = False, sparse: list[str] | None = None) -> None:
    """Make the checkout exactly the remote branch (or an empty orphan if it has none);
    ``shallow``: fetch its tip only (the past is never read, and pushing on top of a shallow
    tip is an ordinary fast-forward for the remote). ``sparse``: a partial clone (no file
    contents fetched but those checked out) with these sparse-checkout patterns
    (history/partial.py); a remote that cannot filter sends everything, and it still works."""
    exists = bool(git("ls-remote", "--heads", "origin", f"refs/heads/{branch}").stdout.strip())
    if sparse is not None:
        configure_partial(git)
        git_dir = Path(git("rev-parse", "--absolute-git-dir").stdout.strip())
        (git_dir / "info").mkdir(exist_ok=True)
        (git_dir / "info" / "sparse-checkout").write_text("\n".join(sparse) + "\n", encoding="utf-8")
    if exists:
        git("fetch", "-q", *(["--depth", "1"] if shallow else []), *(["--filter=blob:none"] if sparse is not None else []),
            "origin", f"+refs/heads/{branch}:{ref}")
        git("checkout", "-q", "-f", "-B", branch, ref)
        git("reset", "-q", "--hard", ref)
        git("clean", "-q", "-f", "-d")
    else:
        git("update-ref", "-d", f"refs/heads/{branch}", check=False)
        git("symbolic-ref", "HEAD", f"refs/heads/{branch}")
        git("read-tree", "--empty")
        git("clean", "-q", "-f", "-d", "-x")
