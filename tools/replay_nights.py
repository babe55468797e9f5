#!/usr/bin/env python3
"""Replay a range of real Valkey commits as nights of instruction counts, then run detection.

One night per commit (oldest first): build the commit from source (cached per commit, ccache),
measure the cell with `--instrument instructions` (fresh servers under callgrind, seeds 1..N,
memory per key after the preload), stamp the result as night i, ingest it into a history, and
finally run detection over the history and print every step it found: the series, the commits
before and after, the magnitude, and the functions whose self instructions per operation changed
most (the incident's function-level diff, from the kept callgrind dumps).

    .venv/bin/python tools/replay_nights.py --last 8 --out /tmp/replay          # the tip's 8 commits
    .venv/bin/python tools/replay_nights.py --from c419524~4 --to c419524 --out /tmp/replay

The repository is --repo, else $VKBENCH_VALKEY_GIT_URL (upstream by default). Slow: a build per
commit (1-9 min cold, less with ccache) plus the measurement (20-60 s per server here). Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from vkbench.detect import run_detection
from vkbench.history import HistoryStore
from vkbench.history.ingest import ingest
from vkbench.matrix.model import Cell
from vkbench.runner.session import RunOptions, run_session
from vkbench.servers import source_build
from vkbench.servers.gitmirror import Mirror

DEFAULT_CELL = {"server": "valkey:unstable", "requests": 20000, "keyspace": 1000, "pipeline": 1, "clients": 1,
                "tests": ["set", "get"], "repetitions": 3, "instrument": "instructions"}
FIRST_NIGHT = datetime(2026, 1, 1, 2, 0, tzinfo=timezone.utc)


def commits_of(mirror: Mirror, args) -> list[str]:
    if args.last:
        tip = mirror.resolve(args.to or "unstable")
        line = subprocess.run(["git", "rev-list", "--first-parent", f"--max-count={args.last}", tip], cwd=mirror.path,
                              capture_output=True, text=True, check=True, timeout=60).stdout.split()
        return line[::-1]
    if not (args.from_ref and args.to):
        raise SystemExit("give --last N, or --from REF and --to REF")
    start, end = mirror.resolve(args.from_ref), mirror.resolve(args.to)
    return [start, *mirror.first_parent_range(start, end)]


def restamp(result_path: Path, night: int) -> None:
    """Night ``night``'s timestamp (the history orders runs by it), keeping everything else."""
    data = json.loads(result_path.read_text())
    data["run"]["timestamp"] = (FIRST_NIGHT + timedelta(days=night)).isoformat().replace("+00:00", "Z")
    data["run"]["trigger"] = "nightly"
    result_path.write_text(json.dumps(data, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", default=None, help="Valkey repository [default: $VKBENCH_VALKEY_GIT_URL or upstream]")
    ap.add_argument("--last", type=int, default=0, help="the last N first-parent commits up to --to (default unstable)")
    ap.add_argument("--from", dest="from_ref", default=None, help="first commit of the range (inclusive)")
    ap.add_argument("--to", default=None, help="last commit of the range (inclusive)")
    ap.add_argument("--cell", default=json.dumps(DEFAULT_CELL), help="the cell measured every night (JSON)")
    ap.add_argument("--out", type=Path, required=True, help="work directory: nights/, history/, replay.json")
    ap.add_argument("--machine-class", default="replay")
    args = ap.parse_args()
    url = args.repo or source_build.repo_url()
    os.environ["VKBENCH_VALKEY_GIT_URL"] = url
    mirror = Mirror.for_url(url)
    commits = commits_of(mirror, args)
    template = json.loads(args.cell)
    template.setdefault("instrument", "instructions")
    history = args.out / "history"
    costs = []
    print(f"{len(commits)} nights: {commits[0][:10]} .. {commits[-1][:10]} of {url}", flush=True)
    for night, commit in enumerate(commits):
        night_dir = args.out / "nights" / f"{night:03d}-{commit[:10]}"
        if not any(night_dir.glob("*.json")):
            t0 = time.monotonic()
            source_build.fetch(commit, url=url, progress=lambda text: print(f"  {text}", flush=True))
            built = time.monotonic() - t0
            cell = Cell.model_validate({**template, "server": f"valkey:{commit}"})
            report = run_session([cell], RunOptions(out_dir=night_dir, run_id=f"replay-{night:03d}",
                                                    machine_class=args.machine_class, trigger="nightly"))
            report.raise_for_failures()
            measured = time.monotonic() - t0 - built
            for outcome in report.outcomes:
                restamp(outcome.path, night)
            costs.append({"commit": commit, "build_s": round(built, 1), "measure_s": round(measured, 1)})
            result = report.outcomes[0].result
            per_op = {c: b["per_op"] for c, b in result["instructions"]["commands"].items()}
            print(f"night {night}: {commit[:10]} {mirror.subject(commit)[:60]}: build {built:.0f} s, measure "
                  f"{measured:.0f} s, instructions/op {per_op}, bytes/key {(result.get('memory') or {}).get('bytes_per_key')}",
                  flush=True)
        ingest(HistoryStore(history), [night_dir])
    doc = run_detection(history, write=True)
    steps = []
    for cp in doc.get("change_points", []):
        steps.append({k: cp.get(k) for k in ("series_id", "metric", "magnitude", "index", "incident_id")}
                     | {"good": (cp.get("good") or {}).get("commit"), "bad": (cp.get("bad") or {}).get("commit")})
    print(f"\ndetection: {len(doc.get('change_points', []))} change points, {len(doc.get('incidents', []))} incidents")
    for incident in doc.get("incidents", []):
        bad = (incident.get("bad") or {}).get("commit") or ""
        print(f"- {incident.get('title')}")
        print(f"  first bad commit {bad[:10]} {mirror.subject(bad)[:70] if bad else ''}; metrics {incident.get('metrics')}")
        diff = incident.get("instruction_diff")
        if diff:
            top = ", ".join(f"{r['function']} {r['delta']:+.1f}" for r in diff.get("rows", [])[:5])
            print(f"  functions ({diff.get('command')}, {diff.get('source')}): {top}")
    (args.out / "replay.json").write_text(json.dumps({"commits": commits, "costs": costs, "steps": steps,
                                                     "incidents": doc.get("incidents", [])}, indent=1, default=str))
    print(f"\nwritten: {args.out / 'replay.json'}, history {history}")


if __name__ == "__main__":
    sys.exit(main())
