#!/usr/bin/env python3
"""What follows wall time in instruction counts: per run of tools/instruction_spread.py kept with
--keep-dumps DIR, the code count's median over servers (recomputed from the dumps by the current
method's split) and, per window, the counts of the calls that follow the clock, not the code
(docs/instructions.md, "Run-to-run drift").

    .venv/bin/python tools/instruction_spread.py --requests 5000 --servers 5 --keep-dumps runs/a
    .venv/bin/python tools/instruction_spread.py --requests 5000 --servers 5 --keep-dumps runs/b
    .venv/bin/python tools/instruction_drift.py runs/a runs/b --requests 5000

Columns (means per window): slow log entries (getClientPeerId: the entry names its client),
gettimeofday calls (valkey 9.1.2's ustime calls it when its cached time is over 1 ms old),
event-loop iterations beyond one per request (beforeSleep), cron runs (serverCron).
"""

from __future__ import annotations

import argparse
import re
import statistics
from pathlib import Path

from vkbench.instruments import callgrind
from vkbench.instruments.method import STRINGS_SCOPES
from vkbench.instruments.valgrind import cv_pct, window_from

_DUMP = re.compile(r"callgrind-seed(?P<seed>\d+)-(?P<command>[a-z]+)-w(?P<window>\d+)\.out(\.gz)?$")
CLOCK_CALLS = {"slowlog": "getClientPeerId", "gettimeofday": "__gettimeofday_syscall", "iterations": "beforeSleep",
               "crons": "serverCron"}


def calls_of(profile: callgrind.CallgrindProfile, callee: str) -> int:
    return sum(n for (caller, fn), n in profile.call_counts.items() if fn == callee and caller != fn)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="directories given to instruction_spread.py --keep-dumps")
    ap.add_argument("--requests", type=int, required=True, help="requests per window (instruction_spread.py --requests)")
    ap.add_argument("--strings-scope", choices=STRINGS_SCOPES, default="outside-timers",
                    help="which string routines' calls the code count leaves out (all: the method before issue 19's fix)")
    args = ap.parse_args()
    medians: dict[str, list[float]] = {}
    for run in args.runs:
        windows: dict[str, dict[int, list[dict]]] = {}
        for path in sorted(run.glob("server-*/callgrind-seed*-*-w*.out*")):
            match = _DUMP.search(path.name)
            if not match:
                continue
            profile = callgrind.read_any(path)
            command, seed = match["command"], int(match["seed"])
            row = {"code": window_from(profile, command, int(match["window"]) - 1, args.requests,
                                           strings_scope=args.strings_scope).code_per_op}
            row.update({name: calls_of(profile, fn) for name, fn in CLOCK_CALLS.items()})
            windows.setdefault(command, {}).setdefault(seed, []).append(row)
        if not windows:
            ap.error(f"{run}: no kept window dumps (callgrind-seedS-CMD-wN.out.gz under server-*/)")
        for command, by_seed in sorted(windows.items()):
            per_server = [statistics.fmean(w["code"] for w in rows) for rows in by_seed.values()]
            every = [w for rows in by_seed.values() for w in rows]
            median = statistics.median(per_server)
            medians.setdefault(command, []).append(median)
            means = {name: statistics.fmean(w[name] for w in every) for name in CLOCK_CALLS}
            means["iterations"] -= args.requests          # one per request, the rest woke for timers
            terms = "  ".join(f"{name} {value:.2f}" for name, value in means.items())
            print(f"{str(run):30s} {command:4s} code median {median:.3f}  CV servers {cv_pct(per_server):.4f}%  "
                  f"per window: {terms}")
    for command, values in sorted(medians.items()):
        spread = max(values) - min(values)
        print(f"{command}: medians {[round(v, 3) for v in values]}, max-min {spread:.3f} "
              f"({100 * spread / statistics.fmean(values):.4f}%)")


if __name__ == "__main__":
    main()
