"""One bare git mirror per repository URL, under ``<cache>/git/<name>-<hash of URL>``.

Every source build, A/B and bisect resolves refs through the mirror of its URL, so a ref of one
repository is never served for another, a second build of a nearby commit fetches only what is
new, and the commit range of a bisect is there to list. Refs:

- a full commit (40 hex): used as is when the mirror has it, else fetched by id;
- a short commit (7..39 hex): the mirror's branches and tags are fetched, then the prefix must
  name exactly one commit;
- anything else (``unstable``, ``8.0``, ``8.0.1``, ``refs/pull/1234/head``): fetched by name.

Git's own error lines (``fatal: ...``) are kept whole in the messages, credentials of any URL
in them redacted.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import MissingBinaryError
from . import cache
from .catalog import GIT_REF

FETCH_TIMEOUT_S = 600
FULL_SHA = re.compile(r"^[0-9a-f]{40}$")
SHORT_SHA = re.compile(r"^[0-9a-f]{7,39}$")
_HEADS_AND_TAGS = ("+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*")


def redact(url: str) -> str:
    """The URL - or every URL in a text - without credentials (``https://token@host/..`` ->
    ``https://***@host/..``)."""
    return re.sub(r"//[^/@\s'\"]+@", "//***@", url)


def mirror_name(url: str) -> str:
    tail = re.sub(r"[^A-Za-z0-9._-]", "_", url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git"))[:40] or "repo"
    return f"{tail}-{hashlib.sha256(url.encode()).hexdigest()[:12]}"


def git_env() -> dict[str, str]:
    # No prompts for credentials; a stalled transfer fails instead of hanging the run.
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "LC_ALL": "C"}


def git(args: list[str], cwd: Path, what: str, *, url: str, timeout: float = FETCH_TIMEOUT_S) -> str:
    cmd = ["git", "-c", "http.lowSpeedLimit=1000", "-c", "http.lowSpeedTime=30", *args]
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=git_env(), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise MissingBinaryError(f"{what} timed out after {timeout:.0f} s", hint=f"check access to {redact(url)}") from None
    if proc.returncode != 0:
        raise MissingBinaryError(f"{what} failed: {git_error(proc.stderr)}", hint=_access_hint(url))
    return proc.stdout.strip()


def git_error(stderr: str) -> str:
    """Git's ``fatal:``/``error:`` lines whole, else the last lines; a URL's credentials (git
    names the URL it failed on, token included) are redacted."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    important = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return redact("\n".join(important or lines[-3:])) or "(no output)"


def _access_hint(url: str) -> str:
    return (f"the source build needs access to {redact(url)} (set VKBENCH_VALKEY_GIT_URL to a reachable mirror, "
            "or pass --repo), or use a released version from `vkbench servers list`, or pass a path to a valkey-server")


@dataclass(frozen=True)
class Mirror:
    url: str
    path: Path

    @classmethod
    def for_url(cls, url: str, root: Path | None = None) -> Mirror:
        return cls(url, (root or cache.cache_dir()) / "git" / mirror_name(url))

    def _git(self, args: list[str], what: str, *, timeout: float = FETCH_TIMEOUT_S) -> str:
        return git(args, self.path, what, url=self.url, timeout=timeout)

    def ensure(self) -> None:
        if (self.path / "HEAD").is_file():
            return
        self.path.mkdir(parents=True, exist_ok=True)
        self._git(["init", "-q", "--bare"], "git init")
        (self.path / "vkbench-url").write_text(redact(self.url) + "\n")

    def has_commit(self, sha: str) -> bool:
        proc = subprocess.run(["git", "cat-file", "-e", f"{sha}^{{commit}}"], cwd=self.path, env=git_env(),
                              capture_output=True, timeout=30)
        return proc.returncode == 0

    def _rev(self, rev: str) -> str | None:
        proc = subprocess.run(["git", "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
                              cwd=self.path, env=git_env(), capture_output=True, text=True, timeout=30)
        return proc.stdout.strip() if proc.returncode == 0 else None

    def fetch(self, *refspecs: str) -> None:
        # --update-shallow: a shallow remote (a partial mirror, a CI snapshot) may move the
        # mirror's shallow boundary; without it git silently rejects the refs.
        self._git(["fetch", "-q", "--update-shallow", "--no-write-fetch-head", "--force", self.url, *refspecs],
                  f"git fetch {' '.join(refspecs)} from {redact(self.url)}")

    def resolve(self, ref: str) -> str:
        """The full commit ``ref`` names in this repository (fetching what is needed)."""
        if not GIT_REF.match(ref) or ".." in ref:
            raise MissingBinaryError(f"{ref!r} is not a git ref",
                                     hint="use a branch, tag or commit, e.g. valkey:unstable, valkey:8.0@source, a SHA")
        with cache.entry_lock(f"git-{self.path.name}", self.path.parent.parent):
            self.ensure()
            lowered = ref.lower()
            if FULL_SHA.match(lowered):
                if not self.has_commit(lowered):
                    self.fetch(lowered)
                return lowered
            if SHORT_SHA.match(lowered):
                return self._resolve_prefix(lowered)
            local = f"refs/vkbench/{hashlib.sha256(ref.encode()).hexdigest()[:16]}"
            self._git(["fetch", "-q", "--update-shallow", "--force", self.url, f"+{ref}:{local}"],
                      f"git fetch {ref} from {redact(self.url)}")
            commit = self._rev(local)
            if commit is None:
                raise MissingBinaryError(f"{ref} in {redact(self.url)} is not a commit", hint="name a branch, tag or commit")
            return commit

    def _resolve_prefix(self, prefix: str) -> str:
        found = self._rev(prefix)
        if found is None:
            self.fetch(*_HEADS_AND_TAGS)
            proc = subprocess.run(["git", "rev-parse", "--verify", f"{prefix}^{{commit}}"], cwd=self.path,
                                  env=git_env(), capture_output=True, text=True, timeout=30)
            if proc.returncode != 0:
                raise MissingBinaryError(
                    f"{prefix} names no single commit of the branches and tags of {redact(self.url)}: "
                    f"{git_error(proc.stderr)}",
                    hint="give more hex digits or the full 40-character SHA",
                )
            found = proc.stdout.strip()
        return found

    def commit_time(self, sha: str) -> int:
        return int(self._git(["show", "-s", "--format=%ct", sha], "git show"))

    def subject(self, sha: str) -> str:
        return self._git(["show", "-s", "--format=%s", sha], "git show")

    def first_parent_range(self, good: str, bad: str) -> list[str]:
        """Commits after ``good`` up to and including ``bad``, oldest first (first-parent line)."""
        out = self._git(["rev-list", "--first-parent", "--reverse", f"{good}..{bad}"], "git rev-list")
        return out.split() if out else []

    def changed_files(self, base: str, head: str) -> list[str]:
        """Files a pull request from ``base`` to ``head`` changes: ``git diff base...head`` (since
        their merge base, as GitHub shows a pull request's files). Both must be resolved commits."""
        out = self._git(["diff", "--name-only", "--no-renames", f"{base}...{head}"], "git diff --name-only")
        return [line for line in out.splitlines() if line]

    def is_ancestor(self, older: str, newer: str) -> bool:
        proc = subprocess.run(["git", "merge-base", "--is-ancestor", older, newer], cwd=self.path, env=git_env(),
                              capture_output=True, timeout=30)
        return proc.returncode == 0
