"""The profile diff of issue 13 on real source builds: the good commit and the culprit of
``slowdown_repo`` (extra work in ``call()`` for every command) are built from source with symbols,
profiled with perf during ``vkbench run --profile``, and ``profile_diff`` must put the slowed
function among its top three rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from vkbench.profile import profile_diff
from vkbench.results.io import load_result

pytestmark = pytest.mark.sourcebuild

#: Long enough for a few hundred perf samples of the profiled repetition (sampled at 499 Hz).
CELL = {"requests": 200000, "keyspace": 5000, "pipeline": 16, "clients": 50, "tests": ["set", "get"],
        "repetitions": 1, "warmup": 1000}


def profiled_result(slowdown_repo, commit: str, out) -> dict:
    env = {**os.environ, "VKBENCH_VALKEY_GIT_URL": slowdown_repo.url}
    cell = {**CELL, "server": f"valkey:{commit}"}
    proc = subprocess.run([sys.executable, "-m", "vkbench", "run", "--cell", json.dumps(cell), "--out", str(out),
                           "--profile"], env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (path,) = out.glob("*.json")
    result = load_result(path)
    assert result["subject"]["code"]["commit"] == commit
    assert result["profile"]["status"] == "recorded", result["profile"]
    assert result["profile"]["symbols"]["symtab"] is True, "a source build keeps its symbols"
    return path


def test_profile_diff_names_the_slowed_function(slowdown_repo, tmp_path):
    good = profiled_result(slowdown_repo, slowdown_repo.good, tmp_path / "good")
    bad = profiled_result(slowdown_repo, slowdown_repo.culprit, tmp_path / "bad")
    rows = profile_diff(good, bad)
    top = [row.function for row in rows[:3]]
    assert slowdown_repo.function in top, [(r.function, r.self_delta) for r in rows[:8]]
    slowed = next(r for r in rows if r.function == slowdown_repo.function)
    assert slowed.self_delta > 0, "the slowed function's own share of the samples grew"
    # The CLI gives the same table for the incident's issue.
    proc = subprocess.run([sys.executable, "-m", "vkbench", "profile", "diff", str(good), str(bad), "--format", "markdown"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"`{slowdown_repo.function}`" in proc.stdout
