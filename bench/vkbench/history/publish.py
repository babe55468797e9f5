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
from typing import Callable, Iterable

from ..errors import PublishError
from ..paths import check_branch_name, check_no_symlink, check_repo_arg, safe_subpath
from ..servers.source_build import sigterm_raises
from .ingest import IngestReport, ingest, input_files, load_all
from .store import HistoryStore

AUTHOR = ("vkbench", "vkbench@users.noreply.github.com")
_CREDENTIALS = re.compile(r"(\w+://)[^/@\s]+@")


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

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(["git", *args], cwd=self.cwd, env=self.env, capture_output=True, text=True)
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
    backoff: float = 0.5,
    max_backoff: float = 15.0,
    retry_for: float = 900.0,
) -> PublishReport:
    """Ingest ``results`` into ``<checkout>/<history_subdir>`` on ``branch`` and push.

    ``remote`` is a git URL, a bare repository path, or an existing work tree (its ``origin``
    is then the remote and the work tree is used in place; it must be clean). Otherwise a
    checkout is made in ``workdir`` (a temporary directory, removed afterwards, if None).
    ``before_commit(checkout_root)`` runs after every (re-)ingest, before the commit: use it to
    write detect.json or build the site into the same checkout.

    A rejected push is retried until ``retry_for`` seconds have passed since the first attempt
    (and, if given, at most ``max_retries`` times).
    """
    # names from flags are checked here too (the library is called without the CLI as well):
    # a branch that git would read as an option or a forced refspec, a remote that starts with
    # '-', a history folder outside the checkout
    check_branch_name(branch)
    safe_subpath(history_subdir, "--history-subdir")
    remote_str = check_repo_arg(str(remote))
    paths = input_files(results)
    load_all(paths)                             # every file valid before any git work
    with sigterm_raises():   # SIGTERM unwinds like Ctrl-C: the temporary checkout is removed
        return _publish(paths, remote_str, branch, history_subdir, message, max_retries, before_commit, workdir,
                        backoff, max_backoff, retry_for)


def _publish(paths, remote_str, branch, history_subdir, message, max_retries, before_commit, workdir, backoff, max_backoff, retry_for):
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
        return _publish_loop(git, root, paths, branch, history_subdir, message, max_retries, before_commit, backoff, max_backoff, retry_for)
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


def _publish_loop(git, root, paths, branch, history_subdir, message, max_retries, before_commit, backoff, max_backoff, retry_for):
    ref = f"refs/remotes/origin/{branch}"
    last_error = ""
    messages: list[str] = []
    deadline = time.monotonic() + retry_for
    attempt = 0
    while True:
        attempt += 1
        _reset_to_remote(git, branch, ref)
        # the branch's content is outside input: a symlinked history (or a folder on the way)
        # would take the ingest out of the checkout
        check_no_symlink(root, root / history_subdir, "history")
        report = ingest(HistoryStore(root / history_subdir), paths)
        if before_commit is not None:
            before_commit(root)
        git("add", "-A")
        if git("diff", "--cached", "--quiet", check=False).returncode == 0:
            messages.append("nothing new to publish")
            return PublishReport(False, attempt, None, branch, report, root, messages)
        text = message or f"history: ingest {report.files} result file(s), {report.added} new point(s)"
        git("-c", f"user.name={AUTHOR[0]}", "-c", f"user.email={AUTHOR[1]}", "commit", "-q", "--no-verify", "-m", text)
        commit = git("rev-parse", "HEAD").stdout.strip()
        push = git("push", "-q", "origin", f"HEAD:refs/heads/{branch}", check=False)
        if push.returncode == 0:
            return PublishReport(True, attempt, commit, branch, report, root, messages)
        last_error = redact(push.stderr.strip())
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


def _reset_to_remote(git: _Git, branch: str, ref: str) -> None:
    """Make the checkout exactly the remote branch (or an empty orphan if it has none)."""
    exists = bool(git("ls-remote", "--heads", "origin", f"refs/heads/{branch}").stdout.strip())
    if exists:
        git("fetch", "-q", "origin", f"+refs/heads/{branch}:{ref}")
        git("checkout", "-q", "-f", "-B", branch, ref)
        git("reset", "-q", "--hard", ref)
        git("clean", "-q", "-f", "-d")
    else:
        git("update-ref", "-d", f"refs/heads/{branch}", check=False)
        git("symbolic-ref", "HEAD", f"refs/heads/{branch}")
        git("read-tree", "--empty")
        git("clean", "-q", "-f", "-d", "-x")
