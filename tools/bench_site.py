#!/usr/bin/env python3
"""Measure the trend site at scale (a benchmark script, not a test).

1. Write a history of 1,000 series x 1,000 runs in the documented format (docs/history-format.md),
   directly and quickly (numpy for the numbers, string templates for the lines, 2 processes).
2. Build the site from it (`vkbench.site.build.build_site`) and time the build. Then add one
   nightly (a new point in every series: every machine class ran its cells and one publish
   ingests them all) and time the incremental build the publish job now does against the full
   rebuild it did before (both from the same history, outputs compared file by file).
3. In headless Debian chromium (Playwright, executable_path=/usr/bin/chromium), with an empty
   cache: bytes loaded for the first view (the overview) and for the default explorer view,
   and the time until the first chart is interactive (window.__vkbench.firstChart, measured
   from navigation start). Goals: <= 2 MB and <= 1.5 s.
4. The same data in github-action-benchmark's data.js format (one entry per run with all its
   benches), sized by streaming it through a byte counter and gzip (never held in memory).

    .venv/bin/python tools/bench_site.py [--series 1000] [--runs 1000] [--work DIR] [--keep] [--site-only]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
START = datetime(2024, 1, 1, 2, 0, tzinfo=timezone.utc)
CLASSES = {"pi-cm4": "aarch64", "cloud-x86": "x86_64", "cloud-arm64": "aarch64", "local": "x86_64"}
VERSIONS = ("7.2.7", "8.0.1", "8.1.1", "9.1.2", "unstable")
IO_THREADS = (1, 2, 4, 6, 8)
COMMANDS = ("SET", "GET")
PIPELINES = (1, 4, 16, 32, 64)
LATENCY = {"avg": 1.05, "min": 0.3, "p50": 1.0, "p95": 1.6, "p99": 2.2, "max": 9.0}
RUN_URL = "https://github.com/valkey-io/vkbench/actions/runs/"
FLAG = '"client-bound"'


# --- 1. history -------------------------------------------------------------------------------
def all_dims(n: int) -> list[dict]:
    out = []
    for cls in CLASSES:
        for version in VERSIONS:
            for io in IO_THREADS:
                for command in COMMANDS:
                    for pipeline in PIPELINES:
                        out.append({
                            "engine": "valkey", "version": version, "io_threads": io, "topology": "standalone",
                            "tool": "valkey-benchmark", "tests": ["set", "get"], "pipeline": pipeline, "clients": 50,
                            "client_threads": None, "data_size": 3, "keyspace": 100000, "requests": 100000,
                            "duration": None, "warmup": 0, "preload": True, "cpu": None, "read_from": "primary",
                            "extra_server_args": [], "command": command, "machine_class": cls,
                        })
    return out[:n]


def sid_of(dims: dict) -> str:
    return hashlib.sha256(json.dumps(dims, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def regression_at(k: int, runs: int) -> int:
    return runs - 1 - (k * 37) % max(runs // 4, 1)


def write_series(args) -> tuple[str, dict]:
    """All lines of one series, by month; returns its index entry."""
    root, k, dims, runs = args
    sid = sid_of(dims)
    rng = np.random.default_rng(k)
    cls = dims["machine_class"]
    base = (180_000 if cls == "pi-cm4" else 420_000) * (1 + 0.15 * IO_THREADS.index(dims["io_threads"])) * (1 + 0.02 * PIPELINES.index(dims["pipeline"]))
    level = np.full(runs, base)
    reg = regression_at(k, runs) if k % 97 == 0 else None  # a few series regress
    if reg is not None:
        level[reg:] *= 0.92
    rps = level * (1 + rng.normal(0, 0.01, runs))
    lo, hi = rps * (1 - np.abs(rng.normal(0, 0.01, runs))), rps * (1 + np.abs(rng.normal(0, 0.01, runs)))
    p50 = 50 * dims["pipeline"] / rps * 1000
    invalid = rng.random(runs) < 0.01
    cls_i = list(CLASSES).index(cls)
    unstable = dims["version"] == "unstable"
    by_month: dict[str, list[str]] = {}
    for i in range(runs):
        ts = (START + timedelta(days=i, minutes=cls_i * 90, seconds=k % 250 * 7)).strftime("%Y-%m-%dT%H:%M:%SZ")
        commit = hashlib.sha1(f"unstable{i}".encode()).hexdigest() if unstable else hashlib.sha1(dims["version"].encode()).hexdigest()
        lat = ",".join(
            f'"{m}":{{"median":{p50[i] * f:.4f},"ci_low":{p50[i] * f * 0.98:.4f},"ci_high":{p50[i] * f * 1.02:.4f},"cv":0.02,"n":3}}'
            for m, f in LATENCY.items())
        line = (
            f'{{"run_id":"run-{i:05d}-{cls}","cell_id":"cell-{sid[:8]}","timestamp":"{ts}","version":"{dims["version"]}",'
            f'"server_version":"{"9.2.0" if unstable else dims["version"]}","commit":"{commit}","build_id":null,'
            f'"fingerprint_id":"fp-{cls}{"-b" if i >= runs // 2 else ""}","valid":{"false" if invalid[i] else "true"},'
            f'"flags":[{FLAG if invalid[i] else ""}],"workflow_run_url":"{RUN_URL}{10_000_000 + i * 4 + cls_i}",'
            f'"metrics":{{"rps":{{"median":{rps[i]:.2f},"ci_low":{lo[i]:.2f},"ci_high":{hi[i]:.2f},"cv":0.01,"n":3,'
            f'"samples":[{lo[i]:.2f},{rps[i]:.2f},{hi[i]:.2f}]}},{lat}}}}}'
        )
        by_month.setdefault(ts[:7], []).append(line)
    shard_dir = Path(root) / "series" / sid[:2] / sid
    shard_dir.mkdir(parents=True, exist_ok=True)
    for month, lines in by_month.items():
        (shard_dir / f"{month}.jsonl").write_text("\n".join(lines) + "\n")
    first = START + timedelta(days=0)
    return sid, {
        "dims": dims, "arch": CLASSES[cls], "shards": sorted(by_month), "points": runs,
        "first": first.strftime("%Y-%m-%dT%H:%M:%SZ"), "last": ts,
        "last_point": {"rps": round(float(rps[-1]), 2), "p50": round(float(p50[-1]), 4), "valid": not bool(invalid[-1]), "run_id": f"run-{runs - 1:05d}-{cls}"},
        "_regression": reg,
    }


def write_history(root: Path, n_series: int, runs: int) -> dict:
    root.mkdir(parents=True, exist_ok=True)
    (root / "format.json").write_text('{"history_version": 1}\n')
    (root / "fingerprints").mkdir(exist_ok=True)
    for cls, arch in CLASSES.items():
        for suffix, kernel in (("", "6.1.0"), ("-b", "6.6.51")):
            env = {"fingerprint_id": f"fp-{cls}{suffix}", "arch": arch, "cpu_model": "Cortex-A72" if cls == "pi-cm4" else "Neoverse-V1" if arch == "aarch64" else "AMD EPYC 7R13", "cores": 4, "kernel": kernel, "os": "Debian 12"}
            (root / "fingerprints" / f"fp-{cls}{suffix}.json").write_text(json.dumps(env))
    dims = all_dims(n_series)
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        entries = dict(pool.map(write_series, [(str(root), k, d, runs) for k, d in enumerate(dims)], chunksize=8))
    change_points, incidents = [], []
    for sid, e in entries.items():
        reg = e.pop("_regression")
        if reg is None:
            continue
        cls = e["dims"]["machine_class"]
        ref = lambda i: {"run_id": f"run-{i:05d}-{cls}", "version": e["dims"]["version"], "commit": hashlib.sha1(f"unstable{i}".encode()).hexdigest(), "timestamp": (START + timedelta(days=i)).strftime("%Y-%m-%dT%H:%M:%SZ")}  # noqa: E731
        inc = f"inc-{sid[:8]}"
        change_points.append({"series_id": sid, "metric": "rps", "index": reg, "run_id": ref(reg)["run_id"], "timestamp": ref(reg)["timestamp"],
                              "direction": "regression", "magnitude": -0.08, "p_value": 0.001, "good": ref(reg - 1), "bad": ref(reg), "incident_id": inc})
        d = e["dims"]
        incidents.append({"id": inc, "title": f"{d['command']}, pipeline {d['pipeline']}, io-threads {d['io_threads']}, {cls}: -8%",
                          "status": "open", "direction": "regression", "metric": "rps", "magnitude": -0.08, "series_ids": [sid],
                          "machine_class": cls, "good": ref(reg - 1), "bad": ref(reg), "annotation": None})
    detect = {"generated": (START + timedelta(days=runs)).strftime("%Y-%m-%dT%H:%M:%SZ"), "parameters": {}, "change_points": change_points,
              "incidents": incidents, "segments": {}, "noise": {sid: {"rps": {"cv": 0.01}} for sid in entries}}
    (root / "detect.json").write_text(json.dumps(detect))
    (root / "index.json").write_text(json.dumps({"history_version": 1, "updated": (START + timedelta(days=runs - 1, hours=8)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                                                 "runs": runs * len(CLASSES), "series": entries}))
    return entries


def append_nightly(root: Path, entries: dict, runs: int) -> int:
    """Run number ``runs`` of every series, appended the way ingest appends (bytes at the end of
    the month's shard; index entry and detect.json's timestamp updated). Returns points added."""
    index = json.loads((root / "index.json").read_text())
    added = 0
    for k, (sid, entry) in enumerate(sorted(index["series"].items())):
        month = entry["shards"][-1]
        shard = root / "series" / sid[:2] / sid / f"{month}.jsonl"
        last = json.loads(shard.read_text().splitlines()[-1])
        cls = entry["dims"]["machine_class"]
        day = entry["points"]  # the next run of this series
        ts = (START + timedelta(days=day, minutes=list(CLASSES).index(cls) * 90, seconds=k % 250 * 7)).strftime("%Y-%m-%dT%H:%M:%SZ")
        last.update(run_id=f"run-{day:05d}-{cls}", timestamp=ts, workflow_run_url=f"{RUN_URL}{10_000_000 + day * 4}")
        last["metrics"]["rps"]["median"] *= 1.001
        with (root / "series" / sid[:2] / sid / f"{ts[:7]}.jsonl").open("a") as fh:
            fh.write(json.dumps(last, separators=(",", ":")) + "\n")
        entry["shards"] = sorted(set(entry["shards"]) | {ts[:7]})
        entry["points"] += 1
        entry["last"] = ts
        added += 1
    index["runs"] += len(CLASSES)
    (root / "index.json").write_text(json.dumps(index))
    detect = json.loads((root / "detect.json").read_text())
    detect["generated"] = (START + timedelta(days=runs + 1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    (root / "detect.json").write_text(json.dumps(detect))
    return added


def same_site(a: Path, b: Path) -> bool:
    """Every file equal (index.json without its build time)."""
    def files(root: Path) -> dict:
        out = {}
        for p in root.rglob("*"):
            if p.is_file():
                data = p.read_bytes()
                if p.name == "index.json":
                    index = json.loads(data)
                    index.pop("built", None)
                    data = json.dumps(index).encode()
                out[p.relative_to(root)] = hashlib.sha256(data).digest()
        return out
    return files(a) == files(b)


# --- 3. browser -------------------------------------------------------------------------------
def measure_view(browser, url: str, route: str, repeats: int) -> dict:
    """Fresh context each time (empty cache): bytes over the wire and time to the first chart."""
    results = []
    for _ in range(repeats):
        ctx = browser.new_context(viewport={"width": 1280, "height": 900})
        page = ctx.new_page()
        requests, problems = [], []
        page.on("requestfinished", lambda r: requests.append(r))
        page.on("requestfailed", lambda r: problems.append(r.url))
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(url + route)
        page.wait_for_function("window.__vkbench && window.__vkbench.firstChart != null", timeout=60_000)
        page.wait_for_load_state("networkidle")
        first_chart_ms = page.evaluate("window.__vkbench.firstChart")
        files = []
        for r in requests:
            sizes = r.sizes()
            files.append((r.url.replace(url, "/").split("?")[0], sizes["responseBodySize"] + sizes["responseHeadersSize"], sizes["responseBodySize"]))
        ctx.close()
        if problems:
            raise SystemExit(f"{route}: {problems}")
        results.append({"ms": first_chart_ms, "bytes": sum(f[1] for f in files), "body": sum(f[2] for f in files), "files": files})
    best = results[len(results) // 2]
    return {"route": route, "first_chart_ms": statistics.median(r["ms"] for r in results),
            "all_ms": [round(r["ms"]) for r in results], "bytes": best["bytes"], "files": best["files"]}


def gzip_size(paths: list[Path]) -> int:
    return sum(len(gzip.compress(p.read_bytes(), 6)) for p in paths)


# --- 4. github-action-benchmark data.js -------------------------------------------------------
class Counter:
    """A write() sink that counts bytes and their gzip size without keeping them."""

    def __init__(self):
        self.n = 0
        self.z = zlib.compressobj(6, zlib.DEFLATED, 31)
        self.zn = 0

    def write(self, s: str):
        b = s.encode()
        self.n += len(b)
        self.zn += len(self.z.compress(b))

    def close(self):
        self.zn += len(self.z.flush())


def data_js_sizes(history: Path, entries: dict, runs: int, metrics: tuple[str, ...]) -> tuple[int, int]:
    """window.BENCHMARK_DATA with one entry per run holding every bench of that run, written
    the way the action writes it (JSON.stringify(data, null, 2))."""
    names = {sid: f"{d['dims']['command']} valkey:{d['dims']['version']} io{d['dims']['io_threads']} P{d['dims']['pipeline']} [{d['dims']['machine_class']}]" for sid, d in entries.items()}
    # Read the history once, column by column, to have each run's benches together.
    per_run: list[list[str]] = [[] for _ in range(runs)]
    meta: list[dict | None] = [None] * runs
    for sid, e in entries.items():
        i = 0
        for month in e["shards"]:
            with open(history / "series" / sid[:2] / sid / f"{month}.jsonl") as fh:
                for line in fh:
                    p = json.loads(line)
                    if i == len(per_run):  # the history holds more runs than ``runs`` (a nightly appended)
                        per_run.append([])
                        meta.append(None)
                    if meta[i] is None:
                        meta[i] = {"id": p["commit"], "url": p["workflow_run_url"], "timestamp": p["timestamp"]}
                    for m in metrics:
                        s = p["metrics"][m]
                        unit = "ops/s" if m == "rps" else "ms"
                        per_run[i].append(json.dumps({"name": f"{names[sid]} {m}", "value": s["median"], "unit": unit,
                                                      "range": f"± {round((s['ci_high'] - s['ci_low']) / 2, 4)}"}, indent=2).replace("\n", "\n          "))
                    i += 1
    runs = len(per_run)
    out = Counter()
    out.write('window.BENCHMARK_DATA = {\n  "lastUpdate": 1700000000000,\n  "repoUrl": "https://github.com/valkey-io/vkbench",\n  "entries": {\n    "Benchmark": [\n')
    for i in range(runs):
        m = meta[i]
        head = json.dumps({"commit": {"author": {"name": "valkey", "username": "valkey"}, "committer": {"name": "valkey", "username": "valkey"},
                                      "distinct": True, "id": m["id"], "message": "nightly", "timestamp": m["timestamp"], "tree_id": m["id"], "url": m["url"]},
                           "date": 1700000000000 + i, "tool": "customBiggerIsBetter"}, indent=2)
        head = head[:-2].replace("\n", "\n      ")
        out.write(f"      {head},\n        \"benches\": [\n          " + ",\n          ".join(per_run[i]) + "\n        ]\n      }" + (",\n" if i < runs - 1 else "\n"))
        per_run[i] = []
    out.write("    ]\n  }\n}\n")
    out.close()
    return out.n, out.zn


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--work", type=Path, default=None, help="work directory (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    ap.add_argument("--reuse-history", action="store_true", help="keep the history already in --work (no rewrite)")
    ap.add_argument("--site-only", action="store_true", help="only the builds (full, then one nightly: incremental vs full)")
    args = ap.parse_args()
    if not args.site_only and not Path(CHROMIUM).exists():
        print(f"error: {CHROMIUM} missing\n  hint: run tools/setup/browser.sh", file=sys.stderr)
        return 1
    sys.path.insert(0, str(REPO / "bench"))
    from playwright.sync_api import sync_playwright

    from vkbench.site.build import build_site, site_inputs
    from vkbench.site.serve import serve_in_thread

    work = args.work or Path(tempfile.mkdtemp(prefix="vkbench-site-bench-"))
    history, site = work / "history", work / "site"
    if not args.reuse_history:
        shutil.rmtree(history, ignore_errors=True)
    fig: dict = {"series": args.series, "runs": args.runs}
    try:
        t0 = time.perf_counter()
        if args.reuse_history and (history / "index.json").is_file():
            entries = json.loads((history / "index.json").read_text())["series"]
        else:
            entries = write_history(history, args.series, args.runs)
        fig["history_write_s"] = round(time.perf_counter() - t0, 1)
        fig["history_bytes"] = sum(p.stat().st_size for p in (history / "series").rglob("*.jsonl"))
        print(f"history: {args.series} series x {args.runs} runs, {fig['history_bytes'] / 1e6:.0f} MB of series lines, written in {fig['history_write_s']} s")

        t0, c0 = time.perf_counter(), time.process_time()
        report = build_site(history, site, reference_dir=REPO / "results" / "reference", full=True)
        fig["build_s"], fig["build_cpu_s"] = round(time.perf_counter() - t0, 1), round(time.process_time() - c0, 1)
        data = site / "data"
        fig["site_data_bytes"] = sum(p.stat().st_size for p in data.rglob("*.json"))
        fig["index_bytes"] = (data / "index.json").stat().st_size
        fig["largest_series_bytes"] = report.largest_series_bytes
        print(f"build: {fig['build_s']} s ({fig['build_cpu_s']} s CPU); data {fig['site_data_bytes'] / 1e6:.1f} MB in all; index.json {fig['index_bytes'] / 1e3:.0f} kB; "
              f"largest series (head + every chunk) {report.largest_series_bytes / 1e3:.0f} kB")

        nightly, sparse = work / "site-nightly", work / "site-sparse"
        shutil.rmtree(nightly, ignore_errors=True)
        shutil.rmtree(sparse, ignore_errors=True)
        shutil.copytree(site, nightly)
        # What publish's sparse checkout of the site branch holds: only what the next build reads.
        inputs = site_inputs(site)
        for rel in inputs:
            (sparse / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(site / rel, sparse / rel)
        fig["sparse_input_files"] = len(inputs)
        fig["sparse_input_bytes"] = sum((site / rel).stat().st_size for rel in inputs)
        fig["nightly_points"] = append_nightly(history, entries, args.runs)
        t0, c0 = time.perf_counter(), time.process_time()
        inc = build_site(history, nightly, reference_dir=REPO / "results" / "reference")
        fig["nightly_incremental_build_s"], fig["nightly_incremental_cpu_s"] = round(time.perf_counter() - t0, 1), round(time.process_time() - c0, 1)
        t0, c0 = time.perf_counter(), time.process_time()
        part = build_site(history, sparse, reference_dir=REPO / "results" / "reference", sparse=True)
        fig["nightly_sparse_build_s"], fig["nightly_sparse_cpu_s"] = round(time.perf_counter() - t0, 1), round(time.process_time() - c0, 1)
        fig["nightly_sparse_written"], fig["nightly_sparse_removed"] = len(part.written), len(part.removed)
        fig["nightly_sparse_written_bytes"] = sum((sparse / rel).stat().st_size for rel in part.written)
        shutil.rmtree(sparse, ignore_errors=True)
        print(f"sparse nightly build: {len(inputs)} input files ({fig['sparse_input_bytes'] / 1e6:.1f} MB) on disk; "
              f"{fig['nightly_sparse_build_s']} s ({fig['nightly_sparse_cpu_s']} s CPU); wrote {len(part.written)} files "
              f"({fig['nightly_sparse_written_bytes'] / 1e6:.1f} MB), removed {len(part.removed)}")
        t0, c0 = time.perf_counter(), time.process_time()
        build_site(history, site, reference_dir=REPO / "results" / "reference", full=True)
        fig["nightly_full_build_s"], fig["nightly_full_cpu_s"] = round(time.perf_counter() - t0, 1), round(time.process_time() - c0, 1)
        fig["nightly_incremental_equals_full"] = same_site(nightly, site)
        shutil.rmtree(nightly, ignore_errors=True)
        print(f"one nightly ({fig['nightly_points']} new points, {inc.appended} series extended, {inc.rebuilt} rebuilt): "
              f"incremental build {fig['nightly_incremental_build_s']} s ({fig['nightly_incremental_cpu_s']} s CPU), "
              f"full rebuild {fig['nightly_full_build_s']} s ({fig['nightly_full_cpu_s']} s CPU); "
              f"outputs equal: {fig['nightly_incremental_equals_full']}")
        if args.site_only:
            return 0

        server, url = serve_in_thread(site)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                for key, route in (("overview", "#/overview"), ("explorer", "#/explorer")):
                    r = measure_view(browser, url, route, args.repeats)
                    paths = [site / f.lstrip("/") for f, _, _ in r["files"] if (site / f.lstrip("/")).is_file()]
                    fig[key] = {"bytes": r["bytes"], "gzip_bytes": gzip_size(paths), "requests": len(r["files"]),
                                "first_chart_ms": round(r["first_chart_ms"]), "all_ms": r["all_ms"]}
                    verdict = "OK" if r["bytes"] <= 2_000_000 and r["first_chart_ms"] <= 1500 else "OVER GOAL"
                    print(f"{key}: {r['bytes'] / 1e6:.2f} MB over {len(r['files'])} requests "
                          f"(gzip as GitHub Pages sends it: {fig[key]['gzip_bytes'] / 1e6:.2f} MB); "
                          f"first chart interactive at {fig[key]['first_chart_ms']} ms (runs: {r['all_ms']}) [{verdict}]")
                browser.close()
        finally:
            server.shutdown()
            server.server_close()

        t0 = time.perf_counter()
        for key, metrics in (("data_js_rps", ("rps",)), ("data_js_all_metrics", ("rps",) + tuple(LATENCY))):
            size, zsize = data_js_sizes(history, entries, args.runs, metrics)
            fig[key] = {"bytes": size, "gzip_bytes": zsize}
            print(f"github-action-benchmark data.js ({'+'.join(metrics)}): {size / 1e6:.0f} MB (gzip {zsize / 1e6:.1f} MB), loaded in full by its page")
        fig["data_js_s"] = round(time.perf_counter() - t0, 1)
    finally:
        if args.json:
            args.json.write_text(json.dumps(fig, indent=2) + "\n")
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(fig))
    return 0


if __name__ == "__main__":
    sys.exit(main())
