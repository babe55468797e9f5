#!/usr/bin/env python3
"""Fidelity: does vkbench report what the tool itself reports?

Against one standalone server, alternate N pairs of (a) a repetition through vkbench's runner
(run_tools + parse_output, as `vkbench run` does) and (b) valkey-benchmark started directly
with the same arguments and its own CSV read with the csv module. Prints the median ratio
vkbench/direct and its spread per command. Goal: 1.00 +- 0.03.

    .venv/bin/python tools/measure_fidelity.py --pairs 7 --requests 300000
"""

from __future__ import annotations

import argparse
import csv
import io
import secrets
import statistics
import subprocess
import tempfile
from pathlib import Path

from vkbench.matrix.model import Cell
from vkbench.parsers import parse_output
from vkbench.runner.process import run_tools
from vkbench.runner.tools import build_command
from vkbench.servers import resolve_tool
from vkbench.topology.backend import DeploymentSpec
from vkbench.topology.model import ServerSettings, Topology
from vkbench.topology.native import NativeBackend


def direct(argv: list[str], env: dict) -> dict[str, float]:
    # Its own session, as vkbench starts tools: with scheduler autogroups a session shares one
    # CPU share, so a tool left in this script's session would be slower than vkbench's.
    out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, start_new_session=True).stdout
    rows = [r for r in csv.reader(io.StringIO(out)) if len(r) >= 2 and r[0] != "test"]
    return {r[0]: float(r[1]) for r in rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--requests", type=int, default=300000)
    ap.add_argument("--version", default="9.1.2")
    args = ap.parse_args()

    tool = resolve_tool("valkey-benchmark")
    cell = Cell(server=f"valkey:{args.version}", pipeline=16, requests=args.requests, keyspace=100000)
    password = secrets.token_urlsafe(16)
    spec = DeploymentSpec(Topology.parse("standalone"), "valkey", args.version, ServerSettings(), password,
                          Path(tempfile.mkdtemp(prefix="vkbench-fidelity-")))
    ratios: dict[str, list[float]] = {}
    with NativeBackend().deploy(spec) as deployment:
        target = deployment.primaries[0]
        cmd = build_command(cell, target, password, str(tool.path))
        env = tool.run_env()
        cmd.env.update(tool.env)
        for i in range(args.pairs):
            order = ["vkbench", "direct"] if i % 2 == 0 else ["direct", "vkbench"]
            got: dict[str, dict[str, float]] = {}
            for who in order:
                if who == "vkbench":
                    run = run_tools([cmd], cpus=None, timeout=600)[0]
                    got[who] = {r.command: r.rps for r in parse_output(run.output, tool="valkey-benchmark")}
                else:
                    got[who] = direct(cmd.argv, env)
            for command, rps in got["vkbench"].items():
                ratios.setdefault(command, []).append(rps / got["direct"][command])
            print(f"pair {i + 1}: " + ", ".join(f"{c} vkbench {got['vkbench'][c]:,.0f} direct {got['direct'][c]:,.0f}"
                                               for c in got["vkbench"]))
    print(f"\n{'command':8} {'pairs':>5} {'median ratio':>13} {'min':>7} {'max':>7}")
    for command, values in ratios.items():
        print(f"{command:8} {len(values):5d} {statistics.median(values):13.3f} {min(values):7.3f} {max(values):7.3f}")


if __name__ == "__main__":
    main()
