#!/usr/bin/env python3
"""History at scale: 1,000 series x 1,000 runs, then time one nightly ingest and a full detect.

The synthetic past is written with the store's own low-level functions (bulk path): series
lines straight into month shards (``write_bytes_atomic``), one fingerprint, and ``index.json``
from ``series_entry`` - exactly the files ``ingest`` would write, minus the verbatim result
copies under runs/ (detection never reads them; one empty folder per run keeps the run count
right). The timed ingest then goes through the normal path: validation, idempotency check,
shard rewrite via temp+rename, index.

Usage: .venv/bin/python tools/bench_history_scale.py [--cells 500] [--runs 1000] [--dir /tmp/vkb-scale] [--keep]
(cells x 2 commands = series; the defaults give 1,000 series x 1,000 runs, ~0.5 GB on disk)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from vkbench.detect.runner import run_detection  # noqa: E402
from vkbench.history.series import month_of, series_key  # noqa: E402
from vkbench.files import write_bytes_atomic, write_json  # noqa: E402
from vkbench.history.ingest import ingest  # noqa: E402
from vkbench.history.store import HISTORY_VERSION, HistoryStore, series_entry, shard_digest  # noqa: E402
from vkbench.results.io import validate_result  # noqa: E402
from vkbench.stats import summarize  # noqa: E402

COMMANDS = ("SET", "GET")
START = datetime(2024, 2, 1, 2, 0, tzinfo=timezone.utc)


def cell_dimensions(cell: int) -> dict:
    return {
        "engine": "valkey", "version": "unstable", "io_threads": 1 + cell % 8, "topology": "standalone",
        "tool": "valkey-benchmark", "tests": ["set", "get"], "pipeline": [1, 4, 16, 32, 64][(cell // 8) % 5],
        "clients": [10, 50, 100, 200, 400][(cell // 40) % 5], "client_threads": None, "data_size": [3, 64, 512, 1024][(cell // 200) % 4],
        "keyspace": 100000, "requests": 100000 + cell // 800, "duration": None, "warmup": 0, "preload": True,
        "repetitions": 3, "cpu": None, "read_from": "primary", "extra_server_args": [], "runner": "cloud-x86",
    }


def make_result(cell: int, night: int, rng: np.random.Generator) -> dict:
    ts = (START + timedelta(days=night)).strftime("%Y-%m-%dT%H:%M:%SZ")
    dims = cell_dimensions(cell)
    summary, records = {}, [[] for _ in range(3)]
    for k, command in enumerate(COMMANDS):
        base = 200_000 * (1 + 0.1 * k) * (1 + 0.05 * (cell % 7))
        samples = list(base * (1 + rng.normal(0, 0.03)) * (1 + rng.normal(0, 0.01, 3)))
        p50 = [50 * dims["pipeline"] / s * 1000 for s in samples]
        summary[command] = {"rps": summarize(samples), "p50": summarize(p50), "p99": summarize([x * 2.5 for x in p50])}
        for i in range(3):
            records[i].append({"command": command, "rps": samples[i], "latency_ms": {"p50": p50[i], "p99": p50[i] * 2.5}})
    return {
        "schema_version": 1, "kind": "vkbench.result",
        "run": {"run_id": f"night-{night:05d}", "cell_id": f"cell-{cell:04d}", "timestamp": ts, "trigger": "schedule",
                "vkbench_version": "0.1.0", "machine_class": "cloud-x86", "backend": "native",
                "workflow_run_url": f"https://github.com/o/r/actions/runs/{night}"},
        "subject": {"engine": "valkey", "version": "unstable", "server_version": "9.1.2", "commit": f"{night:08x}" + "c0" * 16,
                    "build": {"source": "source-build", "id": f"sha256:{night:012x}"}},
        "tool": {"name": "valkey-benchmark"},
        "dimensions": dims,
        "repetitions": [{"index": i, "records": records[i]} for i in range(3)],
        "summary": summary,
        "environment": {"fingerprint_id": "fp-scale", "arch": "x86_64", "cpu_model": "Synthetic", "cores": 2},
        "validity": {"valid": True, "flags": []},
    }


def bulk_history(store: HistoryStore, cells: int, runs: int, seed: int) -> None:
    """Write the synthetic past directly: per series, all lines, one shard per month."""
    rng = np.random.default_rng(seed)
    template = make_result(0, 0, rng)
    env = template["environment"]
    write_json(store.fingerprint_path(env["fingerprint_id"]), env, indent=1)
    index = {"history_version": HISTORY_VERSION, "updated": None, "runs": runs, "series": {}}
    stamps = [(START + timedelta(days=n)).strftime("%Y-%m-%dT%H:%M:%SZ") for n in range(runs)]
    for month in sorted({month_of(s) for s in stamps}):
        (store.path / "runs" / month).mkdir(parents=True, exist_ok=True)
    for n, stamp in enumerate(stamps):
        (store.path / "runs" / month_of(stamp) / f"night-{n:05d}").mkdir(exist_ok=True)
    for cell in range(cells):
        template["dimensions"] = cell_dimensions(cell)
        for k, command in enumerate(COMMANDS):
            sid, dims = series_key(template, command)
            base = 200_000 * (1 + 0.1 * k) * (1 + 0.05 * (cell % 7))
            level = base * np.ones(runs)
            if cell % 10 == 0:                       # one series in ten has a -8 % step
                level[int(runs * 0.7):] *= 0.92
            run_level = level * (1 + rng.normal(0, 0.03, runs))
            reps = run_level[:, None] * (1 + rng.normal(0, 0.01, (runs, 3)))
            by_month: dict[str, list[str]] = {}
            points = []
            for n in range(runs):
                s = sorted(float(x) for x in reps[n])
                p50 = [50 * dims["pipeline"] / x * 1000 for x in s]
                point = {
                    "run_id": f"night-{n:05d}", "cell_id": f"cell-{cell:04d}", "timestamp": stamps[n], "version": "unstable",
                    "server_version": "9.1.2", "commit": f"{n:08x}" + "c0" * 16, "build_id": f"sha256:{n:012x}",
                    "fingerprint_id": env["fingerprint_id"], "valid": True, "flags": [],
                    "workflow_run_url": f"https://github.com/o/r/actions/runs/{n}",
                    "metrics": {
                        "rps": {"median": s[1], "ci_low": s[0], "ci_high": s[2], "cv": 0.01, "n": 3, "samples": s},
                        "p50": {"median": p50[1], "ci_low": p50[2], "ci_high": p50[0], "cv": 0.01, "n": 3, "samples": p50[::-1]},
                        "p99": {"median": p50[1] * 2.5, "ci_low": p50[2] * 2.5, "ci_high": p50[0] * 2.5, "cv": 0.01, "n": 3,
                                "samples": [x * 2.5 for x in p50[::-1]]},
                    },
                }
                points.append(point)
                by_month.setdefault(month_of(stamps[n]), []).append(json.dumps(point, separators=(",", ":")))
            digests = {}
            for month, lines in by_month.items():
                data = ("\n".join(lines) + "\n").encode()
                write_bytes_atomic(store.shard_path(sid, month), data)
                digests[month] = shard_digest(data)
            index["series"][sid] = series_entry(dims, "x86_64", points, by_month, digests)
    store.write_index(index)
    store.write_format()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", type=int, default=500)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/vkb-scale"))
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--keep", action="store_true", help="keep (and reuse) the generated history")
    args = ap.parse_args(argv)
    history = args.dir / "history"
    store = HistoryStore(history)
    if not (history / "index.json").exists():
        if args.dir.exists():
            shutil.rmtree(args.dir)
        t = time.perf_counter()
        bulk_history(store, args.cells, args.runs, args.seed)
        os.sync()        # the past is on disk before the clock starts (ingest syncs its own writes)
        size = sum(p.stat().st_size for p in history.rglob("*") if p.is_file())
        print(f"generated {args.cells * len(COMMANDS)} series x {args.runs} runs in {time.perf_counter() - t:.1f} s ({size / 1e6:.0f} MB)")
    else:
        print(f"reusing {history}")

    rng = np.random.default_rng(args.seed + 1)
    new_night = args.runs
    incoming = args.dir / f"incoming-{new_night}"
    if incoming.exists():
        shutil.rmtree(incoming)
    incoming.mkdir(parents=True)
    for cell in range(args.cells):
        result = validate_result(make_result(cell, new_night, rng))
        (incoming / f"cell-{cell:04d}.json").write_text(json.dumps(result))

    one = sorted(incoming.glob("*.json"))[:1]
    t = time.perf_counter()
    report = ingest(store, one)
    t_one = time.perf_counter() - t
    print(f"ingest one result file (1 cell, {report.added} points):           {t_one:6.2f} s")
    t = time.perf_counter()
    report = ingest(store, [incoming])
    t_run = time.perf_counter() - t
    print(f"ingest one nightly run ({args.cells} files, {report.added} new points): {t_run:6.2f} s (goal <= 2 s)")

    t = time.perf_counter()
    doc = run_detection(history, jobs=args.jobs)
    t_detect = time.perf_counter() - t
    print(f"detect over all {doc['series']} series x {doc['points'] // max(doc['series'], 1)} runs x {len(doc['parameters']['metrics'])} metrics: "
          f"{t_detect:6.2f} s (goal <= 60 s); {len(doc['change_points'])} change points, {len(doc['incidents'])} incidents")
    if not args.keep:
        shutil.rmtree(args.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
