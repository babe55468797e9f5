"""``vkbench ci counts``: the instruction-count A/B of a pull request on a GitHub-hosted runner
(pr-counts.yml; was tools/ci/pr-counts.sh run). Builds the base and the pull request's head from
source and counts instructions per operation and memory per key under callgrind (``vkbench ab
--instrument instructions``). No quiet machine, no secret, no self-hosted runner: fork code runs
only on the hosted runner GitHub gives this job.

  VKBENCH_AB_REPOSITORY  https URL of the Valkey repository (github.com)
  VKBENCH_AB_BASE        the base commit (full SHA)
  VKBENCH_AB_PR          the pull request number
  VKBENCH_AB_HEAD        its head commit (full SHA): refused if the pull request moved since
  VKBENCH_AB_DIR         where ab.md, ab.json, pr-number and pr-head go (default vkbench-ab)
  VKBENCH_AB_REQUESTS    requests per count window (empty: the ab preset's, capped at 20,000 a
                         window); 100 to 10,000,000

Counting pins the server's hash seed with a bind mount in its own mount namespace (unshare -m):
root. Not root, the step runs itself again under password-less ``sudo -n`` (the hosted runner's
user has it) with its environment, and hands the output back to the invoking user.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Mapping

import click

from .actions import InvalidInput
from .invoke import vkbench
from .trust import is_full_sha, is_repository_url

_PR = re.compile(r"[0-9]{1,9}", re.ASCII)
_REQUESTS = re.compile(r"[0-9]{3,8}", re.ASCII)
#: Fewer requests than this and a window is mostly the connection's own setup; more than this is
#: never needed (a window counts at most ab_counts.WINDOW_REQUESTS of them).
MIN_REQUESTS, MAX_REQUESTS = 100, 10_000_000
WALL_CLOCK_NOTE = ("Wall-clock numbers (rps, latency) need a quiet runner: a maintainer can add the label "
                   "`run-benchmark` for the wall-clock A/B on a self-hosted machine.")


def counts_argv(env: Mapping[str, str]) -> list[str]:
    """``vkbench ab`` of the pull request, every input checked first (never echoed back)."""
    repo = env.get("VKBENCH_AB_REPOSITORY", "")
    if not (repo.startswith("https://github.com/") and repo.count("/") == 4 and is_repository_url(repo)):
        raise InvalidInput("repository", "VKBENCH_AB_REPOSITORY must be https://github.com/OWNER/NAME", title="instruction A/B")
    for name in ("VKBENCH_AB_BASE", "VKBENCH_AB_HEAD"):
        if not is_full_sha(env.get(name, "")):
            raise InvalidInput(name, f"{name} must be a full commit SHA", title="instruction A/B")
    if not _PR.fullmatch(env.get("VKBENCH_AB_PR", "")):
        raise InvalidInput("pr", "VKBENCH_AB_PR must be a pull request number", title="instruction A/B")
    requests = env.get("VKBENCH_AB_REQUESTS", "")
    if requests and not (_REQUESTS.fullmatch(requests) and MIN_REQUESTS <= int(requests) <= MAX_REQUESTS):
        raise InvalidInput("requests", f"VKBENCH_AB_REQUESTS must be a number of requests from {MIN_REQUESTS} to "
                           f"{MAX_REQUESTS:,}, or empty (the preset's)", title="instruction A/B")
    return ["ab", "--repo", repo, "--base", env["VKBENCH_AB_BASE"], "--pr", env["VKBENCH_AB_PR"],
            "--pr-head", env["VKBENCH_AB_HEAD"], "--instrument", "instructions", "--machine-class", "github-hosted",
            *(["--requests", requests] if requests else []), "--out", env.get("VKBENCH_AB_DIR") or "vkbench-ab"]


def _hand_back(out: Path, env: Mapping[str, str]) -> None:
    """Under sudo: the output belongs to the user that ran the step (the upload step reads it)."""
    uid, gid = env.get("SUDO_UID", ""), env.get("SUDO_GID", "")
    if os.geteuid() != 0 or not (uid.isdigit() and gid.isdigit()) or not out.exists():
        return
    for root, dirs, files in os.walk(out):
        for name in [*dirs, *files]:
            os.lchown(os.path.join(root, name), int(uid), int(gid))
    os.lchown(out, int(uid), int(gid))


@click.command("counts")
@click.option("--print-argv", is_flag=True, help="Print the vkbench command (JSON) instead of running it.")
def counts_cmd(print_argv: bool) -> None:
    """The instruction-count A/B of a pull request (pr-counts.yml), as root."""
    import json

    env = os.environ
    argv = counts_argv(env)
    if print_argv:
        click.echo(json.dumps(argv))
        return
    if os.geteuid() != 0:
        sys.stdout.flush()
        os.execvp("sudo", ["sudo", "-n", "--preserve-env", sys.executable, "-m", "vkbench", "ci", "counts"])
    out = Path(argv[argv.index("--out") + 1])
    try:
        vkbench(argv)
        with open(out / "ab.md", "a", encoding="utf-8") as fh:
            fh.write(f"\n{WALL_CLOCK_NOTE}\n")
        (out / "pr-number").write_text(env["VKBENCH_AB_PR"] + "\n")
        (out / "pr-head").write_text(env["VKBENCH_AB_HEAD"] + "\n")
    finally:
        _hand_back(out, env)
