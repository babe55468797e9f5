"""Before a catalog cell is measured: its spec's preload (memtier, as the spec wrote it) and
its init commands, once per deployment; the key count is recorded against the spec's check."""

from __future__ import annotations

from pathlib import Path

from ..errors import BenchmarkFailedError, OutputLimitError, ToolTimeoutError
from ..topology.backend import Deployment
from . import preload as preloading
from .process import run_tools
from .tools import MEMTIER_FATAL, ToolCommand


def prepare_catalog_cell(cell, deployment: Deployment, tool, *, raw_dir: Path, timeout: float,
                         scrub, output_limit: int | None = None) -> dict:
    """Run the preload and the init commands; return what the result records about them."""
    entry = cell.catalog
    done: dict = {}
    password = deployment.spec.password
    if entry.preload:
        primary = deployment.primaries[0]
        argv = [str(tool.path), "-s", primary.host, "-p", str(primary.port), "-a", password, "--hide-histogram",
                *entry.preload]
        if deployment.spec.topology.is_cluster:
            argv.append("--cluster-mode")
        if deployment.spec.tls:
            argv += deployment.spec.tls.memtier_args()
        command = ToolCommand(argv, secret=password, fatal=MEMTIER_FATAL)
        command.env.update(getattr(tool, "env", {}) or {})
        limit = {"output_limit": output_limit} if output_limit else {}
        run = run_tools([command], cpus=cell.cpu.client if cell.cpu else None, timeout=timeout, **limit)[0]
        (raw_dir / "preload.txt").write_text(scrub(run.output))
        if run.timed_out:
            raise ToolTimeoutError(f"the spec's preload (memtier_benchmark) did not finish within {timeout:g} s (--timeout); "
                                   "the cell was stopped: its servers, pid files and temporary folders are removed",
                                   hint=f"raise --timeout; the output so far is in {raw_dir / 'preload.txt'}")
        if run.output_limit:
            raise OutputLimitError(f"the spec's preload (memtier_benchmark) printed more than {run.output_limit} bytes "
                                   "(--output-limit) and was stopped; the cell was stopped",
                                   hint=f"see {raw_dir / 'preload.txt'}; raise --output-limit if this is expected")
        if run.timed_out or run.aborted or run.exit_code != 0:
            why = "timed out" if run.timed_out else (scrub(run.aborted) if run.aborted else f"exited with {run.exit_code}")
            raise BenchmarkFailedError(f"the spec's preload (memtier_benchmark) {why}",
                                       hint=f"see {raw_dir / 'preload.txt'}")
        done["preload_s"] = round(run.elapsed_s, 3)
    if entry.init_commands:
        client = preloading.client_for(deployment, timeout=60)
        try:
            for argv in entry.init_commands:
                try:
                    client.execute_command(*argv)
                except Exception as exc:    # the server's error reply, named
                    raise BenchmarkFailedError(f"the spec's init command {argv[0]} failed: {scrub(str(exc))[:300]}",
                                               hint="the spec asks for something this server refuses") from None
        finally:
            client.close()
        done["init_commands"] = len(entry.init_commands)
    preloading.wait_replicas_synced(deployment)
    done["keys"] = preloading.total_keys(deployment)
    if entry.keyspacelen is not None:
        done["expected_keys"] = entry.keyspacelen
    return done
