#!/usr/bin/env python3
"""Measure the native backend's life cycle: start until ready, and teardown, per topology.

    .venv/bin/python tools/measure_lifecycle.py            # valkey 9.1.2, N=10 each
    .venv/bin/python tools/measure_lifecycle.py --n 3 --version 8.0.1 --topology cluster:2:1

"ready" is the wall time of entering ``NativeBackend.deploy`` (binary lookup from the cache,
start, cluster creation, every readiness check); "teardown" is the wall time of leaving it
(SHUTDOWN NOSAVE, processes reaped, ports checked free). Goals: standalone ready <= 0.5 s,
cluster:3 ready <= 3 s. A primary in cluster mode reports cluster_state:ok no sooner than 2 s
after it started (the server's CLUSTER_WRITABLE_DELAY), so ~2.1 s is the floor for clusters.
Not a test: numbers depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from vkbench.topology.backend import DeploymentSpec
from vkbench.topology.model import ServerSettings, Topology
from vkbench.topology.native import NativeBackend

GOALS_S = {"standalone": 0.5, "cluster:3": 3.0}


def measure(topology: str, engine: str, version: str, n: int) -> tuple[list[float], list[float]]:
    ready, teardown = [], []
    backend = NativeBackend(fetch=False)
    with tempfile.TemporaryDirectory(prefix="vkbench-lifecycle-") as tmp:
        for i in range(n):
            spec = DeploymentSpec(Topology.parse(topology), engine, version, ServerSettings(),
                                  secrets.token_hex(16), Path(tmp) / f"run-{i}")
            began = time.perf_counter()
            context = backend.deploy(spec)
            context.__enter__()
            entered = time.perf_counter()
            context.__exit__(None, None, None)
            ready.append(entered - began)
            teardown.append(time.perf_counter() - entered)
    return ready, teardown


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="valkey")
    parser.add_argument("--version", default="9.1.2")
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--topology", action="append", help="repeatable; default standalone, cluster:3, replication:1")
    args = parser.parse_args()
    topologies = args.topology or ["standalone", "cluster:3", "replication:1"]

    table = Table(title=f"native backend life cycle, {args.engine} {args.version}, N={args.n} (seconds)")
    for column in ("topology", "ready median", "ready min", "ready max", "teardown median",
                   "teardown min", "teardown max", "goal (ready)"):
        table.add_column(column, justify="right" if column != "topology" else "left")
    missed = False
    for topology in topologies:
        ready, teardown = measure(topology, args.engine, args.version, args.n)
        goal = GOALS_S.get(topology)
        verdict = "-"
        if goal is not None:
            met = statistics.median(ready) <= goal
            missed |= not met
            verdict = f"<= {goal} {'met' if met else 'MISSED'}"
        table.add_row(topology, *(f"{f(values):.3f}" for values in (ready, teardown)
                                  for f in (statistics.median, min, max)), verdict)
    Console().print(table)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
