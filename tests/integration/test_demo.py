"""The README's main job (`vkbench demo`) end to end, on a tiny matrix so it stays quick."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

TINY = """\
name: tiny
defaults: {tests: [set, get], pipeline: 16, requests: 20000, keyspace: 5000, repetitions: 2}
groups:
  - server: [valkey:9.0.0, valkey:9.1.2]
    topology: standalone
"""


def test_demo_runs_ingests_detects_and_builds_the_site_and_accumulates(tmp_path):
    matrix = tmp_path / "tiny.yaml"
    matrix.write_text(TINY)
    base = tmp_path / "demo"
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-m", "vkbench", "demo", "--preset", str(matrix), "--dir", str(base), "--no-size"],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
    assert "Where to look" in proc.stdout and f"{base}/site/index.html" in proc.stdout
    assert "regression detection" in proc.stdout
    index = json.loads((base / "history" / "index.json").read_text())
    assert len(index["series"]) == 4                    # 2 versions x SET/GET
    assert all(s["points"] == 2 for s in index["series"].values())
    assert (base / "history" / "detect.json").exists()
    assert (base / "site" / "index.html").exists()
    assert len(list((base / "results").iterdir())) == 2  # one directory per run
