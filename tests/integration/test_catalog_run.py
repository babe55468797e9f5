"""Catalog specs and a Valkey perf config run on real servers (native backend, loopback).

Asserts structure only (exit code, schema, dimensions, what the server counted), never speed or
validity: a loaded machine makes one-second runs short and noisy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vkbench.results.io import load_result

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[1] / "catalog-fixtures"


def vkbench(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vkbench", *args], capture_output=True, text=True, timeout=timeout)


def results(out: Path) -> list[dict]:
    return [load_result(p) for p in sorted(out.glob("*.json"))]     # load_result validates the schema


def server_commands(result: dict) -> set[str]:
    return {name.upper() for rep in result["repetitions"] for name in ((rep.get("server") or {}).get("commands") or {})}


def test_spec_folder_runs_its_specs_and_refuses_the_data_set(tmp_path):
    proc = vkbench("run", str(FIXTURES / "specs"), "--duration", "1", "--repetitions", "1", "--out", str(tmp_path),
                   "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "refused memtier_benchmark-fixture-s3-dataset" in proc.stderr
    report = json.loads(proc.stdout)
    assert [r["name"] for r in report["refused"]] == ["memtier_benchmark-fixture-s3-dataset"]
    by_name: dict[str, list[dict]] = {}
    for result in results(tmp_path):
        by_name.setdefault(result["dimensions"]["catalog"]["name"], []).append(result)
    assert sorted(by_name) == ["memtier_benchmark-fixture-hash-hget", "memtier_benchmark-fixture-list-init-lrange"]
    hashes = by_name["memtier_benchmark-fixture-hash-hget"]
    assert sorted(r["dimensions"]["io_threads"] for r in hashes) == [1, 2]
    for result in hashes:
        assert result["dimensions"]["catalog"]["groups"] == ["hash"]
        assert result["dimensions"]["duration"] == 1 and result["catalog"]["spec_duration"] == 180
        assert result["catalog"]["prepared"]["keys"] > 0 and result["catalog"]["prepared"]["expected_keys"] == 200
        assert "HGET" in result["summary"] and "HGET" in server_commands(result)
    [lists] = by_name["memtier_benchmark-fixture-list-init-lrange"]
    assert lists["catalog"]["prepared"]["init_commands"] == 2
    assert "LRANGE" in lists["summary"] and "LRANGE" in server_commands(lists)


def test_valkey_perf_config_with_several_commands_runs(tmp_path):
    proc = vkbench("run", f"perf:{FIXTURES / 'perf-several-commands.json'}", "--repetitions", "1",
                   "--out", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    [result] = results(tmp_path)
    assert result["dimensions"]["catalog"]["name"] == "perf-several-commands.json#0"
    assert result["tool"]["name"] == "valkey-benchmark"
    assert {"SET", "GET", "LPUSH", "HSET"} <= set(result["summary"])
    assert {"SET", "GET", "LPUSH", "HSET"} <= server_commands(result)
    assert [r["reason"] for r in json.loads(proc.stdout)["refused"]] == ["duration without --requests"]
