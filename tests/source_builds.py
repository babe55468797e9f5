"""What every source build of the test suite shares, so that a build made by one test is reused by
the others (tests/sourcebuild, and the nightly and A/B workflows under act): vkbench caches builds
by commit and build configuration (``$VKBENCH_CACHE``), with ccache under them.

Builds come from ``$VKBENCH_VALKEY_GIT_URL`` (.ci/run points it at a local snapshot of Valkey's
repository; by default upstream on GitHub).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

#: A commit of Valkey's unstable (October 2024) that is in the snapshot .ci/run uses.
BASE_COMMIT = "c419524"

#: The build configuration of the tests' builds: Valkey's defaults with LTO off (LTO's link step
#: is not cached by ccache and takes minutes on 2 cores), niced. Every side of every A/B is built
#: the same way, and the jobs of the workflows under act get the same variables.
BUILD_ENV = {"VKBENCH_BUILD_LTO": "no", "VKBENCH_BUILD_NICE": "10"}

#: Fixed identity and date of the commits tests add: the same change on the same parent is the same
#: commit in every test and every session, so its build (cached per commit) is shared.
_GIT_ENV = {"GIT_AUTHOR_NAME": "vkbench test", "GIT_AUTHOR_EMAIL": "test@vkbench.invalid",
            "GIT_COMMITTER_NAME": "vkbench test", "GIT_COMMITTER_EMAIL": "test@vkbench.invalid",
            "GIT_AUTHOR_DATE": "2024-10-30T12:00:00Z", "GIT_COMMITTER_DATE": "2024-10-30T12:00:00Z"}


def git(cwd: Path, *args: str) -> str:
    """git in ``cwd`` with the tests' fixed identity and commit date."""
    return subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **_GIT_ENV}, check=True, capture_output=True,
                          text=True, timeout=600).stdout.strip()


def commit_readme_note(work_tree: Path, note: str, message: str) -> str:
    """Commit ``<!-- vkbench test: NOTE -->`` appended to README.md (a change that builds the same
    server): the new commit's full SHA."""
    with open(work_tree / "README.md", "a") as handle:
        handle.write(f"\n<!-- vkbench test: {note} -->\n")
    git(work_tree, "commit", "-q", "-am", message)
    return git(work_tree, "rev-parse", "HEAD")


#: The counted cost: a function of its own (kept out of line, so callgrind names it and its self
#: cost per operation is the injected cost, exactly), called once per command from call(): a
#: volatile loop of COST_ITERATIONS turns, 33 instructions per command in this build (+0.5 % of a
#: GET, +0.3 % of a SET at -c 1 -P 1).
COST_FUNCTION = "vkbenchTestCost"
COST_ITERATIONS = 4
COST_CODE = (
    "/* vkbench test: a small fixed cost for every command (an instruction-count A/B must see it). */\n"
    "__attribute__((noinline)) void vkbenchTestCost(void) {\n"
    f"    for (volatile int vkbench_turn = 0; vkbench_turn < {COST_ITERATIONS}; vkbench_turn++) {{\n"
    "    }\n"
    "}\n\n"
)


def add_counted_cost(server_c: str) -> str:
    """server.c with ``vkbenchTestCost()`` defined before call() and called as its first statement."""
    marker = "void call(client *c, int flags) {\n"
    if marker not in server_c:
        raise AssertionError("call() not found in src/server.c: pick another BASE_COMMIT")
    return server_c.replace(marker, COST_CODE + marker + "    vkbenchTestCost();\n", 1)


def commit_counted_cost(work_tree: Path) -> str:
    """Commit :func:`add_counted_cost` in ``work_tree`` (a Valkey clone): the new commit's full SHA.
    The same parent gives the same commit (fixed identity and date), so its build is shared."""
    server_c = work_tree / "src" / "server.c"
    server_c.write_text(add_counted_cost(server_c.read_text()))
    git(work_tree, "commit", "-q", "-am", "cost: a few instructions more for every command in call()")
    return git(work_tree, "rev-parse", "HEAD")
