"""Issue 23: a publish checks out what the night touches - a partial clone (no file contents but
those checked out) with a sparse checkout of the history's small files and the night's months
(history/partial.py) - and lands exactly what a publish of the whole tree lands.

Eleven months of nights are seeded through `vkbench ingest` and pushed to a bare repository that
serves partial clones (`uploadpack.allowFilter`, as GitHub does); the last nights go through the
real publish path, once partial (the default) and once with `--full-fetch` into a copy.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

from cli_outcome import vk

import sim_history

CELLS, SEEDED, KEEP_DAYS = 2, 330, 20


def git(repo: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=check, capture_output=True, text=True, timeout=300).stdout


def _seed(tmp_path: Path, bare: Path, rng: random.Random) -> None:
    seed = tmp_path / "seed"
    nights = []
    for night in range(SEEDED):
        nights.append(tmp_path / f"night-{night}")
        sim_history.write_night(nights[-1], CELLS, night, rng, raw_bytes=500)
    code, out = vk("ingest", *nights, "--history", seed / "history")
    assert code == 0, out[-2000:]
    git(tmp_path, "init", "-q", "-b", "vkbench-data", str(seed))
    git(seed, "add", "-A")
    git(seed, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "seed")
    git(seed, "push", "-q", str(bare), "HEAD:refs/heads/vkbench-data")


def _publish(results: Path, bare: Path, workdir: Path | None, *extra) -> None:
    code, out = vk("publish", results, "--repo-dir", bare, "--branch", "vkbench-data", "--site-branch", "gh-pages",
                   "--site-out", "site", "--detect", "--no-reference", "--keep-raw-days", KEEP_DAYS,
                   *(["--workdir", workdir] if workdir else []), *extra)
    assert code == 0, out[-3000:]


def _history(bare: Path) -> dict[str, str]:
    """Every file of the data branch's history/ (blob ids); index.json and detect.json without
    their timestamps."""
    out = {}
    logs = {}
    for line in git(bare, "ls-tree", "-r", "vkbench-data", "--", "history").splitlines():
        meta, path = line.split("\t", 1)
        out[path] = meta.split()[2]
        if path.endswith("/retention.log"):
            logs[path] = out[path]
    # a retention log's lines say when they were written: compare what they say was removed
    texts = subprocess.run(["git", "cat-file", "--batch"], cwd=bare, input="".join(f"{oid}\n" for oid in logs.values()),
                           check=True, capture_output=True, text=True, timeout=300).stdout
    for path, oid in logs.items():
        header = f"{oid} blob "
        start = texts.index(header)
        size = int(texts[start + len(header):texts.index("\n", start)])
        body = texts[texts.index("\n", start) + 1:][:size]
        out[path] = [{k: v for k, v in json.loads(line).items() if k != "pruned"} for line in body.splitlines()]
    for name, stamp in (("index.json", "updated"), ("detect.json", "generated")):
        doc = json.loads(git(bare, "show", f"vkbench-data:history/{name}"))
        doc.pop(stamp)
        out[f"history/{name}"] = doc
    return out


def _site(bare: Path) -> dict[str, str]:
    return {line.split("\t", 1)[1]: line.split()[2] for line in git(bare, "ls-tree", "-r", "gh-pages").splitlines()}


def test_a_partial_publish_reads_the_nights_months_and_lands_what_a_full_one_does(tmp_path):
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(bare, "config", "uploadpack.allowFilter", "true")
    sim_history.START = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=SEEDED + 2, hours=-12)
    rng = random.Random(3)
    _seed(tmp_path, bare, rng)
    first = tmp_path / "night-first"
    sim_history.write_night(first, CELLS, SEEDED, rng, raw_bytes=500)
    _publish(first, bare, None)          # detects everything once (and prunes the old raw outputs)

    copy = tmp_path / "copy.git"
    shutil.copytree(bare, copy)
    last = tmp_path / "night-last"
    sim_history.write_night(last, CELLS, SEEDED + 1, rng, raw_bytes=500)
    checkout = tmp_path / "checkout"
    _publish(last, bare, checkout)
    _publish(last, copy, None, "--full-fetch")

    # The same history on both data branches: shards, index, ledger, runs, retention, detection.
    partial, full = _history(bare), _history(copy)
    assert partial == full
    assert partial["history/detect.json"]["points"] == 2 * CELLS * (SEEDED + 2)
    # ...and the same site: the same files, the same series data (the rest carries build times).
    pages, full_pages = _site(bare), _site(copy)
    assert pages.keys() == full_pages.keys()
    assert {p: b for p, b in pages.items() if "/series/" in p} == {p: b for p, b in full_pages.items() if "/series/" in p}

    # What the partial publish had on disk: the newest months, not the first ones, which stayed
    # in git without their contents.
    tracked = git(checkout, "ls-files", "-t").splitlines()
    shards = [line[2:] for line in tracked if "/series/" in line]
    first_month = min(p.rsplit("/", 1)[1][:7] for p in shards)
    newest_month = max(p.rsplit("/", 1)[1][:7] for p in shards)
    assert all((checkout / p).is_file() for p in shards if newest_month in p)
    absent = [p for p in shards if first_month in p]
    assert absent and not any((checkout / p).exists() for p in absent)
    missing = [line for line in git(checkout, "rev-list", "--objects", "--missing=print", "HEAD").splitlines() if line.startswith("?")]
    assert missing, "the first months' contents were fetched"
    # retention (raw outputs only: result copies are kept forever) checked out no old result copy
    copies = [line[2:] for line in tracked if "/runs/" in line and line.endswith(".json")]
    old_copies = [p for p in copies if p.split("/")[2] == first_month]
    assert old_copies and not any((checkout / p).exists() for p in old_copies)

    # A reader of the whole history on that checkout (a full detection) gets the old months.
    code, out = vk("detect", "--history", checkout / "history", "--full", "--no-write", "--format", "json")
    assert code == 0, out[-2000:]
    assert json.loads(out)["points"] == 2 * CELLS * (SEEDED + 2)
    assert all((checkout / p).is_file() for p in absent)
