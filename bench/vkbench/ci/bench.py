"""The bench job's steps: ``vkbench ci fetch`` puts the server and tool of one cell into the
binary cache (was tools/ci/fetch-binaries.sh), ``vkbench ci cell`` runs the cell (was
tools/ci/run-cell.sh).

  VKBENCH_CELL              the cell JSON (the matrix entry's ``cell``)
  VKBENCH_BACKEND           compose (workflows) | native (local chain test); default compose
  VKBENCH_OUT               result directory; default vkbench-results
  VKBENCH_RUN_ID            shared by every cell of one workflow run
  VKBENCH_MACHINE_CLASS     the runner class (matrix entry ``runner``)
  VKBENCH_TRIGGER           what started the run (github.event_name)
  VKBENCH_WORKFLOW_RUN_URL  link stored in the result (optional)
  VKBENCH_PROFILE           source (default): a CPU profile of the servers for cells of builds from
                            source (unstable, a commit), the builds regressions are found in, so
                            that an incident has a profile on both sides to diff; always | never

vkbench tears its own stack down; the workflow's ``if: always()`` step runs teardown.sh for what
a cancelled job leaves behind.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping

import click

from ..errors import UsageError
from .actions import InvalidInput
from .invoke import vkbench

PROFILES = ("source", "always", "never")


def _required(env: Mapping[str, str], name: str) -> str:
    if not env.get(name):
        raise UsageError(f"{name} is empty", hint="the workflow step's env: names it")
    return env[name]


def cell_server_tool(cell_json: str) -> tuple[str, str, str]:
    """(engine, version, tool) of a cell JSON; the compact cell leaves the default tool out."""
    try:
        cell = json.loads(cell_json)
        engine, _, version = str(cell["server"]).partition(":")
        tool = str(cell.get("tool") or "valkey-benchmark")
    except (ValueError, KeyError, TypeError, AttributeError):
        raise UsageError("VKBENCH_CELL is not a cell (JSON with a server)", hint="pass the matrix entry's cell") from None
    return engine, version, tool


def fetch_argvs(env: Mapping[str, str], cache_dir: Path) -> tuple[list[list[str]], Path | None, str]:
    """The ``vkbench servers fetch`` commands of the cell, and the stamp file to write after them
    (None: nothing to stamp). A moving version (valkey:unstable, a branch) is rebuilt once per
    workflow run and machine (the stamp holds the run id), so every cell of one run on one machine
    measures the same build and tomorrow's run measures tomorrow's commit."""
    from ..servers.resolve import is_moving_version

    engine, version, tool = cell_server_tool(_required(env, "VKBENCH_CELL"))
    server = ["servers", "fetch", engine, version]
    stamp, run = None, env.get("GITHUB_RUN_ID") or "local"
    if is_moving_version(version):
        candidate = cache_dir / "ci-stamps" / f"{engine}-{version.replace('/', '_')}.run"
        try:
            current = candidate.read_text().strip()
        except OSError:
            current = None
        if current != run:
            server.append("--refresh")
            stamp = candidate
    tools = ["servers", "fetch", "--tool", tool]
    # valkey-cli creates clusters and replicas; fetch it whenever the tool is valkey's.
    if tool == "valkey-benchmark":
        tools += ["--tool", "valkey-cli"]
    return [server, tools], stamp, run


def wants_profile(env: Mapping[str, str], cell_json: str) -> bool:
    from ..servers.resolve import is_source_version

    mode = env.get("VKBENCH_PROFILE") or "source"
    if mode not in PROFILES:
        raise InvalidInput("VKBENCH_PROFILE", "VKBENCH_PROFILE must be source, always or never", title="run")
    if mode != "source":
        return mode == "always"
    engine, version, _ = cell_server_tool(cell_json)
    return is_source_version(engine, version)


def cell_argv(env: Mapping[str, str]) -> list[str]:
    values = {name: _required(env, name) for name in ("VKBENCH_CELL", "VKBENCH_RUN_ID", "VKBENCH_MACHINE_CLASS", "VKBENCH_TRIGGER")}
    argv = ["run", "--cell", values["VKBENCH_CELL"], "--backend", env.get("VKBENCH_BACKEND") or "compose",
            "--out", env.get("VKBENCH_OUT") or "vkbench-results", "--run-id", values["VKBENCH_RUN_ID"],
            "--machine-class", values["VKBENCH_MACHINE_CLASS"], "--trigger", values["VKBENCH_TRIGGER"]]
    if env.get("VKBENCH_WORKFLOW_RUN_URL"):
        argv += ["--workflow-run-url", env["VKBENCH_WORKFLOW_RUN_URL"]]
    # The profile is one extra repetition under perf, after the measured ones and never counted
    # with them; where perf is missing or not permitted the result says so and the cell carries on.
    if wants_profile(env, values["VKBENCH_CELL"]):
        argv.append("--profile")
    return argv


@click.command("fetch")
def fetch_cmd() -> None:
    """Put the server and benchmark tool of the cell $VKBENCH_CELL into the binary cache."""
    from ..files import write_bytes_atomic
    from ..servers.cache import cache_dir

    (server, tools), stamp, run = fetch_argvs(os.environ, cache_dir())
    vkbench(server)
    if stamp is not None:      # only once the build succeeded: a failed one is tried again
        stamp.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(stamp, (run + "\n").encode())
    vkbench(tools)


@click.command("cell")
@click.option("--print-argv", is_flag=True, help="Print the vkbench command (JSON) instead of running it.")
def cell_cmd(print_argv: bool) -> None:
    """Run the cell $VKBENCH_CELL (vkbench run) into $VKBENCH_OUT."""
    argv = cell_argv(os.environ)
    if print_argv:
        click.echo(json.dumps(argv))
        return
    vkbench(argv)
