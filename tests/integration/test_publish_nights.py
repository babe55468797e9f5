"""Thirty nights through the real publish path (as tools/ci/publish.sh runs it: the history on an
unpublished data branch, the site alone on the Pages branch, retention of raw outputs and result
copies): what each branch holds, and bounds on the bytes written per point (never time).

The results are tools/sim_history.py's (schema-valid, 3 % night-to-night noise, a raw-output
folder per cell). Night n is (30 - n) days minus 12 hours before the test runs: retention (which
counts from the clock) keeps exactly the last 7 nights.
"""

from __future__ import annotations

import json
import random
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

from cli_outcome import vk

import sim_history

NIGHTS, CELLS, KEEP_DAYS = 30, 4, 7
SERIES = CELLS * 2


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, timeout=300).stdout


def tree(repo: Path, branch: str) -> dict[str, int]:
    out = {}
    for line in git(repo, "ls-tree", "-r", "-l", branch).splitlines():
        meta, path = line.split("\t", 1)
        out[path] = int(meta.split()[3])
    return out


def series_bytes_on_disk(repo: Path) -> int:
    """Packed bytes (deltas as stored) of every object git keeps for history/series/ on the data
    branch, over its whole past, after `git gc`."""
    git(repo, "gc", "-q")
    objects = [line.split(" ", 1)[0] for line in git(repo, "rev-list", "--objects", "vkbench-data", "--", "history/series").splitlines()]
    sizes = subprocess.run(["git", "cat-file", "--batch-check=%(objectsize:disk)"], cwd=repo, input="\n".join(objects) + "\n",
                           check=True, capture_output=True, text=True, timeout=300).stdout.split()
    return sum(int(s) for s in sizes)


def test_thirty_nights_keep_the_site_small_and_the_history_compact(tmp_path):
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    sim_history.START = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=NIGHTS, hours=-12)
    rng = random.Random(7)
    site_bytes = {}
    for night in range(NIGHTS):
        results = tmp_path / f"night-{night}"
        sim_history.write_night(results, CELLS, night, rng, raw_bytes=2000)
        outcome = vk("publish", results, "--repo-dir", bare, "--branch", "vkbench-data", "--site-branch", "gh-pages",
                     "--site-out", "site", "--detect", "--no-reference", "--keep-raw-days", KEEP_DAYS,
                     "--keep-results-days", KEEP_DAYS)
        assert outcome[0] == 0, outcome[1][-2000:]
        if night + 1 in (10, NIGHTS):
            site_bytes[night + 1] = sum(tree(bare, "gh-pages").values())

    pages, data = tree(bare, "gh-pages"), tree(bare, "vkbench-data")
    # The Pages branch holds the site and nothing of the history: no result copy, raw output or shard.
    assert pages and all(p.startswith("site/") for p in pages), sorted(p for p in pages if not p.startswith("site/"))[:5]
    assert not [p for p in pages if ".raw/" in p or "/runs/" in p or p.endswith(".jsonl")]
    # The site grows by what the browser draws: under 600 bytes a point between night 10 and 30.
    grown = site_bytes[NIGHTS] - site_bytes[10]
    assert grown / (SERIES * (NIGHTS - 10)) < 600, (grown, site_bytes)

    # Retention: raw outputs and result copies of the last KEEP_DAYS nights only; every run folder
    # and every point stays.
    index = json.loads(git(bare, "show", "vkbench-data:history/index.json"))
    assert index["runs"] == NIGHTS and sum(e["points"] for e in index["series"].values()) == SERIES * NIGHTS
    copies = {p.split("/")[3] for p in data if p.startswith("history/runs/") and p.endswith(".json") and "/retention.log" not in p}
    raws = {p.split("/")[3] for p in data if ".raw/" in p}
    kept = {f"night-{n:05d}" for n in range(NIGHTS - KEEP_DAYS, NIGHTS)}
    assert copies == kept and raws == kept, (sorted(copies), sorted(raws))
    logged = {p.split("/")[3] for p in data if p.endswith("/retention.log")}
    assert logged == {f"night-{n:05d}" for n in range(NIGHTS - KEEP_DAYS)}

    # Format 3: each shard named after its series; the series storage packs under 1 kB a point
    # over the branch's whole past (every night rewrote every shard of the month).
    shards = [p for p in data if p.startswith("history/series/")]
    assert shards and all(Path(p).name.split(".")[1] == Path(p).parent.name for p in shards)
    per_point = series_bytes_on_disk(bare) / (SERIES * NIGHTS)
    assert per_point < 1000, per_point
    largest = max(data.values())
    assert largest < 1_000_000, largest           # no file anywhere near GitHub's 50 MB warning
