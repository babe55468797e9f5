"""Source builds of Valkey for the tests: the repository, a shared build cache and a repository
with a deliberate slowdown.

The repository is ``$VKBENCH_VALKEY_GIT_URL`` (.ci/run points it at a local snapshot of Valkey's
repository; by default upstream on GitHub). Builds go to the normal vkbench cache
(``$VKBENCH_CACHE``, where the setup put the client tools), keyed by commit and build
configuration, with ccache under it: every test of the session, and every later session, reuses
them. The commit and the configuration are tests/source_builds.py's, shared with the workflow
tests under act.

``slowdown_repo`` (reused by other tests, e.g. profile diffs): a local clone where the fixture
itself adds, on top of ``BASE_COMMIT``, a neutral commit, a commit that makes ``call()`` in
src/server.c do extra work for every command, and another neutral commit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from source_builds import (BASE_COMMIT, BUILD_ENV, COST_FUNCTION, commit_counted_cost,  # tests/ is on sys.path
                           commit_readme_note, git)
from vkbench.servers import source_build

__all__ = ["BASE_COMMIT", "git"]
SLOW_FUNCTION = "call"
#: Extra work per command in call(): a few microseconds, several times a command's own cost.
SLOWDOWN_LOOP = (
    "    /* vkbench test: a deliberate slowdown, extra work for every command. */\n"
    "    for (volatile int vkbench_spin = 0; vkbench_spin < 8000; vkbench_spin++) {\n"
    "    }\n"
)
@pytest.fixture(scope="session")
def valkey_url() -> str:
    return source_build.repo_url()


@pytest.fixture(scope="session", autouse=True)
def build_settings():
    """The suite's build configuration (source_builds.BUILD_ENV) for every source build of the session."""
    saved = {k: os.environ.get(k) for k in BUILD_ENV}
    os.environ.update(BUILD_ENV)
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@dataclass(frozen=True)
class SlowdownRepo:
    path: Path
    url: str              # file:// URL of the clone
    good: str             # BASE_COMMIT, full SHA
    neutral: str          # after good, changes nothing that runs
    culprit: str          # adds the slowdown to call()
    bad: str              # after culprit, neutral again (the range's bad end)
    function: str         # the slowed function: "call"
    file: str             # "src/server.c"

    @property
    def commits(self) -> list[str]:
        return [self.neutral, self.culprit, self.bad]


def add_slowdown(server_c: str) -> str:
    """server.c with the loop as the first statement of ``void call(client *c, int flags) {``."""
    marker = "void call(client *c, int flags) {\n"
    if marker not in server_c:
        raise AssertionError("call() not found in src/server.c: pick another BASE_COMMIT")
    return server_c.replace(marker, marker + SLOWDOWN_LOOP, 1)


@pytest.fixture(scope="session")
def slowdown_repo(tmp_path_factory: pytest.TempPathFactory, valkey_url: str) -> SlowdownRepo:
    root = tmp_path_factory.mktemp("slowdown") / "valkey"
    git(root.parent, "init", "-q", str(root))
    git(root, "fetch", "-q", "--update-shallow", valkey_url, "+refs/heads/unstable:refs/remotes/origin/unstable")
    good = git(root, "rev-parse", f"{BASE_COMMIT}^{{commit}}")
    git(root, "checkout", "-q", "-b", "slowdown", good)
    neutral = commit_readme_note(root, "a neutral change", "neutral: a README comment")
    server_c = root / "src" / "server.c"
    server_c.write_text(add_slowdown(server_c.read_text()))
    git(root, "commit", "-q", "-am", "slow: extra work for every command in call()")
    culprit = git(root, "rev-parse", "HEAD")
    bad = commit_readme_note(root, "another neutral change", "neutral: another README comment")
    return SlowdownRepo(root, f"file://{root}", good, neutral, culprit, bad, SLOW_FUNCTION, "src/server.c")


@pytest.fixture(scope="session")
def counted_cost_repo(tmp_path_factory: pytest.TempPathFactory, valkey_url: str) -> SlowdownRepo:
    """Like ``slowdown_repo``, with a cost of a few tens of instructions per command (about 0.3%
    of a GET at -c 1 -P 1) in place of the slowdown: what only instruction counts can see."""
    root = tmp_path_factory.mktemp("counted") / "valkey"
    git(root.parent, "init", "-q", str(root))
    git(root, "fetch", "-q", "--update-shallow", valkey_url, "+refs/heads/unstable:refs/remotes/origin/unstable")
    good = git(root, "rev-parse", f"{BASE_COMMIT}^{{commit}}")
    git(root, "checkout", "-q", "-b", "counted", good)
    neutral = commit_readme_note(root, "a neutral change (counted)", "neutral: a README comment")
    culprit = commit_counted_cost(root)
    bad = commit_readme_note(root, "another neutral change (counted)", "neutral: another README comment")
    return SlowdownRepo(root, f"file://{root}", good, neutral, culprit, bad, COST_FUNCTION, "src/server.c")
