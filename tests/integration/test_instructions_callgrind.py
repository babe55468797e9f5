"""Instruction counts of a real valkey-server under callgrind through `vkbench run`, with small
request counts.

The first test checks structure: every value positive, the method recorded, memory per key
measured. The second checks the one precision the series rely on: the code count (the total
without libc's alignment-sensitive string routines, vkbench.instruments.split) of 5 fresh servers
agrees to a CV of 0.05 %, the issue's target (measured 0.006-0.010 %: docs/instructions.md).
tools/instruction_spread.py prints the figures."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys

import pytest

from vkbench.instruments.method import InstructionsMethod
from vkbench.instruments.valgrind import check_prerequisites, measure, summarize
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
            assert 0 < w["strings"] < w["instructions"]       # GET/SET compare the command name: strcasecmp
            assert w["code_per_op"] == pytest.approx(
                (w["instructions"] - sum(w["subtracted"].values()) - w["strings"]) / w["requests"], abs=0.001)
        assert server["rehash"]["status"] in ("finished", "not reported by this server version") or \
            server["rehash"]["status"].startswith("still rehashing")

    memory = result["memory"]                    # from the wall-clock deployment's preload
    assert memory["keys"] == 1000 and memory["used_memory_after"] > memory["used_memory_before"]
    assert memory["bytes_per_key"] > 0
    assert method["counted"] == "code"
    for block in counted["commands"].values():
        assert 0 < block["code_per_op"] < block["per_op"] and len(block["code_per_server"]) == 2
    assert set(report["cells"][0]["instructions_per_op"]) == {"set", "get"}
    dumps = sorted(p.name for p in (tmp_path / f"{result['run']['cell_id']}.raw" / "callgrind").iterdir())
    assert dumps == ["callgrind-seed1-get.out.gz", "callgrind-seed1-set.out.gz",
                     "callgrind-seed2-get.out.gz", "callgrind-seed2-set.out.gz"]


#: The issue's target for the series' figure: CV of the code count over 5 fresh servers.
CODE_CV_TARGET_PCT = 0.05


def test_code_count_of_five_fresh_servers_agrees_within_the_target_for_set_and_get(tmp_path):
    """valkey 9.1.2 at -c 1 -P 1, 5 servers with seeds 1..5, 4 windows of 5,000 requests per
    command. The totals of the same servers spread by 0.1-0.3 % (where malloc put the arguments of
    __strcasecmp_sse2); the code count must not."""
    from vkbench.servers import resolve_server, resolve_tool

    check_prerequisites()
    server, tool = resolve_server("valkey", "9.1.2"), resolve_tool("valkey-benchmark")
    method = InstructionsMethod(windows=4, window_requests=5000, servers=5)
    measurements = [
        measure(server_path=server.path, tool_path=tool.path, tool_env=dict(tool.env), commands=["set", "get"],
                clients=1, pipeline=1, data_size=3, keyspace=10000, seed=method.seed_base + i, method=method,
                work_dir=tmp_path / f"server-{i}", password=secrets.token_urlsafe(16), server_env=dict(server.env))
        for i in range(method.servers)]
    summary = summarize(measurements, method)
    for command in ("set", "get"):
        block = summary["commands"][command]
        assert len(block["code_per_server"]) == 5
        assert block["code_cv_servers_pct"] <= CODE_CV_TARGET_PCT, (command, block["code_per_server"],
                                                                    block["per_server"])
        assert block["code_per_op"] < block["per_op"]
