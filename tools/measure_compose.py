#!/usr/bin/env python3
"""What the compose backend costs compared with native processes, on the same machine.

    . tools/containers-env.sh && .venv/bin/python tools/measure_compose.py [--rounds 5] [--json out.json]

1. Lifecycle: start-until-ready and teardown of the same topology through both backends
   (standalone and cluster:3 by default), native and compose alternating.
2. Throughput: the same cell (valkey-benchmark from the host, SET then GET, -P 16, timed by the
   wall clock) through both backends in interleaved pairs, alternating which goes first (ABBA)
   so drift cancels; reported as the compose/native ratio per pair: median and spread (min..max).

Both backends run the same valkey build when the image is tools/setup/containers.sh's (the
Debian 8.0.1 packages native also uses). The client always runs on the host: through podman's
socket `docker run` makes the engine spin a core and would measure that instead.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vkbench.servers import resolve_tool
from vkbench.topology.backend import Backend, DeploymentSpec
from vkbench.topology.compose import ComposeBackend
from vkbench.topology.model import ServerSettings, Topology
from vkbench.topology.native import NativeBackend


def timed_lifecycle(backend: Backend, spec: DeploymentSpec) -> tuple[float, float]:
    """(seconds from deploy() to a ready deployment, seconds of teardown)."""
    began = time.monotonic()
    with backend.deploy(spec):
        ready = time.monotonic()
    return ready - began, time.monotonic() - ready


def benchmark_rps(backend: Backend, spec: DeploymentSpec, tool, requests: int) -> dict[str, float]:
    """{SET, GET: requests per wall-clock second}, each test its own valkey-benchmark run."""
    rates = {}
    with backend.deploy(spec) as deployment:
        first = deployment.primaries[0]
        for test in ("set", "get"):
            argv = [str(tool.path), "-h", first.host, "-p", str(first.port), "-a", spec.password, "-t", test,
                    "-n", str(requests), "-r", "100000", "-P", "16", "-q"]
            if spec.topology.is_cluster:
                argv.append("--cluster")
            began = time.monotonic()
            subprocess.run(argv, env=tool.run_env(), capture_output=True, text=True, timeout=600, check=True)
            rates[test.upper()] = requests / (time.monotonic() - began)
    return rates


def new_spec(topology: str, version: str, root: Path) -> DeploymentSpec:
    return DeploymentSpec(Topology.parse(topology), "valkey", version, ServerSettings(),
                          secrets.token_urlsafe(18), Path(tempfile.mkdtemp(dir=root)))


def spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
            "max": round(max(values), 3), "n": len(values)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topologies", nargs="+", default=["standalone", "cluster:3"])
    parser.add_argument("--version", default="8.0.1", help="valkey version (native cache and VALKEY_IMAGE)")
    parser.add_argument("--rounds", type=int, default=5, help="lifecycle rounds and throughput pairs")
    parser.add_argument("--requests", type=int, default=1000000, help="valkey-benchmark -n per standalone run")
    # In cluster mode valkey-benchmark 8.0 only finishes on 0.25 s ticks (1M requests take 0.75 or
    # 1.0 s, nothing between): runs of several seconds keep that step small.
    parser.add_argument("--cluster-requests", type=int, default=5000000, help="valkey-benchmark -n per cluster run")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)

    backends: dict[str, Backend] = {"native": NativeBackend(fetch=False), "compose": ComposeBackend()}
    tool = resolve_tool("valkey-benchmark", fetch=False)
    report: dict = {"command": " ".join(["tools/measure_compose.py", *(argv or sys.argv[1:])]), "topologies": {}}
    with tempfile.TemporaryDirectory(prefix="measure-compose-") as tmp:
        root = Path(tmp)
        for topology in args.topologies:
            life: dict[str, dict[str, list[float]]] = {b: {"ready_s": [], "teardown_s": []} for b in backends}
            ratios: dict[str, list[float]] = {"SET": [], "GET": []}
            rps: dict[str, dict[str, list[float]]] = {b: {"SET": [], "GET": []} for b in backends}
            for round_index in range(args.rounds):
                order = list(backends) if round_index % 2 == 0 else list(reversed(backends))
                for name in order:
                    ready, down = timed_lifecycle(backends[name], new_spec(topology, args.version, root))
                    life[name]["ready_s"].append(ready)
                    life[name]["teardown_s"].append(down)
                pair = {}
                for name in order:
                    spec = new_spec(topology, args.version, root)
                    requests = args.cluster_requests if spec.topology.is_cluster else args.requests
                    pair[name] = benchmark_rps(backends[name], spec, tool, requests)
                    for test, value in pair[name].items():
                        rps[name][test].append(value)
                for test in ratios:
                    ratios[test].append(pair["compose"][test] / pair["native"][test])
                print(f"{topology} round {round_index + 1}/{args.rounds}: "
                      + ", ".join(f"{n} ready {life[n]['ready_s'][-1]:.2f}s down {life[n]['teardown_s'][-1]:.2f}s" for n in backends)
                      + " | compose/native " + ", ".join(f"{t} {ratios[t][-1]:.2f}" for t in ratios), file=sys.stderr)
            report["topologies"][topology] = {
                "lifecycle": {b: {k: spread(v) for k, v in life[b].items()} for b in backends},
                "rps": {b: {t: spread(v) for t, v in rps[b].items()} for b in backends},
                "compose_over_native": {t: spread(v) for t, v in ratios.items()},
            }
    print_table(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


def print_table(report: dict) -> None:
    print(f"\n{report['command']}")
    for topology, figures in report["topologies"].items():
        print(f"\n{topology}")
        for backend, life in figures["lifecycle"].items():
            r, d = life["ready_s"], life["teardown_s"]
            print(f"  {backend:8} ready {r['median']:.2f}s ({r['min']:.2f}-{r['max']:.2f})"
                  f"  teardown {d['median']:.2f}s ({d['min']:.2f}-{d['max']:.2f})")
        for backend, tests in figures["rps"].items():
            print(f"  {backend:8} " + "  ".join(f"{t} {v['median']:,.0f} rps ({v['min']:,.0f}-{v['max']:,.0f})" for t, v in tests.items()))
        for test, ratio in figures["compose_over_native"].items():
            print(f"  compose/native {test}: median {ratio['median']:.3f} (range {ratio['min']:.3f}-{ratio['max']:.3f}, {ratio['n']} pairs)")


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
    sys.exit(130)
