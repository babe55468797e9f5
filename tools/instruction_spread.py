#!/usr/bin/env python3
"""How repeatable instruction counts are: N fresh servers under callgrind (vkbench's method, see
docs/instructions.md), each with W windows of R requests per command, and the spread printed.

    .venv/bin/python tools/instruction_spread.py                              # 5 servers, seeds 1..5
    .venv/bin/python tools/instruction_spread.py --same-seed 7 --servers 3    # one seed: spread across starts
    .venv/bin/python tools/instruction_spread.py --clients 50 --pipeline 16 --no-scalar-strings

Per command: instructions per operation of every server (mean of its windows), the spread
(max-min over mean) and CV across servers, the CV over all windows, and seconds per server; the same for the code count (the total without
libc's alignment-sensitive string routines, vkbench.instruments.split), what the nightly series record.
Not a test: the figures are what a regression must exceed to be seen (docs/instructions.md).
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import tempfile
import time
from pathlib import Path

from vkbench.instruments.method import InstructionsMethod
from vkbench.instruments.valgrind import cv_pct, measure, summarize
from vkbench.servers import resolve_server, resolve_tool


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", default="valkey:9.1.2", help="engine:version (a source build: valkey:REF@source)")
    ap.add_argument("--servers", type=int, default=5)
    ap.add_argument("--same-seed", type=int, default=None, help="every server gets this seed (else 1..N)")
    ap.add_argument("--windows", type=int, default=4)
    ap.add_argument("--requests", type=int, default=20000, help="requests per window")
    ap.add_argument("--commands", default="set,get")
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--pipeline", type=int, default=1)
    ap.add_argument("--keyspace", type=int, default=10000)
    ap.add_argument("--no-scalar-strings", action="store_true", help="leave libc's AVX2/SSE4 string routines on")
    ap.add_argument("--keep-slowlog", action="store_true",
                    help="leave the server's slow log on (the method before issue 19's drift fix)")
    ap.add_argument("--keep-dumps", type=Path, default=None, metavar="DIR",
                    help="keep every window's callgrind dump, gzipped, in DIR/server-<i>/ (for tools/instruction_diff.py)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    engine, version = args.server.split(":", 1)
    server, tool = resolve_server(engine, version), resolve_tool("valkey-benchmark")
    method = InstructionsMethod(windows=args.windows, window_requests=args.requests, servers=args.servers,
                                scalar_string_routines=not args.no_scalar_strings, slowlog=args.keep_slowlog)
    measurements = []
    with tempfile.TemporaryDirectory(prefix="vkbench-spread-") as tmp:
        for i in range(args.servers):
            seed = args.same_seed if args.same_seed is not None else method.seed_base + i
            t0 = time.monotonic()
            measurements.append(measure(
                server_path=server.path, tool_path=tool.path, tool_env=dict(tool.env), commands=args.commands.split(","),
                clients=args.clients, pipeline=args.pipeline, data_size=3, keyspace=args.keyspace, seed=seed,
                method=method, work_dir=Path(tmp) / f"server-{i}", password=secrets.token_urlsafe(16),
                server_env=dict(server.env),
                keep_dumps=args.keep_dumps / f"server-{i + 1}" if args.keep_dumps else None,
                keep_all_windows=args.keep_dumps is not None))
            m = measurements[-1]
            print(f"server {i + 1} seed {seed}: {time.monotonic() - t0:.1f} s, rehash {m.rehash['status']}, "
                  f"{m.memory['bytes_per_key']} bytes/key", flush=True)
    summary = summarize(measurements, method)
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(f"\n{args.server}  -c {args.clients} -P {args.pipeline}  {args.windows} x {args.requests} requests, "
          f"scalar strings {'off' if args.no_scalar_strings else 'on'}, method {method.method_id()}")
    for command, block in summary["commands"].items():
        per = block["per_server"]
        spread = 100 * (max(per) - min(per)) / statistics.fmean(per)
        print(f"  {command:4s} per server {per}")
        print(f"       spread {spread:.4f}%  CV servers {cv_pct(per):.4f}%  CV windows {block['cv_pct']:.4f}%")
        code = block.get("code_per_server")
        if code:
            code_spread = 100 * (max(code) - min(code)) / statistics.fmean(code)
            print(f"  code per server {code}  (without libc's alignment-sensitive string routines)")
            print(f"       spread {code_spread:.4f}%  CV servers {block['code_cv_servers_pct']:.4f}%  "
                  f"CV windows {block['code_cv_pct']:.4f}%")
    print(f"  seconds per server: {[m.duration_s for m in measurements]}")


if __name__ == "__main__":
    main()
