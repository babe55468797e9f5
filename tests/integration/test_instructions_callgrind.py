"""Instruction counts of a real valkey-server under callgrind, with small request counts.

Structure only: every value positive, the method recorded, memory per key measured. How
repeatable the counts are is a figure, not a test: tools/instruction_spread.py prints it."""

from __future__ import annotations

import secrets

import pytest

from vkbench.instruments.method import InstructionsMethod
from vkbench.instruments.valgrind import measure, summarize
from vkbench.servers import resolve_server, resolve_tool

pytestmark = pytest.mark.integration


def test_two_fresh_servers_under_callgrind_give_instructions_per_op_with_the_method(tmp_path):
    server = resolve_server("valkey", "9.1.2")
    tool = resolve_tool("valkey-benchmark")
    method = InstructionsMethod(windows=2, window_requests=1000, servers=2)
    measurements = []
    for i in range(method.servers):
        measurements.append(measure(
            server_path=server.path, tool_path=tool.path, tool_env=dict(tool.env), commands=["set", "get"],
            clients=2, pipeline=4, data_size=3, keyspace=500, seed=method.seed_base + i, method=method,
            work_dir=tmp_path / f"server-{i}", password=secrets.token_urlsafe(16), server_env=dict(server.env),
            keep_dumps=tmp_path / "dumps", timeout=300))
    for m in measurements:
        assert [(w.command, w.index) for w in m.windows] == [("set", 0), ("set", 1), ("get", 0), ("get", 1)]
        for w in m.windows:
            assert w.requests == 1000
            assert w.instructions > 0 and w.per_op > 0
            assert set(w.subtracted) == {"serverCron", "activeExpireCycle"}
            assert all(v >= 0 for v in w.subtracted.values())
            assert w.instructions - sum(w.subtracted.values()) > 0
        assert m.memory["keys"] == 500 and m.memory["used_memory_after"] > m.memory["used_memory_before"]
        assert m.memory["bytes_per_key"] > 0
        assert m.rehash["status"] in ("finished", "not reported by this server version") or \
            m.rehash["status"].startswith("still rehashing")
        assert len(m.dumps) == 2 and all((tmp_path / "dumps" / d).is_file() for d in m.dumps)
    summary = summarize(measurements, method)
    assert set(summary["commands"]) == {"set", "get"}
    for block in summary["commands"].values():
        assert len(block["values"]) == 4 and all(v > 0 for v in block["values"])
        assert block["per_op"] > 0 and block["cv_pct"] >= 0
        assert block["top_functions"] and all(r["self_per_op"] > 0 for r in block["top_functions"])
    assert summary["method"]["window_requests"] == 1000 and summary["method"]["tool"] == "callgrind"
    assert [s["seed"] for s in summary["servers"]] == [1, 2]
    # Every server under callgrind was stopped: none of their work directories holds a live pid.
    for i in range(2):
        assert not list((tmp_path / f"server-{i}").glob("callgrind.out.*.*"))
