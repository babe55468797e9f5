#!/usr/bin/env python3
"""Which functions' instructions per operation changed between two callgrind dumps (the ones
`vkbench run --instrument instructions` keeps in <cell_id>.raw/callgrind/, gzipped or not).

    .venv/bin/python tools/instruction_diff.py before/X.raw/callgrind/callgrind-seed1-get.out.gz \\
        after/X.raw/callgrind/callgrind-seed1-get.out.gz --ops 20000

--ops is the window's request count (the result's instructions.method.window_requests);
--ops-after when the two windows differ. Self costs: a change is named where it happens.
"""

from __future__ import annotations

import argparse

from vkbench.instruments.callgrind import function_diff, read_any


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--ops", type=int, required=True, help="requests of the before window")
    ap.add_argument("--ops-after", type=int, default=None, help="requests of the after window (default: --ops)")
    ap.add_argument("--limit", type=int, default=20)
    args = ap.parse_args()
    before, after = read_any(args.before), read_any(args.after)
    ops_after = args.ops_after or args.ops
    total_b, total_a = before.total() / args.ops, after.total() / ops_after
    print(f"total per op: {total_b:,.1f} -> {total_a:,.1f} ({total_a - total_b:+,.1f}, {100 * (total_a / total_b - 1):+.3f}%)")
    print(f"{'function':60s} {'before':>10s} {'after':>10s} {'delta':>9s}")
    for row in function_diff(before, after, before_ops=args.ops, after_ops=ops_after, limit=args.limit):
        print(f"{row['function'][:60]:60s} {row['before']:10.2f} {row['after']:10.2f} {row['delta']:+9.2f}")


if __name__ == "__main__":
    main()
