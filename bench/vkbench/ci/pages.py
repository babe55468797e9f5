"""Where a workflow step finds the history and the checkout it runs from (was tools/ci/lib.sh's
ci_git_auth, ci_pages_remote, ci_history_branch, ci_clone_pages).

  VKBENCH_PAGES_REPO     git URL or path of the pages repository (the local chain test uses a
                         bare repository); default this repository on GitHub
  VKBENCH_PAGES_BRANCH   default gh-pages
  VKBENCH_DATA_BRANCH    the history's own branch when it was split off the pages branch
  VKBENCH_CHECKOUT       the vkbench checkout the step runs from (tools/ci/lib.sh sets it; default
                         the working directory): its results/annotations.yaml, runners/classes.yaml
  GITHUB_TOKEN           handed to git for this process only (never to .git/config)
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from pathlib import Path
from typing import MutableMapping

from ..errors import UsageError, VkbenchError
from .actions import in_actions


def checkout_root(env=None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("VKBENCH_CHECKOUT") or ".").resolve()


def annotations_file(env=None) -> Path | None:
    """The known changes detection honours (results/annotations.yaml), when the checkout has them."""
    path = checkout_root(env) / "results" / "annotations.yaml"
    return path if path.is_file() else None


def runner_classes_file(env=None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("VKBENCH_RUNNER_CLASSES_FILE") or checkout_root(env) / "runners" / "classes.yaml")


def git_auth(env: MutableMapping[str, str] | None = None) -> None:
    """Let git (and so every vkbench command of this process) reach the GitHub remote with
    $GITHUB_TOKEN. The token goes into an http.extraheader through GIT_CONFIG_* variables of this
    process, never into .git/config (where actions/checkout would persist it and a later step or
    artifact could read it). The base64 form is masked first: GitHub masks the secret itself, not
    encodings of it. No token: nothing to do (a local bare repository needs none)."""
    env = os.environ if env is None else env
    token = env.get("GITHUB_TOKEN")
    if not token:
        return
    server = env.get("GITHUB_SERVER_URL") or "https://github.com"
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    if in_actions(env):
        print(f"::add-mask::{basic}", flush=True)
    env.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0=f"http.{server}/.extraheader",
               GIT_CONFIG_VALUE_0=f"AUTHORIZATION: basic {basic}", GIT_TERMINAL_PROMPT="0")


def pages_remote(env=None) -> str:
    env = os.environ if env is None else env
    if env.get("VKBENCH_PAGES_REPO"):
        return env["VKBENCH_PAGES_REPO"]
    if env.get("GITHUB_REPOSITORY"):
        return f"{env.get('GITHUB_SERVER_URL') or 'https://github.com'}/{env['GITHUB_REPOSITORY']}.git"
    raise UsageError("set VKBENCH_PAGES_REPO (git URL or path) or GITHUB_REPOSITORY",
                     hint="the step needs to know where the history's branch is")


def pages_branch(env=None) -> str:
    env = os.environ if env is None else env
    return env.get("VKBENCH_PAGES_BRANCH") or "gh-pages"


def history_branch(env=None) -> str:
    """The branch history/ lives on: the data branch when the history was split off (`vkbench
    history split`), else the pages branch itself."""
    env = os.environ if env is None else env
    return env.get("VKBENCH_DATA_BRANCH") or pages_branch(env)


def clone_history(dest: Path, env=None) -> Path:
    """A shallow read-only copy of the history's branch in ``dest``; returns its history/.

    Partial, as publish's checkout (history/partial.py): no file contents but those of the
    history's own files and this month's and the last one's shards; a reader of anything else
    (``vkbench alert``'s checks, a digest, a dispatch) gets it fetched when it reads it."""
    from ..history.partial import configure, night_months, sparse_patterns
    from ..paths import check_branch_name, check_repo_arg

    remote, branch = check_repo_arg(pages_remote(env)), history_branch(env)
    check_branch_name(branch)
    shutil.rmtree(dest, ignore_errors=True)

    def git(*args: str, cwd: Path | None = dest, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
        if check and proc.returncode != 0:
            raise VkbenchError(f"cannot clone the history's branch {branch}: {proc.stderr.strip()[-500:]}",
                               hint="check VKBENCH_PAGES_REPO / VKBENCH_DATA_BRANCH and the step's token (contents: read)")
        return proc

    git("clone", "--quiet", "--depth", "1", "--filter=blob:none", "--no-checkout", "--single-branch", "--branch", branch,
        "--", remote, str(dest), cwd=None)
    configure(git)
    (dest / ".git" / "info").mkdir(exist_ok=True)
    patterns = sparse_patterns("history", night_months([], ())[0])
    (dest / ".git" / "info" / "sparse-checkout").write_text("\n".join(patterns) + "\n", encoding="utf-8")
    git("checkout", "-q", branch)
    return dest / "history"
