#!/usr/bin/env python3
"""Measure `vkbench run` against a benchmark tool that prints without end, with default limits.

    .venv/bin/python tools/measure_flood.py                  # warm-up and repetition cases, N=3 each
    .venv/bin/python tools/measure_flood.py --n 1 --server valkey:9.1.2

The fake tool (``exec yes ...`` through VKBENCH_TOOL_VALKEY_BENCHMARK) floods every call: the
--help/--version probes, the warm-up or the first repetition. For each run this prints the exit
code, the wall time, the peak resident memory of the whole process tree (vkbench, its servers,
the tool; summed over the tree, sampled from /proc every 20 ms) and the largest file the run
wrote. Then the largest files the limits allow: a result file and a raw output file as ingest
takes them into the history, and one tool output as the runner writes it.

Issue 18 measured before the limits: a 2.0 GB warmup.txt, 5.9 GB of memory, still running at
180 s with --timeout 20. Not a test: figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vkbench.history.ingest import MAX_RAW_DIR_BYTES, MAX_RAW_FILE_BYTES
from vkbench.results.checks import MAX_NAME_CHARS, MAX_SERIES_PER_RESULT
from vkbench.results.io import MAX_RESULT_BYTES
from vkbench.runner.process import DEFAULT_OUTPUT_LIMIT

FLOOD = "#!/bin/sh\nexec yes 'SET: 123456.78 requests per second, p50=0.111 msec ................................'\n"
MIB = 1024 * 1024


def tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and every descendant (from /proc, one pass)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rfind(")") + 2:].split()
            children.setdefault(int(fields[1]), []).append(int(entry.name))
            rss[int(entry.name)] = int(fields[21]) * page
        except (OSError, IndexError, ValueError):
            continue
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


def one_run(server: str, phase: str, work: Path) -> dict:
    tool = work / "flood-tool"
    tool.write_text(FLOOD)
    tool.chmod(0o755)
    cell = {"server": server, "requests": 1000, "repetitions": 3, "preload": False, "tests": ["set"],
            "warmup": 1000 if phase == "warm-up" else 0}
    env = dict(os.environ, VKBENCH_TOOL_VALKEY_BENCHMARK=str(tool), TMPDIR=str(work / "tmp"))
    (work / "tmp").mkdir()
    began = time.monotonic()
    child = subprocess.Popen([sys.executable, "-m", "vkbench", "run", "--cell", json.dumps(cell), "--out",
                              str(work / "out"), "--state-dir", str(work / "state")],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    peak = 0
    while child.poll() is None:
        peak = max(peak, tree_rss(child.pid))
        if time.monotonic() - began > 900:
            os.killpg(child.pid, 9)
            break
        time.sleep(0.02)
    err = child.communicate()[1]
    wall = time.monotonic() - began
    files = [p for p in (work / "out").rglob("*") if p.is_file()] if (work / "out").exists() else []
    largest = max(files, key=lambda p: p.stat().st_size, default=None)
    left = [p.name for p in (work / "tmp").iterdir()] + [p.name for p in (work / "state").glob("*.json")]
    return {"phase": phase, "exit": child.returncode, "wall_s": wall, "peak_rss": peak,
            "largest": (largest.name, largest.stat().st_size) if largest else None, "left": left,
            "error": next((line for line in err.splitlines() if line.startswith("error:")), "")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=3, help="runs per case")
    parser.add_argument("--server", default="valkey:9.1.2")
    args = parser.parse_args()
    print(f"default limits: --output-limit {DEFAULT_OUTPUT_LIMIT / MIB:g} MiB per tool output, --timeout 600 s per phase")
    for phase in ("warm-up", "repetition"):
        runs = []
        for _ in range(args.n):
            with tempfile.TemporaryDirectory(prefix="vkbench-flood-") as tmp:
                runs.append(one_run(args.server, phase, Path(tmp)))
        for r in runs:
            name, size = r["largest"] or ("-", 0)
            print(f"  flood in the {phase}: exit {r['exit']}, {r['wall_s']:.2f} s, peak RSS of the tree "
                  f"{r['peak_rss'] / MIB:.0f} MiB, largest file {name} {size} bytes, left behind {r['left'] or 'nothing'}")
        print(f"  {phase}: median {statistics.median(r['wall_s'] for r in runs):.2f} s, "
              f"max peak RSS {max(r['peak_rss'] for r in runs) / MIB:.0f} MiB; message: {runs[0]['error'][:160]}")
    print("largest files the limits allow:")
    print(f"  one tool output written by `vkbench run` (warmup.txt, rep-N.txt): {DEFAULT_OUTPUT_LIMIT} bytes "
          f"({DEFAULT_OUTPUT_LIMIT / MIB:g} MiB; --output-limit)")
    print(f"  a result file `vkbench ingest` copies into history/runs/: {MAX_RESULT_BYTES} bytes ({MAX_RESULT_BYTES / MIB:g} MiB)")
    print(f"  a raw output file copied into history/runs/<month>/<run>/<cell>.raw/: {MAX_RAW_FILE_BYTES} bytes "
          f"({MAX_RAW_FILE_BYTES / MIB:g} MiB), {MAX_RAW_DIR_BYTES / MIB:g} MiB per cell")
    print(f"  what one result adds to series: at most {MAX_SERIES_PER_RESULT} series, names of at most {MAX_NAME_CHARS} "
          "characters (one shard line each)")
    print("  GitHub: warns at 50 MB a file, refuses 100 MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
