"""Options shared by several commands: ``run`` and ``matrix`` (flags that override fields of every
matrix group), ``ab`` and ``bisect`` (the instrument an A/B step measures with)."""

from __future__ import annotations


from typing import Any, Callable

import click

from ..errors import UsageError
from ..matrix import Cell, expand_matrix, load_matrix


def _csv(value: str | None) -> list[str] | None:
    if value is None or value.strip() == "":
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def _ints(name: str, value: str | None) -> list[int] | None:
    items = _csv(value)
    if items is None:
        return None
    try:
        return [int(v) for v in items]
    except ValueError:
        raise UsageError(f"--{name} takes comma-separated integers, got {value!r}", hint=f"e.g. --{name} 1,2,4") from None


def override_options(func: Callable) -> Callable:
    options = [
        click.option("--versions", help="Comma-separated engine:version list, e.g. valkey:9.0.0,valkey:9.1.2,valkey:unstable."),
        click.option("--io-threads", "io_threads", help="Comma-separated io-threads values, e.g. 1,2,4."),
        click.option("--topologies", help="Comma-separated topologies: standalone, cluster:N, cluster:N:R, replication:R."),
        click.option("--tool", type=click.Choice(["valkey-benchmark", "redis-benchmark", "memtier_benchmark"]), help="Benchmark tool for every cell."),
        click.option("--tests", help="Comma-separated tests, e.g. set,get."),
        click.option("--pipeline", help="Comma-separated pipeline depths (-P)."),
        click.option("--requests", type=int, help="Requests per repetition (-n)."),
        click.option("--duration", "--test-time", "duration", type=click.IntRange(min=1),
                     help="Seconds per repetition instead of requests (memtier_benchmark --test-time; "
                          "memtier_benchmark cells only)."),
        click.option("--repetitions", type=click.IntRange(1, 100), help="Repetitions per cell."),
        click.option("--instrument", type=click.Choice(["wallclock", "instructions", "both"]),
                     help="What measures every cell: wallclock (rps, latency; the default), instructions per operation "
                          "under callgrind (docs/instructions.md), or both."),
        click.option("--runners", help="Comma-separated runner classes (pi-cm4, cloud-x86, cloud-arm64)."),
        click.option("--cores", type=int, help="Core count for '1..cores+1' ranges (default: this machine's)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def overrides_from(kwargs: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if (v := _csv(kwargs.pop("versions", None))) is not None:
        out["server"] = v
    if (v := _ints("io-threads", kwargs.pop("io_threads", None))) is not None:
        out["io_threads"] = v
    if (v := _csv(kwargs.pop("topologies", None))) is not None:
        out["topology"] = v
    if (v := kwargs.pop("tool", None)) is not None:
        out["tool"] = v
    if (v := _csv(kwargs.pop("tests", None))) is not None:
        out["tests"] = v
    if (v := _ints("pipeline", kwargs.pop("pipeline", None))) is not None:
        out["pipeline"] = v
    if (v := kwargs.pop("requests", None)) is not None:
        out["requests"] = v
    if (v := kwargs.pop("duration", None)) is not None:
        out["duration"] = v
    if (v := kwargs.pop("repetitions", None)) is not None:
        out["repetitions"] = v
    if (v := kwargs.pop("instrument", None)) is not None:
        out["instrument"] = v
    if (v := _csv(kwargs.pop("runners", None))) is not None:
        out["runner"] = v
    return out


def cells_from(source: str | None, cell_args: tuple[str, ...], kwargs: dict[str, Any]) -> list[Cell]:
    """Cells from ``--cell`` JSON arguments, or from a matrix file/preset with flag overrides."""
    cores = kwargs.pop("cores", None)
    overrides = overrides_from(kwargs)
    if cell_args:
        if source:
            raise UsageError("give either a matrix (file or --preset) or --cell, not both", hint="drop one of them")
        from ..matrix.cells import cell_from_arg

        return [cell_from_arg(arg, overrides) for arg in cell_args]
    if not source:
        raise UsageError("nothing to run", hint="give a preset (--preset smoke), a matrix YAML file, or --cell JSON")
    from ..catalogs.plan import is_catalog_source, plan_catalog

    if is_catalog_source(source):
        return plan_catalog(source, overrides).cells
    return expand_matrix(load_matrix(source), overrides=overrides, cores=cores)




def instrument_options(func: Callable) -> Callable:
    """``--instrument``, ``--pairs`` and ``--instructions-target-mde`` of ``ab`` and ``bisect``."""
    # Imported here: ab_counts needs scipy, which ``run`` and ``matrix`` (the other users of this
    # module) do not load at start.
    from ..ab_counts import DEFAULT_PAIRS, INSTRUCTIONS_TARGET_MDE

    options = [
        click.option("--instrument", type=click.Choice(["wallclock", "instructions", "both"]), default="wallclock",
                     show_default=True, help="wallclock: interleaved rounds of rps; instructions: seed pairs under "
                     "callgrind (instructions per operation, memory per key, the functions that changed); both."),
        click.option("--pairs", default=DEFAULT_PAIRS, show_default=True, help="Seed pairs of an instruction A/B."),
        click.option("--instructions-target-mde", "counts_target", default=INSTRUCTIONS_TARGET_MDE, show_default=True,
                     help="Minimum detectable effect an instruction A/B must reach for a verdict (relative)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func
