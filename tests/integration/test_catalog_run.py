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


#: One runnable spec per data-type group (issue 20), each with a small preload.
ONE_PER_GROUP = {
    "string": "memtier_benchmark-1Mkeys-load-string-with-10B-values",
    "hash": "memtier_benchmark-1key-hash-hscan-50-fields-10B-values",
    "list": "memtier_benchmark-1key-list-10K-elements-lindex-string",
    "set": "memtier_benchmark-1key-set-10K-elements-hashtable-srandmember-count-100",
    "sorted-set": "memtier_benchmark-1key-zset-10-elements-zrange-all-elements",
    "stream": "memtier_benchmark-1Mkeys-load-stream-1-fields-with-100B-values",
    "bitmap": "memtier_benchmark-1key-100M-bits-bitmap-bitpos",
    "hyperloglog": "memtier_benchmark-1key-pfadd-4KB-values-pipeline-10",
    "geo": "memtier_benchmark-1key-geo-2-elements-geopos",
    "scripting": "memtier_benchmark-2keys-lua-evalsha-hset-expire",
    "transactions": "memtier_benchmark-1Mkeys-hash-transactions-multi-exec-pipeline-20",
    "pubsub": "memtier_benchmark-nokeys-pubsub-publish-1K-channels-10B-no-subscribers",
    "generic": "memtier_benchmark-1key-list-1K-elements-sort-numeric-pipeline-10",
}


def test_one_spec_of_every_data_type_group_runs_with_its_commands_named(tmp_path):
    matrix = tmp_path / "groups.yaml"
    matrix.write_text("name: one-per-group\ncatalog:\n  duration: 1\n  repetitions: 1\n  specs:\n"
                      + "".join(f"    - {name}\n" for name in ONE_PER_GROUP.values()))
    proc = vkbench("run", str(matrix), "--out", str(tmp_path / "out"), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    by_name = {r["dimensions"]["catalog"]["name"]: r for r in results(tmp_path / "out")}
    assert set(by_name) == set(ONE_PER_GROUP.values())
    for group, name in ONE_PER_GROUP.items():
        result = by_name[name]
        assert group in result["dimensions"]["catalog"]["groups"]
        named = {c.upper() for c in result["dimensions"]["catalog"]["commands"]}
        assert named & set(result["summary"]), (name, result["summary"].keys())
        assert result["dimensions"]["duration"] == 1
