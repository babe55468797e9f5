"""``vkbench run``: run cells on real servers and write one result file per cell."""

from __future__ import annotations

import json
from pathlib import Path

import click
from .console import make_console

from ..errors import UsageError
from ..instruments.perf_stat import COUNTER_ENV, COUNTERS
from ..runner.session import RunOptions, run_session
from ._options import cells_from, override_options
from .matrix import print_plan
from .run_display import ProgressDisplay, print_summary


@click.command("run")
@click.argument("source", metavar="[FILE_OR_PRESET_OR_SPECS]", required=False)
@click.option("--preset", help="A shipped preset: smoke, pi-cm4-blog, io-threads-sweep, pipeline-sweep, read-replicas, nightly.")
@click.option("--cell", "cell_args", multiple=True, metavar="JSON",
              help="One cell as JSON (the 'cell' field of `vkbench matrix --format github`). Repeatable.")
@override_options
@click.option("--backend", type=click.Choice(["native", "compose"]), default="native", show_default=True,
              help="native: server processes on 127.0.0.1; compose: a docker compose stack per cell.")
@click.option("--server-host", envvar="VKBENCH_SERVER_HOST",
              help="Compose backend with a remote engine (DOCKER_HOST=ssh://...): the address the client uses to reach the servers.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("vkbench-results"),
              show_default=True, help="Directory for result files (<cell_id>.json) and raw outputs (<cell_id>.raw/).")
@click.option("--run-id", envvar="VKBENCH_RUN_ID", help="Run identity shared by all cells (default: time + random).")
@click.option("--machine-class", envvar="VKBENCH_MACHINE_CLASS", help="Runner label to record (default: the cell's runner).")
@click.option("--trigger", envvar="VKBENCH_TRIGGER", default="manual", show_default=True,
              help="What started the run: manual, schedule, workflow_dispatch, pull_request.")
@click.option("--workflow-run-url", envvar="VKBENCH_WORKFLOW_RUN_URL", help="Link to the workflow run, stored in results.")
@click.option("--interleave", is_flag=True,
              help="Run repetition 1 of every cell, then repetition 2, ...: drift hits every cell alike (for comparisons).")
@click.option("--profile", is_flag=True,
              help="Record the servers with perf record -g during one extra repetition (not measured); folded stacks go to <cell_id>.raw/profile.folded.")
@click.option("--counter", type=click.Choice(COUNTERS), envvar=COUNTER_ENV, default="auto", show_default=True,
              help="What counts instructions (--instrument instructions|both): perf where the CPU has hardware "
                   "counters, valgrind (callgrind) otherwise (auto); perf is refused (exit 19) where there are none "
                   "(docs/instructions.md).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=600.0, show_default=True,
              help="Seconds each phase may take: a catalog preload, the preload, the warm-up, each repetition. "
                   "Past it the cell stops, everything it started is removed, and the run exits 14.")
@click.option("--output-limit", type=click.FloatRange(min=0.001, max=1024), default=4.0, show_default=True, metavar="MIB",
              help="MiB one benchmark tool process may print (streamed to disk); past it the tool is killed, "
                   "the cell stops and the run exits 15.")
@click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where pid files of running servers live (default ~/.cache/vkbench/state).")
@click.option("--cleanup-only", is_flag=True, help="Only remove leftovers of a killed earlier run, then exit.")
@click.option("--dry-run", is_flag=True, help="Print the plan and exit.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary for machines (progress goes to stderr).")
def run_cmd(source, preset, cell_args, backend, server_host, out_dir, run_id, machine_class, trigger, workflow_run_url,
            interleave, profile, counter, timeout, output_limit, state_dir, cleanup_only, dry_run, as_json, **kwargs) -> None:
    """Run a matrix on real servers: deploy each cell's topology, preload, warm up, repeat,
    measure client and server CPU, check validity and write one result file per cell.

    \b
    Examples:
      vkbench run --preset smoke
      vkbench run my-matrix.yaml --versions valkey:9.1.2 --io-threads 1,2 --out results/
      vkbench run --cell '{"server":"valkey:9.1.2","topology":"cluster:3"}' --backend compose
      vkbench run 'specs:memtier_benchmark-1Mkeys-load-hash-*' --duration 5 --dry-run
      vkbench run path/to/spec.yml --duration 5          # a redis-benchmarks-specification spec (or a folder)
      vkbench run perf:benchmark-configs.json --requests 100000   # a valkey-perf-benchmark config
    """
    if preset and source:
        raise UsageError("give a matrix file or --preset, not both", hint="drop one of them")
    options = RunOptions(backend=backend, out_dir=out_dir, run_id=run_id, machine_class=machine_class,
                         trigger=trigger, workflow_run_url=workflow_run_url, interleave=interleave,
                         timeout=timeout, state_dir=state_dir, server_host=server_host, profile=profile,
                         counter=counter, output_limit=int(output_limit * 1024 * 1024))
    err = make_console(stderr=True)
    if cleanup_only:
        from ..runner.session import cleanup

        for line in cleanup(options) or ["nothing to clean up"]:
            err.print(line)
        return
    from ..catalogs.plan import is_catalog_source

    if source and not cell_args and is_catalog_source(source):
        _run_catalog(source, kwargs, options, dry_run, as_json, err)
        return
    cells = cells_from(source or preset, cell_args, kwargs)
    if dry_run:
        if as_json:
            click.echo(json.dumps([{"id": c.cell_id, **c.model_dump(mode="json")} for c in cells], indent=2))
        else:
            print_plan(cells)
        return
    with ProgressDisplay(cells, console=err) as display:
        report = run_session(cells, options, progress=display.update)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        print_summary(report, make_console())
    report.raise_for_failures()


def _run_catalog(source, kwargs, options, dry_run, as_json, err) -> None:
    """A spec, a folder of specs, specs:GLOB or perf:FILE: run what can run, list what cannot."""
    from ..catalogs.plan import plan_catalog
    from ._options import overrides_from

    kwargs.pop("cores", None)
    plan = plan_catalog(source, overrides_from(kwargs))
    if dry_run:
        if as_json:
            click.echo(json.dumps(plan.to_json(), indent=2))
        else:
            print_catalog_plan(plan, make_console())
        return
    for refusal in plan.refusals:
        err.print(f"refused {refusal.name}: {refusal.detail}", markup=False, highlight=False)
    if not plan.cells:
        raise UsageError(f"{source}: nothing runnable ({len(plan.refusals)} refused)",
                         hint="the reasons are listed above; `--dry-run` shows the plan")
    with ProgressDisplay(plan.cells, console=err) as display:
        report = run_session(plan.cells, options, progress=display.update)
    if as_json:
        click.echo(json.dumps({**report.to_json(), "refused": [r.to_json() for r in plan.refusals]}, indent=2))
    else:
        print_summary(report, make_console())
    report.raise_for_failures()


def print_catalog_plan(plan, console) -> None:
    from rich.table import Table

    table = Table(title=f"{plan.source}: {len(plan.runnable_names())} of {plan.entries} runnable, "
                        f"{len(plan.cells)} cells", title_justify="left")
    for col in ("spec", "groups", "server", "topology", "io", "clients", "P", "length"):
        table.add_column(col, overflow="fold")
    for c in plan.cells:
        length = f"{c.duration} s" if c.duration else f"{c.requests} req"
        table.add_row(c.catalog.name, ",".join(c.catalog.groups), c.server, c.topology, str(c.io_threads),
                      str(c.clients), str(c.pipeline), length)
    console.print(table)
    if plan.refusals:
        refused = Table(title=f"refused: {len(plan.refusals)}", title_justify="left")
        for col in ("spec", "reason", "detail"):
            refused.add_column(col, overflow="fold")
        for r in plan.refusals:
            refused.add_row(r.name, r.reason, r.detail)
        console.print(refused)
