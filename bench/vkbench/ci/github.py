"""The GitHub side of the workflow steps that call the REST API (``vkbench ci dispatch|comment``):
which repository (exactly OWNER/NAME: it becomes part of an API path) and the one client
(:class:`vkbench.alerts.github.GitHubClient`: its redaction, no retry) with the step's token."""

from __future__ import annotations

import re
from typing import Mapping

from ..alerts.github import GitHubClient
from .actions import InvalidInput

_OWNER_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", re.ASCII)


def owner_repo(value: str, name: str) -> str:
    """``value`` as OWNER/NAME, else :class:`InvalidInput`: another segment, or a ``.`` or ``..``
    (a path the server normalises) would send the call somewhere else."""
    owner, _, repo = value.partition("/")
    if not _OWNER_REPO.fullmatch(value) or ".." in value or "." in (owner, repo):
        raise InvalidInput(name, f"{name} must be OWNER/NAME", title=f"Invalid {name}")
    return value


def token(env: Mapping[str, str]) -> str | None:
    return env.get("GH_TOKEN") or env.get("GITHUB_TOKEN") or None


def client(repo: str, env: Mapping[str, str]) -> GitHubClient:
    """The client for ``repo`` with the step's token ($GH_TOKEN, else $GITHUB_TOKEN) and API root
    ($GITHUB_API_URL, which GitHub sets on every runner: api.github.com or GHES's)."""
    return GitHubClient(repo, token(env), api_url=env.get("GITHUB_API_URL") or "https://api.github.com", timeout=60.0)
