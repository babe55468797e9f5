#!/usr/bin/env python3
"""The cost of `vkbench run --profile`: throughput of the profiled repetition against the
unprofiled one right before it, on the same servers, in N pairs; and the size of a stored profile.

    .venv/bin/python tools/measure_profile_overhead.py                  # valkey 9.1.2, io-threads 1, 6 pairs
    .venv/bin/python tools/measure_profile_overhead.py --pairs 10 --io-threads 2 --requests 500000

Each pair is one cell run with one measured repetition and --profile (the profiled repetition
follows the measured one on the same deployment), so machine drift between the two is small;
the pairs are interleaved in time with nothing else. The ratio profiled/unprofiled per pair,
its median and range are printed per command, with the median stored profile size.
Not a test: numbers depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from vkbench.matrix.cells import cell_from_arg
from vkbench.runner.session import RunOptions, run_session


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--server", default="valkey:9.1.2")
    ap.add_argument("--io-threads", type=int, default=1)
    ap.add_argument("--topology", default="standalone")
    ap.add_argument("--requests", type=int, default=300000)
    args = ap.parse_args()
    cell = cell_from_arg(
        f'{{"server": "{args.server}", "io_threads": {args.io_threads}, "topology": "{args.topology}", '
        f'"requests": {args.requests}, "keyspace": 10000, "pipeline": 16, "repetitions": 1, "warmup": 5000}}', {})
    ratios: dict[str, list[float]] = {}
    sizes, samples = [], []
    with tempfile.TemporaryDirectory(prefix="vkbench-overhead-") as tmp:
        for n in range(args.pairs):
            report = run_session([cell], RunOptions(out_dir=Path(tmp) / f"pair-{n}", profile=True))
            report.raise_for_failures()
            result = report.outcomes[0].result
            profile = result["profile"]
            if profile["status"] != "recorded":
                raise SystemExit(f"profile not recorded: {profile.get('reason')}")
            sizes.append(profile["bytes"])
            samples.append(profile["samples"])
            for command, stats in result["summary"].items():
                profiled = profile["repetition"]["rps"].get(command)
                if profiled:
                    ratios.setdefault(command, []).append(profiled / stats["rps"]["median"])
    table = Table(title=f"--profile overhead: {cell.cell_id}, {args.pairs} pairs", title_justify="left")
    for col in ("command", "median profiled/unprofiled", "min", "max"):
        table.add_column(col, justify="right")
    for command, values in sorted(ratios.items()):
        table.add_row(command, f"{statistics.median(values):.3f}", f"{min(values):.3f}", f"{max(values):.3f}")
    console = Console()
    console.print(table)
    console.print(f"stored profile: median {statistics.median(sizes) / 1024:.1f} KiB (max {max(sizes) / 1024:.1f} KiB), "
                  f"median {statistics.median(samples):.0f} samples")


if __name__ == "__main__":
    main()
