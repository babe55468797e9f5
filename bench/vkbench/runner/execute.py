"""Run cells: deploy, preload, warm up, repeat, measure, judge, write one result per cell.

The library reports progress through a callback and never prints; the CLI draws it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from .. import RESULT_SCHEMA_VERSION, __version__
from ..errors import BenchmarkFailedError, OutputLimitError, ParseError, ToolTimeoutError, VkbenchError
from ..matrix.model import Cell
from ..topology.backend import Backend, Deployment, DeploymentSpec
from ..topology.model import ServerSettings, Topology
from ..topology.tls import make_tls_files, require_tls
from . import preload as preloading
from . import server_stats
from ..results.aggregate import split_aggregate
from .aggregate import merge_target_records, summarize_repetitions
from .cpu import CpuSnapshot, server_cores_used
from .process import DEFAULT_OUTPUT_LIMIT, ToolRun, run_tools
from .tools import build_command, targets
from .workdirs import make_workdir
from .validity import _cpuset_size, check, client_thread_count, emulated_validity

ProgressFn = Callable[[str, Cell, int], None]   # (event, cell, repetition index)


@dataclass
class RunContext:
    backend: Backend
    out_dir: Path
    run_id: str
    trigger: str = "manual"
    machine_class: str | None = None        # overrides cell.runner in the result
    workflow_run_url: str | None = None
    environment: dict = field(default_factory=dict)
    tool_paths: dict[str, object] = field(default_factory=dict)   # tool name -> servers.Binary
    repetition_timeout: float = 600.0       # --timeout: bounds every phase (catalog preload, preload, warm-up, each repetition)
    output_limit: int = DEFAULT_OUTPUT_LIMIT  # --output-limit: bytes one tool process may print
    work_dir: Path | None = None
    profile: bool = False                   # one extra, unmeasured repetition under perf (--profile)
    counter: object | None = None           # instruments.perf_stat.CounterChoice: what counts instructions


@dataclass
class CellState:
    """What accumulates for one cell across repetitions (and across rounds when interleaving)."""

    cell: Cell
    started: str = ""
    repetitions: list[dict] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    deployment_info: dict = field(default_factory=dict)
    keys_before_reads: int | None = None
    command_line: str | None = None
    password_via: str | None = None
    duration_s: float = 0.0
    profile: dict | None = None
    memory: dict | None = None              # after the preload: keys, used_memory before/after, bytes_per_key
    instructions: dict | None = None        # instrument instructions|both: instruments.valgrind.summarize
    board_before: dict | None = None        # envinfo.board_state() when the cell's first work began
    board_after: dict | None = None         # ... and when its last work ended
    catalog_prepared: dict | None = None    # a catalog cell's preload and init commands (once)


def new_password() -> str:
    """A fresh password per deployment. Under GitHub Actions it is registered as a secret
    (``::add-mask::``) first, so even a tool that echoes it could not put it in the job log.
    The runner reads workflow commands from stderr as well; stdout stays clean for --json."""
    password = secrets.token_urlsafe(24)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        sys.stderr.write(f"::add-mask::{password}\n")
        sys.stderr.flush()
    return password


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def run_repetitions(state: CellState, ctx: RunContext, count: int, progress: ProgressFn | None = None) -> None:
    """Deploy the cell's topology once and run ``count`` repetitions against it."""
    cell = state.cell
    if not state.started:
        state.started = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    tool = ctx.tool_paths[cell.tool]
    password = new_password()
    raw_dir = ctx.out_dir / f"{cell.cell_id}.raw"
    t_cell = time.monotonic()
    # The servers' config files (requirepass) go in here: removed by the finally, whatever fails
    # after it exists.
    work_root = make_workdir("vkbench-", ctx.work_dir)     # owner.json first: see runner/workdirs.py
    try:
        # A TLS cell's throw-away CA and certificates live (and die) with the servers' configs.
        tls = None
        if cell.workload and cell.workload.tls:
            require_tls(Path(tool.path), cell.tool)
            tls = make_tls_files(work_root.resolve() / "tls")
        spec = DeploymentSpec(
            topology=Topology.parse(cell.topology), engine=cell.engine, version=cell.version,
            settings=ServerSettings(io_threads=cell.io_threads, extra_args=tuple(cell.extra_server_args)),
            password=password, run_dir=work_root.resolve(), server_cpus=cell.cpu.server if cell.cpu else None,
            tls=tls,
        )
        raw_dir.mkdir(parents=True, exist_ok=True)
        if progress:
            progress("deploy", cell, len(state.repetitions))
        with ctx.backend.deploy(spec) as deployment:
            state.deployment_info = _deployment_info(deployment)
            _prepare(state, deployment, tool, ctx, raw_dir)
            for _ in range(count):
                index = len(state.repetitions) + len(state.failures)
                if progress:
                    progress("repetition", cell, index)
                _one_repetition(state, deployment, tool, ctx, raw_dir, index, password)
                if progress:
                    progress("repetition-done", cell, index)
            if ctx.profile and state.profile is None and len(state.repetitions) + len(state.failures) >= cell.repetitions:
                from .profiling import profile_repetition

                state.profile = profile_repetition(cell, deployment, tool, raw_dir=raw_dir, password=password,
                                                   timeout=ctx.repetition_timeout, scrub=lambda t: _scrub(t, password),
                                                   output_limit=ctx.output_limit)
    finally:
        state.duration_s += time.monotonic() - t_cell
        try:
            if raw_dir.is_dir():
                _keep_server_logs(work_root, raw_dir)
        finally:
            shutil.rmtree(work_root, ignore_errors=True)


def _tls_of(deployment: Deployment | None):
    """The deployment's TLS certificates (None: a plain deployment, or none at all)."""
    return getattr(getattr(deployment, "spec", None), "tls", None)


def _keep_server_logs(work_root: Path, raw_dir: Path) -> None:
    """Server logs go next to the raw tool output: they explain a slow or failed cell."""
    for log in sorted(work_root.glob("*/server.log")):
        dest = raw_dir / "servers" / f"{log.parent.name}.log"
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.exists():   # a later round of an interleaved run: keep every round
            with dest.open("a") as out:
                out.write(log.read_text(errors="replace"))
        else:
            shutil.copyfile(log, dest)


def _prepare(state: CellState, deployment: Deployment, tool, ctx: RunContext, raw_dir: Path) -> None:
    cell = state.cell
    if cell.workload and cell.workload.acl_user:
        preloading.create_acl_user(deployment, cell.workload.acl_user)
    if cell.catalog is not None:       # every deployment (an interleaved run deploys once per round)
        from .catalog_prepare import prepare_catalog_cell

        prepared = prepare_catalog_cell(cell, deployment, tool, raw_dir=raw_dir,
                                        timeout=ctx.repetition_timeout, output_limit=ctx.output_limit,
                                        scrub=lambda t: _scrub(t, deployment.spec.password))
        state.catalog_prepared = state.catalog_prepared or prepared
    reads = preloading.cell_reads(cell)
    if cell.catalog is not None:
        reads = False      # the spec's own preload wrote the keyspace; its key count is recorded above
    if cell.preload and cell.keyspace and reads:
        before = preloading.used_memory(deployment)
        written = preloading.preload_keyspace(deployment, cell.keyspace, cell.data_size, names=preloading.key_names(cell),
                                              deadline=time.monotonic() + ctx.repetition_timeout,
                                              timeout_s=ctx.repetition_timeout)
        preloading.wait_replicas_synced(deployment)
        if state.memory is None:    # an interleaved run preloads once per round: the first one counts
            from ..instruments.valgrind import memory_block

            state.memory = memory_block(written, before, preloading.used_memory(deployment), cell.data_size)
    if reads:
        state.keys_before_reads = preloading.total_keys(deployment)
    if cell.warmup:
        commands = [build_command(cell, t, deployment.spec.password, str(tool.path), requests=cell.warmup,
                                  tool_env=getattr(tool, "env", None), tls=deployment.spec.tls)
                    for t in targets(cell, deployment)]
        for c in commands:
            c.env.update(getattr(tool, "env", {}) or {})
        runs = run_tools(commands, cpus=cell.cpu.client if cell.cpu else None, timeout=ctx.repetition_timeout,
                         output_limit=ctx.output_limit)
        (raw_dir / "warmup.txt").write_text(_scrub("".join(r.output for r in runs), deployment.spec.password))
        check_phase(runs, "warm-up", cell.tool, ctx, raw_dir / "warmup.txt")


def check_phase(runs: list[ToolRun], phase: str, tool: str, ctx: RunContext, raw_file: Path) -> None:
    """A phase that overran --timeout or printed past --output-limit stops the cell (the caller's
    context managers then stop the servers and remove the pid files and temp folders)."""
    for run in runs:
        if run.timed_out:
            raise ToolTimeoutError(
                f"{tool} did not finish its {phase} within {ctx.repetition_timeout:g} s (--timeout); the cell was "
                "stopped: its servers, pid files and temporary folders are removed",
                hint=f"raise --timeout or lower requests/warmup; the output so far is in {raw_file}")
        if run.output_limit:
            raise OutputLimitError(
                f"{tool} printed more than {run.output_limit} bytes ({run.output_limit / 1048576:g} MiB, --output-limit) "
                f"in its {phase} and was stopped; the cell was stopped: its servers, pid files and temporary folders are removed",
                hint=f"the first {run.output_limit / 1048576:g} MiB are in {raw_file}; a benchmark tool prints a few KiB "
                     "(check VKBENCH_TOOL_* and the tool's arguments), or raise --output-limit")


def _one_repetition(state: CellState, deployment: Deployment, tool, ctx: RunContext, raw_dir: Path,
                    index: int, password: str) -> None:
    from ..parsers.dispatch import parse_tool_run

    cell = state.cell
    # memtier's JSON (its command line with the password) goes in here: removed whatever fails.
    json_dir = make_workdir("vkbench-json-", ctx.work_dir)
    try:
        commands = []
        for n, target in enumerate(targets(cell, deployment)):
            json_out = str(json_dir / f"memtier-{n}.json") if cell.tool == "memtier_benchmark" else None
            cmd = build_command(cell, target, password, str(tool.path), json_out=json_out,
                                tool_env=getattr(tool, "env", None), tls=_tls_of(deployment))
            cmd.env.update(getattr(tool, "env", {}) or {})
            commands.append(cmd)
        state.command_line = commands[0].display()
        state.password_via = commands[0].password_via
        server_window = server_stats.begin(deployment)
        before = CpuSnapshot.take(deployment.server_pids)
        started = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        runs = run_tools(commands, cpus=cell.cpu.client if cell.cpu else None, timeout=ctx.repetition_timeout,
                         output_limit=ctx.output_limit)
        wall = max(r.elapsed_s for r in runs)
        after = CpuSnapshot.take(deployment.server_pids)
        server = server_stats.end(server_window, wall)   # the window spans the tool processes
        raw_name = f"rep-{index + 1}.txt"
        raw_text = _scrub("\n".join(r.output for r in runs), password)
        (raw_dir / raw_name).write_text(raw_text)
        check_phase(runs, f"repetition {index + 1}", cell.tool, ctx, raw_dir / raw_name)
        durations: list[float | None] = []
        try:
            per_target = []
            for n, (cmd, run) in enumerate(zip(commands, runs)):
                source = f"{raw_dir.name}/{raw_name}"
                json_text = _keep_json(cmd, raw_dir, f"rep-{index + 1}.memtier-{n}.json", password)
                output = _scrub(run.output, password)
                records = parse_tool_run(output, tool=cell.tool, json_text=json_text, source=source)
                if run.aborted:
                    raise BenchmarkFailedError(f"{cell.tool} was stopped on: {_scrub(run.aborted, password)}",
                                               hint=f"see {raw_dir / raw_name}")
                if run.exit_code != 0:
                    raise BenchmarkFailedError(f"{cell.tool} exited with {run.exit_code}", hint=f"see {raw_dir / raw_name}")
                durations.append(tool_duration(cell, records, json_text, source))
                per_target.append(records)
            records, warnings = merge_target_records(per_target)
        except (ParseError, BenchmarkFailedError) as exc:
            state.failures.append(f"repetition {index + 1}: {exc.message}")
            return
    finally:
        shutil.rmtree(json_dir, ignore_errors=True)
    # The tool's own measured time, not the process's: memtier lingers up to a second after its
    # run, which made a 0.68 s repetition look like 2 s (too-short never fired, client CPU looked
    # 3x lower). Wall time stays in the record for reference.
    measured = [d for d in durations if d]
    elapsed = max(measured) if len(measured) == len(durations) else wall
    if len(measured) != len(durations):
        warnings = sorted(set(warnings) | {"the tool did not report its own duration: elapsed_s is the process's wall time"})
    plan_note = _request_note(cell)
    if plan_note:
        warnings = sorted(set(warnings) | {plan_note})
    client_cores = sum(r.cpu_seconds for r in runs) / elapsed if elapsed else None
    state.repetitions.append({
        "index": index,
        "started": started,
        "elapsed_s": round(elapsed, 4),
        "wall_s": round(wall, 4),
        "records": [r.to_dict() for r in records],
        "cpu": {
            "client_cores": round(client_cores, 3) if client_cores is not None else None,
            "client_pct": round(100 * client_cores, 1) if client_cores is not None else None,
            "server_cores": _round(server_cores_used(before, after, elapsed)),
            "server_pct": _round(100 * s) if (s := server_cores_used(before, after, elapsed)) is not None else None,
            "client_threads": cell.client_threads,
        },
        "raw_output": f"{raw_dir.name}/{raw_name}",
        "exit_code": max(r.exit_code for r in runs),
        "warnings": warnings,
        "server": server,
    })


def tool_duration(cell: Cell, records, json_text: str | None, source: str) -> float | None:
    """How long the tool itself says it measured: memtier's ``Runtime.Total duration``; for
    valkey-/redis-benchmark the sum over tests of requests / rps (each test's rps is its
    requests divided by its own timer, so this inverts exactly what the tool computed)."""
    if cell.tool == "memtier_benchmark":
        if json_text is None:
            return None
        from ..parsers.memtier_json import memtier_duration_s

        try:
            return memtier_duration_s(json_text, source=source)
        except ParseError:
            return None
    if not cell.requests:
        return None
    return sum(cell.requests / r.rps for r in records if r.rps > 0) or None


def _keep_json(cmd, raw_dir: Path, name: str, password: str) -> str | None:
    """memtier's --json-out-file, password scrubbed, kept beside the raw output (history and
    `vkbench parse` can re-read it); returns its text, or None when memtier wrote none."""
    if not cmd.json_out or not Path(cmd.json_out).is_file():
        return None
    text = _scrub(Path(cmd.json_out).read_text(errors="replace"), password)
    (raw_dir / name).write_text(text)
    return text


def _request_note(cell: Cell) -> str | None:
    if cell.tool != "memtier_benchmark" or cell.duration or not cell.requests:
        return None
    from .tools import memtier_request_plan

    return memtier_request_plan(cell, cell.requests)[2]


def run_instructions(state: CellState, ctx: RunContext, progress: ProgressFn | None = None) -> None:
    """Instructions per operation of the cell's commands: ``cell.repetitions`` fresh servers
    (seeds 1..N, the same every night), 4 windows each, counted under callgrind or, where the CPU
    has hardware counters, by perf stat (ctx.counter; docs/instructions.md)."""
    from ..instruments.method import InstructionsMethod, perf_method
    from ..instruments.perf_stat import select_counter
    from ..instruments.valgrind import check_prerequisites, measure, summarize
    from ..servers import resolve_server

    cell = state.cell
    counter = ctx.counter or select_counter("auto")
    perf = counter.tool == "perf"
    check_prerequisites("perf" if perf else "callgrind")
    if not state.started:
        state.started = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    server = resolve_server(cell.engine, cell.version)
    tool = ctx.tool_paths[cell.tool]
    parameters = {"windows": INSTRUCTION_WINDOWS, "window_requests": min(cell.requests, INSTRUCTION_WINDOW_REQUESTS),
                  "servers": cell.repetitions}
    method = perf_method(**parameters) if perf else InstructionsMethod(**parameters)
    raw_dir = ctx.out_dir / f"{cell.cell_id}.raw"
    raw_dir.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    measurements = []
    work_root = make_workdir(f"vkbench-{method.tool}-", ctx.work_dir)
    try:
        for i in range(method.servers):
            if progress:
                progress("instructions", cell, i)
            measurements.append(measure(
                server_path=server.path, tool_path=tool.path, tool_env=dict(getattr(tool, "env", {}) or {}),
                commands=list(cell.tests), clients=cell.clients, pipeline=cell.pipeline, data_size=cell.data_size,
                keyspace=cell.keyspace or 1, seed=method.seed_base + i, method=method, work_dir=work_root / f"server-{i + 1}",
                password=new_password(), server_env=dict(server.env),
                keep_dumps=None if perf else raw_dir / "callgrind", timeout=ctx.repetition_timeout))
            if cell.instrument == "instructions" and progress:
                progress("repetition-done", cell, i)
    finally:
        state.duration_s += time.monotonic() - began
        shutil.rmtree(work_root, ignore_errors=True)
    state.instructions = summarize(measurements, method)
    state.instructions["counter"] = counter.to_dict()
    state.instructions["duration_s"] = round(time.monotonic() - began, 3)
    if state.memory is None and measurements and measurements[0].memory:
        state.memory = measurements[0].memory
    if not state.deployment_info:
        state.deployment_info = {"server_version": None, "server_commit": None,
                                 "build": {"source": server.source, "id": server.build_id, "detail": server.detail}}


#: Windows per command per server, and the largest window: 4 x 20,000 requests took 10-20 s per
#: server here (valkey under callgrind serves 6,000-40,000 requests per second).
INSTRUCTION_WINDOWS = 4
INSTRUCTION_WINDOW_REQUESTS = 20000


def build_result(state: CellState, ctx: RunContext) -> dict:
    cell = state.cell
    if cell.instrument == "instructions":
        if state.instructions is None:
            raise BenchmarkFailedError(f"cell {cell.cell_id}: no instruction counts were measured",
                                       hint=f"see {ctx.out_dir / (cell.cell_id + '.raw')}")
        validity = {"valid": True, "flags": []}
    elif not state.repetitions:
        raise BenchmarkFailedError(
            f"cell {cell.cell_id}: every repetition failed: " + "; ".join(state.failures),
            hint=f"read the raw output in {ctx.out_dir / (cell.cell_id + '.raw')}",
        )
    else:
        validity = check(
            cell, repetitions=state.repetitions, keys_before_reads=state.keys_before_reads,
            shards=Topology.parse(cell.topology).shards, server_cpus=_server_cpus(cell, ctx),
            throttled=_throttled_during(state, ctx), failed_repetitions=len(state.failures),
            emulation=ctx.environment.get("emulation"),
        )
    if cell.instrument == "instructions" and ctx.environment.get("emulation"):
        validity = emulated_validity(validity, ctx.environment["emulation"])
    info = state.deployment_info
    tool = ctx.tool_paths[cell.tool]
    build = dict(info.get("build") or {}) or None
    code = build.pop("code", None) if build else None     # the source a build came from: its own field
    return split_aggregate({
        "schema_version": RESULT_SCHEMA_VERSION,
        "kind": "vkbench.result",
        "run": {
            "run_id": ctx.run_id,
            "cell_id": cell.cell_id,
            "timestamp": state.started,
            "trigger": ctx.trigger,
            "vkbench_version": __version__,
            "vkbench_commit": vkbench_commit(),
            "workflow_run_url": ctx.workflow_run_url,
            "machine_class": ctx.machine_class or cell.runner,
            "backend": ctx.backend.name,
            "command_line": state.command_line,
            "duration_s": round(state.duration_s, 3),
        },
        "subject": {
            "engine": cell.engine,
            "version": cell.version,
            "server_version": info.get("server_version"),
            "commit": (code or {}).get("commit") or info.get("server_commit"),
            "build": build,
            **({"code": code} if code else {}),
        },
        "tool": {
            "name": cell.tool,
            "password_via": state.password_via,
            "version": getattr(tool, "version", None),
            "build": {"source": getattr(tool, "source", "path"), "id": getattr(tool, "build_id", None),
                      "detail": str(getattr(tool, "path", ""))},
        },
        "dimensions": cell.dimensions(),
        **({"catalog": {**cell.catalog.model_dump(mode="json", exclude={"preload", "init_commands"}),
                        "preload_args": cell.catalog.preload, "init_command_count": len(cell.catalog.init_commands),
                        "prepared": state.catalog_prepared}} if cell.catalog is not None else {}),
        "repetitions": state.repetitions,
        "summary": summarize_repetitions(state.repetitions),   # memtier's TOTALS: split_aggregate below
        "environment": cell_environment(state, ctx),
        **({"server_environment": info["server_environment"]} if info.get("server_environment") else {}),
        "validity": validity,
        **({"profile": state.profile} if state.profile is not None else {}),
        **({"memory": state.memory} if state.memory is not None else {}),
        **({"instructions": state.instructions} if state.instructions is not None else {}),
    })


def cell_environment(state: CellState, ctx: RunContext) -> dict:
    """The run's fingerprint plus this cell's own board readings (before and after its work)."""
    env = dict(ctx.environment)
    board = dict(env.get("board") or {"model": env.get("board_model")})
    if state.board_before is not None:
        board["before"] = state.board_before
    if state.board_after is not None:
        board["after"] = state.board_after
    env["board"] = board
    return env


def _throttled_during(state: CellState, ctx: RunContext) -> str | None:
    """The first non-zero throttling value among the run's and the cell's readings, else the run's."""
    readings = [ctx.environment.get("throttled")] + [(b or {}).get("throttled") for b in (state.board_before, state.board_after)]
    return next((v for v in readings if v and v not in ("0x0", "0")), ctx.environment.get("throttled"))


def _server_cpus(cell: Cell, ctx: RunContext) -> int | None:
    """CPUs the servers can really use: their CPU set, or on a shared machine (native backend,
    no placement) the cores left after the client's threads."""
    if cell.cpu:
        return _cpuset_size(cell.cpu.server)
    cores = ctx.environment.get("cores")
    if not cores:
        return None
    if ctx.backend.name == "native" or getattr(ctx.backend, "server_host", None) in (None, "127.0.0.1", "localhost"):
        shards = Topology.parse(cell.topology).shards
        return max(1, cores - client_thread_count(cell, shards))
    return cores


def _deployment_info(deployment: Deployment) -> dict:
    return {
        "server_version": deployment.server_version,
        "server_commit": deployment.server_commit,
        "build": deployment.build,
        "startup_s": deployment.startup_s,
        "server_environment": deployment.server_environment,
    }


def _scrub(text: str, password: str) -> str:
    return text.replace(password, "***") if password else text


def _round(value: float | None) -> float | None:
    return round(value, 3) if value is not None else None


def vkbench_commit() -> str | None:
    """The commit of this checkout of vkbench, when it is one (or GITHUB_SHA in a workflow)."""
    if os.environ.get("GITHUB_SHA"):
        return os.environ["GITHUB_SHA"]
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


__all__ = ["RunContext", "CellState", "run_repetitions", "build_result", "new_run_id", "VkbenchError"]
