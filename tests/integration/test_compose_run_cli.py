"""`vkbench run --backend compose` end to end through the CLI: one stack per topology kind on the
real engine (podman's Docker-compatible socket here), real results, nothing left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from vkbench.results.io import load_result

from test_compose_backend import LOCAL_VERSION, containers_env

pytestmark = pytest.mark.compose

CELL = {"server": f"valkey:{LOCAL_VERSION}", "requests": 50000, "keyspace": 5000, "pipeline": 16, "repetitions": 2}


def test_every_topology_through_the_compose_backend(tmp_path):
    env = {**os.environ, **containers_env()}
    cells = [dict(CELL), {**CELL, "topology": "cluster:3"}, {**CELL, "topology": "replication:1"}]
    args = [arg for c in cells for arg in ("--cell", json.dumps(c))]
    proc = subprocess.run([sys.executable, "-m", "vkbench", "run", "--backend", "compose", *args,
                           "--out", str(tmp_path), "--run-id", "compose-cli", "--json"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [c["error"] for c in report["cells"]] == [None, None, None]
    results = {r["dimensions"]["topology"]: r for r in map(load_result, tmp_path.glob("*.json"))}
    assert set(results) == {"standalone", "cluster:3", "replication:1"}
    for result in results.values():
        assert result["run"]["backend"] == "compose"
        assert result["subject"]["server_version"] == LOCAL_VERSION
        assert result["subject"]["build"]["id"]                      # the image identity
        assert result["environment"]["container_runtime"]            # docker/podman version
        assert result["summary"]["GET"]["rps"]["median"] > 0
        assert all(rep["cpu"]["server_cores"] is not None for rep in result["repetitions"])
        # The server's own account of each window, summed over primaries (runner/server_stats.py).
        primaries = 3 if result["dimensions"]["topology"] == "cluster:3" else 1
        for rep in result["repetitions"]:
            assert rep["server"]["primaries"] == primaries, rep["server"]
            assert rep["server"]["commands"]["GET"]["calls"] >= CELL["requests"]
    left = subprocess.run(["docker", "ps", "-a", "--filter", "label=vkbench.run", "--format", "{{.Names}}"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert left.returncode == 0 and left.stdout.strip() == "", left.stdout
