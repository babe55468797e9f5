#!/usr/bin/env python3
"""Fidelity of vkbench's memtier figures: does vkbench report what memtier itself prints?

Against one standalone server (keys preloaded as vkbench does), alternate N pairs of (a) a
repetition as `vkbench run` does it (run_tools + parse_tool_run on memtier's stdout and
--json-out-file) and (b) memtier_benchmark started directly with the same flags, its printed
ALL STATS table read with str.split. Prints, per command, the median ratio vkbench/direct of
ops/sec and of the average latency, with their spread. Goal: 1.00 +- 0.03.

    .venv/bin/python tools/measure_memtier_fidelity.py --pairs 7 --requests 200000
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import subprocess
import tempfile
from pathlib import Path

from vkbench.matrix.model import Cell
from vkbench.parsers.dispatch import parse_tool_run
from vkbench.runner import preload
from vkbench.runner.process import run_tools
from vkbench.runner.tools import build_command
from vkbench.servers import resolve_tool
from vkbench.topology.backend import DeploymentSpec
from vkbench.topology.model import ServerSettings, Topology
from vkbench.topology.native import NativeBackend

ROWS = {"Sets": "SET", "Gets": "GET", "Totals": "TOTALS"}


def direct(argv: list[str], env: dict, own_session: bool) -> dict[str, tuple[float, float]]:
    """memtier run by hand: (ops/sec, avg latency) per row of its printed table.

    In its own session, as vkbench starts tools (and as a terminal starts a command): with the
    kernel's scheduler autogroups (CONFIG_SCHED_AUTOGROUP, on in Debian), each session is
    one group that gets a fair CPU share as a whole. A memtier left in this script's session
    shares its group with whatever else runs there, while vkbench's memtier has a group of its
    own; on a loaded machine that alone made vkbench's memtier 1.8x faster."""
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                         timeout=900, start_new_session=own_session).stdout
    lines = out.splitlines()
    at = max(i for i, line in enumerate(lines) if line.startswith("Type ") and "Ops/sec" in line)
    header = lines[at].replace("Avg. Latency", "Avg.Latency").split()
    got = {}
    for line in lines[at + 2:]:
        words = line.split()
        if not words or words[0] not in ("Sets", "Gets", "Waits", "Totals"):
            break
        row = dict(zip(header, words))
        if words[0] in ROWS and row["Ops/sec"] != "0.00":
            got[ROWS[words[0]]] = (float(row["Ops/sec"]), float(row["Avg.Latency"]))
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--requests", type=int, default=200000, help="per command (SET and GET)")
    ap.add_argument("--version", default="9.1.2")
    ap.add_argument("--pipeline", type=int, default=16)
    ap.add_argument("--shared-session", action="store_true",
                    help="run the direct memtier in this script's session (the old, unequal way), to show the effect")
    args = ap.parse_args()

    tool = resolve_tool("memtier_benchmark")
    cell = Cell(server=f"valkey:{args.version}", tool="memtier_benchmark", pipeline=args.pipeline,
                requests=args.requests, keyspace=100000, clients=50)
    password = secrets.token_urlsafe(16)
    work = Path(tempfile.mkdtemp(prefix="vkbench-memtier-fidelity-"))
    spec = DeploymentSpec(Topology.parse("standalone"), "valkey", args.version, ServerSettings(), password, work)
    ratios: dict[tuple[str, str], list[float]] = {}
    with NativeBackend().deploy(spec) as deployment:
        preload.preload_keyspace(deployment, cell.keyspace, cell.data_size, names=preload.key_names(cell))
        target = deployment.primaries[0]
        json_out = str(work / "memtier.json")
        cmd = build_command(cell, target, password, str(tool.path), json_out=json_out)
        env = tool.run_env()
        cmd.env.update(tool.env)
        # Exactly the same argv on both sides (the --json-out-file included).
        print("flags:", cmd.display(), "| direct in", "this session" if args.shared_session else "its own session")
        for i in range(args.pairs):
            order = ["vkbench", "direct"] if i % 2 == 0 else ["direct", "vkbench"]
            got: dict[str, dict[str, tuple[float, float]]] = {}
            for who in order:
                if who == "vkbench":
                    run = run_tools([cmd], cpus=None, timeout=900)[0]
                    records = parse_tool_run(run.output, tool="memtier_benchmark",
                                             json_text=Path(json_out).read_text(), source="vkbench")
                    got[who] = {r.command: (r.rps, r.latency_ms["avg"]) for r in records}
                else:
                    got[who] = direct(cmd.argv, env, own_session=not args.shared_session)
            for command, (rps, avg) in got["vkbench"].items():
                ratios.setdefault((command, "rps"), []).append(rps / got["direct"][command][0])
                ratios.setdefault((command, "avg"), []).append(avg / got["direct"][command][1])
            print(f"pair {i + 1}: " + ", ".join(
                f"{c} vkbench {got['vkbench'][c][0]:,.0f} direct {got['direct'][c][0]:,.0f}" for c in got["vkbench"]))
    print(f"\n{'command':8} {'metric':6} {'pairs':>5} {'median ratio':>13} {'min':>7} {'max':>7}")
    for (command, metric), values in ratios.items():
        print(f"{command:8} {metric:6} {len(values):5d} {statistics.median(values):13.3f} "
              f"{min(values):7.3f} {max(values):7.3f}")


if __name__ == "__main__":
    main()
