"""Source builds of Valkey for the tests: the repository, a shared build cache and a repository
with a deliberate slowdown.

The repository is ``$VKBENCH_VALKEY_GIT_URL`` (.ci/run points it at a local snapshot of Valkey's
repository; by default upstream on GitHub). Builds go to the normal vkbench cache
(``$VKBENCH_CACHE``, where the setup put the client tools), keyed by commit and build
configuration, with ccache under it: every test of the session, and every later session, reuses
them. LTO is off (``VKBENCH_BUILD_LTO=no``): its link step is not cached by ccache and takes
minutes on 2 cores; both sides of every A/B are built the same way.

``slowdown_repo`` (reused by other tests, e.g. profile diffs): a local clone where the fixture
itself adds, on top of ``BASE_COMMIT``, a neutral commit, a commit that makes ``call()`` in
src/server.c do extra work for every command, and another neutral commit.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from vkbench.servers import source_build

#: A commit of Valkey's unstable (October 2024) that is in the snapshot .ci/run uses.
BASE_COMMIT = "c419524"
SLOW_FUNCTION = "call"
#: Extra work per command in call(): a few microseconds, several times a command's own cost.
SLOWDOWN_LOOP = (
    "    /* vkbench test: a deliberate slowdown, extra work for every command. */\n"
    "    for (volatile int vkbench_spin = 0; vkbench_spin < 8000; vkbench_spin++) {\n"
    "    }\n"
)
_GIT_ENV = {"GIT_AUTHOR_NAME": "vkbench test", "GIT_AUTHOR_EMAIL": "test@vkbench.invalid",
            "GIT_COMMITTER_NAME": "vkbench test", "GIT_COMMITTER_EMAIL": "test@vkbench.invalid"}


def git(cwd: Path, *args: str, date: str | None = None) -> str:
    env = {**os.environ, **_GIT_ENV}
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True,
                          timeout=600).stdout.strip()


@pytest.fixture(scope="session")
def valkey_url() -> str:
    return source_build.repo_url()


@pytest.fixture(scope="session", autouse=True)
def build_settings():
    """LTO off and a niced build for every source build of the session."""
    saved = {k: os.environ.get(k) for k in ("VKBENCH_BUILD_LTO", "VKBENCH_BUILD_NICE")}
    os.environ["VKBENCH_BUILD_LTO"] = "no"
    os.environ.setdefault("VKBENCH_BUILD_NICE", "10")
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
    when = "2024-10-30T12:00:00Z"
    with open(root / "README.md", "a") as handle:
        handle.write("\n<!-- vkbench test: a neutral change -->\n")
    git(root, "commit", "-q", "-am", "neutral: a README comment", date=when)
    neutral = git(root, "rev-parse", "HEAD")
    server_c = root / "src" / "server.c"
    server_c.write_text(add_slowdown(server_c.read_text()))
    git(root, "commit", "-q", "-am", "slow: extra work for every command in call()", date=when)
    culprit = git(root, "rev-parse", "HEAD")
    with open(root / "README.md", "a") as handle:
        handle.write("<!-- vkbench test: another neutral change -->\n")
    git(root, "commit", "-q", "-am", "neutral: another README comment", date=when)
    bad = git(root, "rev-parse", "HEAD")
    return SlowdownRepo(root, f"file://{root}", good, neutral, culprit, bad, SLOW_FUNCTION, "src/server.c")
