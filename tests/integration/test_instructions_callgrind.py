"""Instruction counts of a real valkey-server under callgrind through `vkbench run`, with small
request counts.

Structure only: every value positive, the method recorded, memory per key measured. How
repeatable the counts are is a figure, not a test: tools/instruction_spread.py prints it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from vkbench.results.io import load_result

pytestmark = pytest.mark.integration


def test_run_with_instrument_both_records_wallclock_instructions_and_memory_per_key(tmp_path):
    cell = {"server": "valkey:9.1.2", "requests": 1000, "keyspace": 1000, "repetitions": 2, "pipeline": 4,
            "clients": 2, "tests": ["set", "get"]}
    proc = subprocess.run([sys.executable, "-m", "vkbench", "run", "--cell", json.dumps(cell), "--instrument", "both",
                           "--out", str(tmp_path), "--json"], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    files = sorted(tmp_path.glob("*.json"))
    assert len(files) == 1
    result = load_result(files[0])               # schema and value checks
    assert result["dimensions"]["instrument"] == "both"
    assert len(result["repetitions"]) == 2       # the wall clock ran as before
    assert set(result["summary"]) == {"SET", "GET"}

    counted = result["instructions"]
    method = counted["method"]
    assert (method["tool"], method["servers"], method["windows"], method["window_requests"]) == ("callgrind", 2, 4, 1000)
    assert method["glibc_tunables"].startswith("glibc.cpu.hwcaps=") and method["id"].startswith("callgrind-")
    assert set(counted["commands"]) == {"set", "get"}
    for block in counted["commands"].values():
        assert len(block["values"]) == 8 and all(v > 0 for v in block["values"])
        assert block["per_op"] > 0 and block["cv_pct"] >= 0
        assert block["top_functions"] and all(r["self_per_op"] > 0 for r in block["top_functions"])
    assert [s["seed"] for s in counted["servers"]] == [1, 2]
    for server in counted["servers"]:
        assert [(w["command"], w["index"]) for w in server["windows"]] == \
            [("set", i) for i in range(4)] + [("get", i) for i in range(4)]
        for w in server["windows"]:
            assert w["requests"] == 1000 and w["instructions"] > sum(w["subtracted"].values()) >= 0
            assert set(w["subtracted"]) == {"serverCron", "activeExpireCycle"}
        assert server["rehash"]["status"] in ("finished", "not reported by this server version") or \
            server["rehash"]["status"].startswith("still rehashing")

    memory = result["memory"]                    # from the wall-clock deployment's preload
    assert memory["keys"] == 1000 and memory["used_memory_after"] > memory["used_memory_before"]
    assert memory["bytes_per_key"] > 0
    assert set(report["cells"][0]["instructions_per_op"]) == {"set", "get"}
    dumps = sorted(p.name for p in (tmp_path / f"{result['run']['cell_id']}.raw" / "callgrind").iterdir())
    assert dumps == ["callgrind-seed1-get.out.gz", "callgrind-seed1-set.out.gz",
                     "callgrind-seed2-get.out.gz", "callgrind-seed2-set.out.gz"]
