"""The trust policy of the follow-up workflows (ab.yml, bisect.yml): which repository's refs a
run may name, and which run may go without a reviewer (docs/security.md).

* The repository whose commits the nightly benchmarks - the repository variables
  ``VKBENCH_VALKEY_REPOSITORY`` and ``VKBENCH_VALKEY_BRANCH``, else upstream's - is the *trusted*
  one: only its maintainers push its branches, so an A/B or bisect of it may name a branch, tag
  or short commit. Any other repository's commits are full SHAs: what a reviewer approved is
  exactly what is built, a branch could move after the approval.
* A run is *trusted* (environment ``benchmark-nightly``, no reviewer) only when it is one of the
  nightly's own follow-ups (a confirmation id or an incident id is set) of exactly the trusted
  repository; ``vkbench ab/bisect --require-branch`` then checks both commits are on its branch
  before anything is built.

One pattern for a repository URL (:data:`REPOSITORY_URL`) serves every check here, the dispatch
inputs and the variables alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from .actions import InvalidInput

DEFAULT_REPOSITORY = "https://github.com/valkey-io/valkey"
DEFAULT_BRANCH = "unstable"

#: An https URL of a github.com or gitlab.com repository (GitLab groups may nest).
REPOSITORY_URL = re.compile(r"https://(github\.com|gitlab\.com)/[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+", re.ASCII)
MAX_URL = 200
FULL_SHA = re.compile(r"[0-9a-f]{40}", re.ASCII)
_REF = re.compile(r"[A-Za-z0-9._][A-Za-z0-9._/-]{0,99}", re.ASCII)
_BRANCH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/-]{0,99}", re.ASCII)


def is_repository_url(value: str) -> bool:
    return len(value) <= MAX_URL and REPOSITORY_URL.fullmatch(value) is not None


def is_full_sha(value: str) -> bool:
    return FULL_SHA.fullmatch(value) is not None


@dataclass(frozen=True)
class TrustedSource:
    repository: str
    branch: str

    def is_follow_up(self, repository: str, marker: str) -> bool:
        """A nightly's follow-up (``marker``: a confirmation or incident id) of exactly this
        repository: it may run without a reviewer (once --require-branch checked its commits)."""
        return bool(marker) and repository == self.repository


def trusted_source(env: Mapping[str, str]) -> TrustedSource:
    """The trusted repository and branch from the repository variables (empty: upstream's).

    A malformed value stops the run (exit 2) instead of matching nothing or everything."""
    repository = env.get("VKBENCH_VALKEY_REPOSITORY") or DEFAULT_REPOSITORY
    branch = env.get("VKBENCH_VALKEY_BRANCH") or DEFAULT_BRANCH
    if not is_repository_url(repository):
        raise InvalidInput("VKBENCH_VALKEY_REPOSITORY", "must be the https URL of a github.com or gitlab.com repository",
                           title="Invalid variable VKBENCH_VALKEY_REPOSITORY")
    if not _BRANCH.fullmatch(branch) or ".." in branch or branch.startswith("refs/"):
        raise InvalidInput("VKBENCH_VALKEY_BRANCH", "must be a branch name, e.g. unstable",
                           title="Invalid variable VKBENCH_VALKEY_BRANCH")
    return TrustedSource(repository, branch)


def check_repository(value: str, title: str) -> None:
    if not is_repository_url(value):
        raise InvalidInput("repository", "repository must be an https URL of a github.com or gitlab.com repository", title=title)


def check_commit(name: str, value: str, repository: str, trusted: TrustedSource) -> None:
    """``value`` names a commit of ``repository`` for a build: its full SHA, or - for the trusted
    repository only - a branch, tag or shorter commit (no leading -, no ..)."""
    if is_full_sha(value):
        return
    if repository != trusted.repository:
        raise InvalidInput(name, f"{name} must be the full 40-hex SHA of a commit: for a repository other than the "
                                 "trusted one, a branch or tag could move after the approval")
    if not _REF.fullmatch(value) or ".." in value:
        raise InvalidInput(name, f"{name} must be a branch, tag or commit")
