"""``vkbench run --profile``: one extra repetition under ``perf record -g``, after the measured
ones and never counted with them (a profiler slows the server a little, and its numbers must
not move the medians). The folded stacks go beside the raw output (``<cell>.raw/profile.folded``),
which ingest copies into the history with the result."""

from __future__ import annotations

from pathlib import Path

from ..errors import BenchmarkFailedError
from ..matrix.model import Cell
from ..profile import record as perf
from ..results.checks import PROFILE_FILE
from ..topology.backend import Deployment
from .process import run_tools
from .tools import build_command, targets


def profile_repetition(cell: Cell, deployment: Deployment, tool, *, raw_dir: Path, password: str,
                       timeout: float, scrub, output_limit: int | None = None) -> dict:
    """Run the cell's tool once more while perf records the servers; the result's ``profile`` block."""
    from ..parsers import parse_output

    commands = []
    for target in targets(cell, deployment):
        # No memtier JSON file here: its text output on stdout carries the rps as well.
        cmd = build_command(cell, target, password, str(tool.path), tls=deployment.spec.tls)
        cmd.env.update(getattr(tool, "env", {}) or {})
        commands.append(cmd)

    def body():
        limit = {"output_limit": output_limit} if output_limit else {}
        return run_tools(commands, cpus=cell.cpu.client if cell.cpu else None, timeout=timeout, **limit)

    out_file = raw_dir / PROFILE_FILE
    block, runs = perf.record(deployment.server_pids, body, out_file=out_file)
    if block.get("status") == "recorded":
        block["file"] = f"{raw_dir.name}/{PROFILE_FILE}"
    if runs:
        elapsed = max(r.elapsed_s for r in runs)
        rps: dict[str, float] = {}
        if all(r.exit_code == 0 and not r.timed_out for r in runs):
            try:
                for run in runs:
                    for rec in parse_output(scrub(run.output), tool=cell.tool, source="profile repetition"):
                        rps[rec.command] = rps.get(rec.command, 0.0) + rec.rps
            except BenchmarkFailedError:   # ParseError included: the profile's own numbers are a side note
                rps = {}
        block["repetition"] = {"elapsed_s": round(elapsed, 4), "rps": rps}
    return block


__all__ = ["profile_repetition", "PROFILE_FILE"]
