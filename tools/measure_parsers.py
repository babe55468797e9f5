#!/usr/bin/env python3
"""Parse time and peak memory of vkbench's parsers on 10 MB inputs (figures for the note).

    .venv/bin/python tools/measure_parsers.py [--megabytes 10]

Inputs: valkey-benchmark --csv rows repeated to the size, and a memtier --json-out-file padded
with a per-second "Time-Serie" to the size (as a long --test-time run writes). CPU time of one parse
(without tracemalloc) and tracemalloc peak of another, each; run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc

from vkbench.parsers import parse_output

CSV_HEADER = '"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"\n'
CSV_ROW = '"SET","180180.17","0.151","0.040","0.143","0.231","0.319","1.239"\n'


def memtier_json(size: int) -> str:
    row = {"Count": 2000, "Ops/sec": 7482.59, "Hits/sec": 0.0, "Misses/sec": 0.0, "Latency": 0.259,
           "Average Latency": 0.259, "Min Latency": 0.04, "Max Latency": 9.343, "KB/sec": 576.53,
           "Percentile Latencies": {"p50.00": 0.087, "p99.00": 4.383, "p99.90": 7.391}}
    second = {"Count": 100, "Average Latency": 0.25, "Min Latency": 0.04, "Max Latency": 9.3,
              "p50.00": 0.087, "p99.00": 4.3, "p99.90": 7.3, "Bytes RX": 1000, "Bytes TX": 2000}
    per_second = len(json.dumps(second)) + 12
    series = {str(i): second for i in range(max(1, size // per_second // 2))}
    doc = {"ALL STATS": {"Runtime": {"Total duration": 3600000},
                         "Sets": {**row, "Time-Serie": series}, "Gets": {**row, "Time-Serie": series},
                         "Totals": {**row, "Ops/sec": 14965.18}}}
    return json.dumps(doc, indent=1)


def measure(name: str, text: str, tool: str) -> None:
    """CPU time of a parse without tracemalloc (it hooks every allocation and slows allocation-heavy
    code several times over), then the peak of a second parse under tracemalloc."""
    started, wall = time.process_time(), time.perf_counter()
    records = parse_output(text, tool=tool)
    cpu, elapsed = time.process_time() - started, time.perf_counter() - wall
    del records
    tracemalloc.start()
    records = parse_output(text, tool=tool)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{name}: {len(text) / 2**20:.1f} MB, {len(records)} records, {cpu:.2f} s CPU ({elapsed:.2f} s wall), "
          f"peak {peak / 2**20:.0f} MB above the input (tracemalloc)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=10.0)
    size = int(parser.parse_args().megabytes * 2**20)
    measure("valkey-benchmark --csv", CSV_HEADER + CSV_ROW * (size // len(CSV_ROW)), "valkey-benchmark")
    measure("memtier --json-out-file", memtier_json(size), "memtier_benchmark")


if __name__ == "__main__":
    main()
