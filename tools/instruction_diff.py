#!/usr/bin/env python3
"""Which functions' instructions per operation changed between two callgrind dumps (the ones
`vkbench run --instrument instructions` keeps in <cell_id>.raw/callgrind/, gzipped or not), or
between two counted result files (their kept dumps, seed by seed, else their top functions).

    .venv/bin/python tools/instruction_diff.py before/X.raw/callgrind/callgrind-seed1-get.out.gz \\
        after/X.raw/callgrind/callgrind-seed1-get.out.gz --ops 20000
    .venv/bin/python tools/instruction_diff.py before/RUN__CELL.json after/RUN__CELL.json --command get

--ops is the window's request count (the result's instructions.method.window_requests);
--ops-after when the two windows differ. Self costs: a change is named where it happens.
The logic lives in vkbench.instruments.diff (detection attaches the same table to an incident).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vkbench.instruments.diff import describe_source, diff_dumps, diff_results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--ops", type=int, help="requests of the before window (dumps)")
    ap.add_argument("--ops-after", type=int, default=None, help="requests of the after window (default: --ops)")
    ap.add_argument("--command", default="get", help="the command to compare (result files)")
    ap.add_argument("--limit", type=int, default=20)
    args = ap.parse_args()
    before, after = Path(args.before), Path(args.after)
    if before.suffix == ".json" and after.suffix == ".json":
        diff = diff_results(before, after, args.command, limit=args.limit)
        if diff is None:
            ap.error(f"no instruction count of {args.command} on both sides")
    else:
        if not args.ops:
            ap.error("--ops is required for two dumps")
        diff = diff_dumps({0: before}, {0: after}, before_ops=args.ops, after_ops=args.ops_after or args.ops,
                          command=args.command, limit=args.limit)
    print(describe_source(diff) if diff.seeds != [0] else f"self instructions per operation, {before.name} -> {after.name}")
    if diff.total_before and diff.total_after:
        b, a = diff.total_before, diff.total_after
        print(f"total per op: {b:,.1f} -> {a:,.1f} ({a - b:+,.1f}, {100 * (a / b - 1):+.3f}%)")
    print(f"{'function':60s} {'before':>10s} {'after':>10s} {'delta':>9s}")
    for row in diff.rows:
        print(f"{row['function'][:60]:60s} {row['before']:10.2f} {row['after']:10.2f} {row['delta']:+9.2f}")


if __name__ == "__main__":
    main()
