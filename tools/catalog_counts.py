#!/usr/bin/env python3
"""How many catalog specs run here, by group, and why the rest do not.

    .venv/bin/python tools/catalog_counts.py [SOURCE ...] [--json]

SOURCE defaults to ``specs:*`` (every redis-benchmarks-specification spec at the pinned commit,
from $VKBENCH_SPECS_SOURCE or GitHub) plus every valkey-perf-benchmark config. A spec with
several groups counts in each of them.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys

from vkbench.catalogs.fetch import PERF_CONFIGS, load_catalog
from vkbench.catalogs.plan import plan_catalog


def counts(source: str) -> dict:
    plan = plan_catalog(source)
    by_group: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    seen: set[str] = set()
    for cell in plan.cells:
        if cell.catalog.name in seen:
            continue
        seen.add(cell.catalog.name)
        for group in cell.catalog.groups or ["(none)"]:
            by_group[group]["runnable"] += 1
    for refusal in plan.refusals:
        for group in refusal.groups or ["(none)"]:
            by_group[group]["refused"] += 1
    return {"source": source, "entries": plan.entries, "runnable": len(seen), "refused": len(plan.refusals),
            "by_group": {g: dict(c) for g, c in sorted(by_group.items())},
            "by_reason": dict(collections.Counter(r.reason for r in plan.refusals).most_common())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sources", nargs="*")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    sources = args.sources or ["specs:*"] + [
        "perf:" + p.split("/", 1)[1] for p in load_catalog(PERF_CONFIGS).matching("configs/*.json")]
    reports = [counts(s) for s in sources]
    if args.json:
        print(json.dumps(reports, indent=2))
        return 0
    for report in reports:
        print(f"{report['source']}: {report['runnable']} of {report['entries']} runnable, {report['refused']} refused")
        if len(report["by_group"]) > 1:
            for group, c in report["by_group"].items():
                print(f"  {group:14} runnable {c.get('runnable', 0):4}  refused {c.get('refused', 0):4}")
        for reason, n in report["by_reason"].items():
            print(f"  refused: {n:4}  {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
