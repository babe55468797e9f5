#!/usr/bin/env python3
"""Simulate N nights of publishing at a given scale and print what the history costs.

Every night goes through the real publish path, as ``tools/ci/publish.sh`` runs it
(``vkbench publish RESULTS --repo-dir BARE --detect --site-out site``, a fresh checkout each
night) into a local bare repository. The results are synthetic but realistic: one result file
per cell (two series each: SET and GET), three repetitions, values with 3% night-to-night
noise, a raw-output folder per cell (tool output and a server log, ``--raw-bytes`` of
incompressible-ish text). Every ``--every`` nights (and after the last) it copies the bare
repository, packs it with ``git gc`` and prints one row:

    night, points, files and bytes in the branch trees (site / everything else), largest file,
    pack size and bytes per point, the last publish's wall time and CPU time (user + system of
    vkbench and its git children: the figure to compare on a loaded machine). At the end, the
    data branch's pack by kind (series shards, result copies, raw outputs, index and detect,
    site, trees and commits) in bytes per point.

Usage:
    .venv/bin/python tools/sim_history.py --series 16 --nights 60
    .venv/bin/python tools/sim_history.py --series 160 --nights 30 --every 10 --json
    .venv/bin/python tools/sim_history.py --series 16 --nights 60 --branch vkbench-data --site-branch gh-pages
    extra publish options go after ``--``:  tools/sim_history.py --series 16 --nights 30 -- --full-fetch

Keep it out of the test suite: it is a measurement (minutes at the larger scales).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from vkbench.results.io import validate_result  # noqa: E402
from vkbench.stats import summarize  # noqa: E402

START = datetime(2026, 1, 1, 2, 0, tzinfo=timezone.utc)
COMMANDS = ("SET", "GET")
PIPELINES = (1, 16, 64)
CLIENTS = (50, 200)


def cell_dimensions(cell: int, machine_class: str) -> dict:
    return {
        "engine": "valkey", "version": "unstable", "io_threads": 1 + cell % 4, "topology": "standalone",
        "tool": "valkey-benchmark", "tests": ["set", "get"], "pipeline": PIPELINES[(cell // 4) % 3],
        "clients": CLIENTS[(cell // 12) % 2], "client_threads": None, "data_size": [3, 512][(cell // 24) % 2],
        "keyspace": 100000, "requests": 100000 + cell // 48, "duration": None, "warmup": 0, "preload": True,
        "repetitions": 3, "cpu": None, "read_from": "primary", "extra_server_args": [], "runner": machine_class,
    }


def make_result(cell: int, night: int, rng: random.Random, machine_class: str = "cloud-x86") -> dict:
    """One cell of one night: a schema-valid result (validated), ~4 kB as JSON."""
    ts = (START + timedelta(days=night)).strftime("%Y-%m-%dT%H:%M:%SZ")
    dims = cell_dimensions(cell, machine_class)
    commit = f"{night:08x}" + "%032x" % rng.getrandbits(128)
    summary, records = {}, [[] for _ in range(3)]
    for k, command in enumerate(COMMANDS):
        base = 200_000 * (1 + 0.1 * k) * (1 + 0.05 * (cell % 7))
        level = base * (1 + rng.gauss(0, 0.03))
        samples = [level * (1 + rng.gauss(0, 0.01)) for _ in range(3)]
        p50 = [dims["clients"] / s * 1000 for s in samples]
        summary[command] = {"rps": summarize(samples), "p50": summarize(p50), "p99": summarize([x * 2.5 for x in p50]),
                            "avg": summarize([x * 1.1 for x in p50])}
        for i in range(3):
            records[i].append({"command": command, "rps": samples[i], "tool": "valkey-benchmark",
                               "latency_ms": {"avg": p50[i] * 1.1, "p50": p50[i], "p99": p50[i] * 2.5}})
    result = {
        "schema_version": 1, "kind": "vkbench.result",
        "run": {"run_id": f"night-{night:05d}", "cell_id": f"valkey-unstable_cell{cell:04d}", "timestamp": ts, "trigger": "schedule",
                "vkbench_version": "0.1.0", "vkbench_commit": None, "machine_class": machine_class, "backend": "native",
                "workflow_run_url": f"https://github.com/o/r/actions/runs/{1000 + night}"},
        "subject": {"engine": "valkey", "version": "unstable", "server_version": "9.1.2", "commit": commit,
                    "build": {"source": "source-build", "id": f"sha256:{commit[:12]}"}},
        "tool": {"name": "valkey-benchmark", "version": "9.1.2"},
        "dimensions": dims,
        "repetitions": [{"index": i, "records": records[i]} for i in range(3)],
        "summary": summary,
        "environment": {"fingerprint_id": "fp-sim", "arch": "x86_64", "cpu_model": "Synthetic CPU", "cores": 2},
        "validity": {"valid": True, "flags": []},
    }
    return validate_result(result, source="sim_history")


def raw_output(rng: random.Random, size: int) -> str:
    """Tool-output-like text: lines of numbers that differ every night (compresses ~3x)."""
    lines, total = [], 0
    while total < size:
        line = f"SET: rps={rng.uniform(1e5, 5e5):.2f} (overall: {rng.uniform(1e5, 5e5):.2f}) avg_msec={rng.uniform(0.1, 2):.3f}\n"
        lines.append(line)
        total += len(line)
    return "".join(lines)[:size]


def write_night(directory: Path, cells: int, night: int, rng: random.Random, raw_bytes: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for cell in range(cells):
        result = make_result(cell, night, rng)
        cell_id = result["run"]["cell_id"]
        (directory / f"{cell_id}.json").write_text(json.dumps(result, indent=1))
        if raw_bytes:
            raw = directory / f"{cell_id}.raw"
            raw.mkdir()
            (raw / "rep-0.out").write_text(raw_output(rng, raw_bytes // 2))
            (raw / "server.log").write_text(raw_output(rng, raw_bytes - raw_bytes // 2))


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def tree_stats(repo: Path, branch: str, site_prefix: str) -> dict:
    """Files and bytes of one branch's tree (site/ apart), and its largest file."""
    if not git("branch", "--list", branch, cwd=repo).strip():
        return {"files": 0, "bytes": 0, "site_bytes": 0, "largest": ["", 0]}
    files = total = site = 0
    largest = ("", 0)
    for line in git("ls-tree", "-r", "-l", branch, cwd=repo).splitlines():
        meta, path = line.split("\t", 1)
        size = int(meta.split()[3])
        files += 1
        total += size
        if path.startswith(site_prefix + "/"):
            site += size
        if size > largest[1]:
            largest = (path, size)
    return {"files": files, "bytes": total, "site_bytes": site, "largest": list(largest)}


def pack_bytes(bare: Path, refs: list[str] | None = None) -> int:
    """Bytes of the repository packed by ``git gc`` (on a copy: the simulation keeps going);
    with ``refs``, only what those refs reach (a clone of them, packed)."""
    with tempfile.TemporaryDirectory(prefix="vkbench-sim-gc-") as tmp:
        copy = Path(tmp) / "copy.git"
        if refs:
            git("init", "-q", "--bare", str(copy))
            git("fetch", "-q", str(bare), *[f"refs/heads/{r}:refs/heads/{r}" for r in refs], cwd=copy)
        else:
            shutil.copytree(bare, copy)
        git("gc", "-q", "--aggressive" if os.environ.get("SIM_AGGRESSIVE") else "--quiet", cwd=copy)
        sizes = dict(line.split(": ", 1) for line in git("count-objects", "-v", cwd=copy).splitlines())
        return (int(sizes["size-pack"]) + int(sizes["size"])) * 1024


def pack_breakdown(bare: Path, branch: str) -> dict[str, int]:
    """Packed bytes (as stored after ``git gc``: deltas and zlib) of everything ``branch`` ever
    held, by kind: series shards, result copies, raw outputs, the rest of history/ (index.json,
    detect.json, ...), the site, and git's trees and commits. Where a data pack's bytes go."""
    with tempfile.TemporaryDirectory(prefix="vkbench-sim-gc-") as tmp:
        copy = Path(tmp) / "copy.git"
        git("init", "-q", "--bare", str(copy))
        git("fetch", "-q", str(bare), f"refs/heads/{branch}:refs/heads/{branch}", cwd=copy)
        git("gc", "-q", cwd=copy)
        listed = [line.split(" ", 1) for line in git("rev-list", "--objects", branch, cwd=copy).splitlines()]
        sizes = subprocess.run(["git", "cat-file", "--batch-check=%(objecttype) %(objectsize:disk)"], cwd=copy, check=True,
                               input="\n".join(o[0] for o in listed) + "\n", capture_output=True, text=True).stdout.splitlines()
        out: dict[str, int] = {}
        for entry, line in zip(listed, sizes):
            kind, size = line.split()
            path = entry[1] if len(entry) > 1 else ""
            if kind != "blob":
                key = "trees+commits"
            elif "/series/" in f"/{path}":
                key = "series"
            elif ".raw/" in path:
                key = "raw"
            elif "/runs/" in f"/{path}":
                key = "result copies"
            elif path.startswith("history/"):
                key = "index+detect+other"
            else:
                key = "site"
            out[key] = out.get(key, 0) + int(size)
        return out


def points_in(bare: Path, branch: str, history_subdir: str) -> int:
    try:
        index = json.loads(git("show", f"{branch}:{history_subdir}/index.json", cwd=bare))
    except subprocess.CalledProcessError:
        return 0
    return sum(entry.get("points", 0) for entry in index["series"].values())


def seed_bulk_history(work: Path, bare: Path, cells: int, nights: int, branch: str, seed: int, later_nights: int = 0):
    """Write ``nights`` nights of ``cells * 2`` series straight into a history, commit it on
    ``branch`` of ``bare``; returns the writer of later nights' results (same series). The past
    ends so that the last of ``later_nights`` is yesterday (results may not be from the future)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import bench_history_scale
    import numpy as np
    from bench_history_scale import bulk_history
    from bench_history_scale import make_result as scale_result

    today = datetime.now(timezone.utc).replace(hour=2, minute=0, second=0, microsecond=0)
    bench_history_scale.START = today - timedelta(days=nights + later_nights)

    from vkbench.history.store import HistoryStore

    checkout = work / "seed"
    started = time.monotonic()
    bulk_history(HistoryStore(checkout / "history"), cells, nights, seed)
    git("init", "-q", "-b", branch, str(checkout))
    git("add", "-A", cwd=checkout)
    git("-c", "user.name=sim", "-c", "user.email=sim@example.invalid", "commit", "-qm", f"{nights} nights of past", cwd=checkout)
    git("push", "-q", str(bare), f"HEAD:refs/heads/{branch}", cwd=checkout)
    shutil.rmtree(checkout)
    print(f"# seeded {cells * 2} series x {nights} nights in {time.monotonic() - started:.0f} s", flush=True)
    rng = np.random.default_rng(seed + 1)

    def write(directory: Path, night: int) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        for cell in range(cells):
            result = validate_result(scale_result(cell, night, rng))
            (directory / f"cell-{cell:04d}.json").write_text(json.dumps(result))
    return write


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1:]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--series", type=int, default=16, help="series per night (two per cell: SET and GET)")
    parser.add_argument("--nights", type=int, default=30)
    parser.add_argument("--every", type=int, default=10, help="print a row every N nights")
    parser.add_argument("--raw-bytes", type=int, default=3000, help="raw output per cell (0: none)")
    parser.add_argument("--branch", default="gh-pages")
    parser.add_argument("--site-branch", default=None, help="publish the site alone on this branch, the history on --branch (publish --site-branch)")
    parser.add_argument("--dir", type=Path, default=None, help="keep the bare repository here (default: a temporary one)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print rows as JSON lines")
    parser.add_argument("--profile", default=None, metavar="FILE",
                        help="run the last night's publish under cProfile and write its stats here (python -m pstats FILE)")
    parser.add_argument("--bulk-nights", type=int, default=0,
                        help="first write this many nights of past directly (tools/bench_history_scale.py's bulk writer: series "
                             "shards and index, no result copies), push them, then publish --nights nights on top: publish time "
                             "after years of history (the first publish also builds the whole site)")
    args = parser.parse_args(argv)
    cells = max(1, args.series // 2)
    global START
    # the last night is yesterday: retention (publish --keep-raw-days ...) counts age from now
    today = datetime.now(timezone.utc).replace(hour=2, minute=0, second=0, microsecond=0)
    START = today - timedelta(days=args.nights)
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="vkbench-sim-")) if args.dir is None else args.dir
    work.mkdir(parents=True, exist_ok=True)
    bare = work / "pages.git"
    if not bare.exists():
        git("init", "-q", "--bare", str(bare))
        # as GitHub does: serve partial clones (publish fetches the tip without old file contents)
        git("-C", str(bare), "config", "uploadpack.allowFilter", "true")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "bench") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    header = f"{'night':>5} {'points':>7} {'files':>7} {'tree MB':>8} {'site MB':>8} {'largest file':>30} {'pack MB':>8} {'B/point':>8} {'pages MB':>8} {'data B/pt':>9} {'publish s':>9} {'cpu s':>6}"
    if not args.json:
        print(f"# {cells * 2} series ({cells} cells), {args.nights} nights, raw {args.raw_bytes} B/cell, publish {' '.join(extra) or '(defaults)'}")
        print(header)
    writer = None
    if args.bulk_nights:
        writer = seed_bulk_history(work, bare, cells, args.bulk_nights, args.branch, args.seed, args.nights)
    try:
        for night in range(args.nights):
            results = work / "night"
            shutil.rmtree(results, ignore_errors=True)
            if writer is None:
                write_night(results, cells, night, rng, args.raw_bytes)
            else:
                writer(results, args.bulk_nights + night)
            started = time.monotonic()
            cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
            profile = ["-m", "cProfile", "-o", args.profile] if args.profile and night + 1 == args.nights else []
            subprocess.run([sys.executable, *profile, "-m", "vkbench", "publish", str(results), "--repo-dir", str(bare),
                            "--branch", args.branch, "--detect", "--site-out", "site", "--no-reference",
                            *(["--site-branch", args.site_branch] if args.site_branch else []), *extra],
                           check=True, env=env, capture_output=True, text=True)
            elapsed = time.monotonic() - started
            cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
            if (night + 1) % args.every and night + 1 != args.nights:
                continue
            branches = [args.site_branch or args.branch] + ([args.branch] if args.site_branch else [])
            stats = [tree_stats(bare, b, "site") for b in branches]
            points = points_in(bare, args.branch, "history")
            pack = pack_bytes(bare)
            row = {
                "night": night + 1, "series": cells * 2, "points": points,
                "files": sum(s["files"] for s in stats), "tree_bytes": sum(s["bytes"] for s in stats),
                "site_bytes": stats[0]["site_bytes"],
                "pages_tree_bytes": stats[0]["bytes"],
                "largest": max((s["largest"] for s in stats), key=lambda x: x[1]),
                "pack_bytes": pack, "pack_bytes_per_point": round(pack / max(points, 1)),
                "publish_seconds": round(elapsed, 2), "publish_cpu_seconds": round(cpu, 2),
            }
            if args.site_branch:
                row["data_pack_bytes"] = pack_bytes(bare, [args.branch])
                row["data_pack_bytes_per_point"] = round(row["data_pack_bytes"] / max(points, 1))
            if args.json:
                print(json.dumps(row), flush=True)
            else:
                largest = f"{row['largest'][0][-22:]} {row['largest'][1] / 1e3:.0f}k"
                print(f"{row['night']:>5} {points:>7} {row['files']:>7} {row['tree_bytes'] / 1e6:>8.2f} {row['site_bytes'] / 1e6:>8.2f} "
                      f"{largest:>30} {pack / 1e6:>8.2f} {row['pack_bytes_per_point']:>8} {row['pages_tree_bytes'] / 1e6:>8.2f} "
                      f"{row.get('data_pack_bytes_per_point', '-'):>9} {elapsed:>9.2f} {cpu:>6.2f}", flush=True)
        points = points_in(bare, args.branch, "history")
        breakdown = pack_breakdown(bare, args.branch)
        shares = ", ".join(f"{k} {v / max(points, 1):.0f} B/pt" for k, v in sorted(breakdown.items(), key=lambda kv: -kv[1]))
        print(json.dumps({"data_pack_by_kind": breakdown, "points": points}) if args.json else f"# {args.branch} pack by kind: {shares}")
    except subprocess.CalledProcessError as err:
        print(f"publish failed on night {night + 1}: {err.stderr or err.stdout}", file=sys.stderr)
        return 1
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
