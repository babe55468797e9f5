#!/usr/bin/env python3
"""Detection per nightly publish on a long history: what windowed detection (issue 23) saves.

Writes ``--runs`` nights of ``--cells`` x SET/GET series with tools/bench_history_scale.py's bulk
writer (one series in ten has a -8 % step at 70 %), detects once, then for each of ``--nights``
nights ingests one nightly run (every series gets a point) and times ``run_detection`` as
publish calls it, each in a fresh process (nothing parsed or checked before, as in a publish):
wall and CPU seconds (user + system of the process and its worker processes: the figure to
compare on a shared machine). With ``--compare`` the same night is also detected in full on a
copy, and the two detect.json are compared (all but ``generated``).

Usage:
    .venv/bin/python tools/bench_detect_nightly.py --cells 8 --runs 3650 --nights 3 --compare
    .venv/bin/python tools/bench_detect_nightly.py --cells 66 --runs 3650 --nights 3 --bench /other/tree/bench
(``--bench``: time the vkbench package of another tree, e.g. the main branch's, on the same history)

Keep it out of the test suite: it is a measurement (minutes at ten years).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tools"))

import bench_history_scale  # noqa: E402
from vkbench.history.ingest import ingest  # noqa: E402
from vkbench.history.store import HistoryStore  # noqa: E402
from vkbench.results.io import validate_result  # noqa: E402


def detect(history: Path, bench: Path, jobs: int, full: bool) -> tuple[float, float, dict]:
    code = f"from vkbench.detect.runner import run_detection; run_detection({str(history)!r}, full={full}, jobs={jobs})"
    env = dict(os.environ, PYTHONPATH=str(bench))
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    wall, after = time.monotonic() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, json.loads((history / "detect.json").read_text())


def comparable(doc: dict) -> dict:
    return json.loads(json.dumps({k: v for k, v in doc.items() if k != "generated"}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=8, help="cells (x SET/GET = series)")
    parser.add_argument("--runs", type=int, default=3650, help="nights of past")
    parser.add_argument("--nights", type=int, default=3, help="nightly publishes to time")
    parser.add_argument("--jobs", type=int, default=2, help="run_detection's jobs (publish: the cores)")
    parser.add_argument("--compare", action="store_true", help="also detect each night in full and compare")
    parser.add_argument("--bench", type=Path, default=ROOT / "bench", help="the vkbench package to time (its parent directory)")
    parser.add_argument("--dir", type=Path, default=None, help="work here (default: a temporary directory, removed)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="vkbench-nightly-")) if args.dir is None else args.dir
    work.mkdir(parents=True, exist_ok=True)
    # the last timed night is yesterday: results may not be from the future
    today = datetime.now(timezone.utc).replace(hour=2, minute=0, second=0, microsecond=0)
    bench_history_scale.START = today - timedelta(days=args.runs + args.nights)
    history = work / "history"
    try:
        started = time.monotonic()
        bench_history_scale.bulk_history(HistoryStore(history), args.cells, args.runs, seed=1)
        print(f"# {args.cells * 2} series x {args.runs} nights written in {time.monotonic() - started:.0f} s; "
              f"timing {args.bench}", flush=True)
        wall, cpu, _ = detect(history, args.bench, args.jobs, full=True)
        print(f"first detection (full): wall {wall:.1f} s, cpu {cpu:.1f} s", flush=True)
        rng = np.random.default_rng(7)
        for k in range(args.nights):
            night = args.runs + k
            results = work / f"night-{night}"
            results.mkdir()
            for cell in range(args.cells):
                result = validate_result(bench_history_scale.make_result(cell, night, rng))
                (results / f"cell-{cell:04d}.json").write_text(json.dumps(result))
            ingest(HistoryStore(history), [results])
            if args.compare:
                shutil.copytree(history, work / "full")
            wall, cpu, doc = detect(history, args.bench, args.jobs, full=False)
            line = (f"night {night + 1}: detect wall {wall:.2f} s, cpu {cpu:.2f} s "
                    f"({doc['points']} points, {len(doc['change_points'])} change points)")
            if args.compare:
                full_wall, full_cpu, full = detect(work / "full", args.bench, args.jobs, full=True)
                line += f"; --full wall {full_wall:.2f} s, cpu {full_cpu:.2f} s; equal: {comparable(doc) == comparable(full)}"
                shutil.rmtree(work / "full")
            print(line, flush=True)
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
