"""The perf path of instruction counts with a real valkey-server and the real perf.

This machine kind (a VM) has no hardware counters: ``perf stat -e instructions:u`` says
``<not supported>``. So the window mechanics - perf stat attached to every thread of the pinned
server with its counters off, switched on and off over the control FIFO around each window, one
total read per window - are driven through the same code (``measure`` with a perf method) with
software events, which count here: the method's event list is a parameter. And auto-selection
must pick valgrind here, saying why."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys

import pytest

from vkbench.errors import NoHardwareCountersError
from vkbench.instruments.method import perf_method
from vkbench.instruments.perf_stat import WindowCounter, parse_csv, probe_counters, select_counter
from vkbench.instruments.valgrind import PinnedServer, check_prerequisites, measure, summarize

pytestmark = pytest.mark.integration

#: Software events: context switches (the server blocks in epoll_wait between batches) is the
#: "count"; task-clock (CPU time of the attached threads) shows the counters ran only while on.
EVENTS = ("context-switches", "task-clock")


@pytest.fixture(scope="module")
def binaries():
    # tools/setup.sh installs perf and the machine kind runs tests as root: a missing
    # prerequisite is a failure (with its hint), never a silent skip
    check_prerequisites("perf")
    from vkbench.servers import resolve_server, resolve_tool

    return resolve_server("valkey", "9.1.2"), resolve_tool("valkey-benchmark")


def _cpu_ms(pid: int) -> float:
    """utime + stime of every thread of ``pid`` so far, in ms (/proc/PID/stat)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def test_this_machine_has_no_hardware_counters_so_auto_picks_valgrind():
    probe = probe_counters()
    assert not probe.available
    assert probe.reason.startswith("no hardware counters") and "<not supported>" in probe.reason
    choice = select_counter("auto")
    assert (choice.tool, choice.requested) == ("valgrind", "auto")
    assert choice.reason.startswith("no hardware counters")
    with pytest.raises(NoHardwareCountersError) as caught:
        select_counter("perf")
    assert caught.value.exit_code == 19 and "--counter" in caught.value.hint


def test_run_with_instrument_instructions_counts_under_valgrind_here_and_says_why(tmp_path):
    cell = {"server": "valkey:9.1.2", "requests": 500, "keyspace": 100, "repetitions": 1, "tests": ["get"]}
    env = {k: v for k, v in os.environ.items() if k != "VKBENCH_COUNTER"}
    proc = subprocess.run([sys.executable, "-m", "vkbench", "run", "--cell", json.dumps(cell), "--instrument",
                           "instructions", "--out", str(tmp_path), "--json"], capture_output=True, text=True,
                          timeout=900, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (path,) = tmp_path.glob("*.json")
    from vkbench.results.io import load_result

    counted = load_result(path)["instructions"]
    assert counted["counter"]["tool"] == "valgrind" and counted["counter"]["requested"] == "auto"
    assert counted["counter"]["reason"].startswith("no hardware counters")
    assert counted["method"]["tool"] == "callgrind" and counted["commands"]["get"]["code_per_op"] > 0


def test_run_refuses_counter_perf_without_hardware_counters(tmp_path):
    cell = {"server": "valkey:9.1.2", "requests": 1000, "keyspace": 100, "repetitions": 2, "tests": ["get"]}
    proc = subprocess.run([sys.executable, "-m", "vkbench", "run", "--cell", json.dumps(cell), "--instrument",
                           "instructions", "--counter", "perf", "--out", str(tmp_path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 19, proc.stderr[-2000:]
    assert "no hardware counters" in proc.stderr and "--counter auto" in proc.stderr
    assert not list(tmp_path.glob("*.json"))


def test_perf_windows_count_only_while_switched_on(binaries, tmp_path):
    server, tool = binaries
    method = perf_method(windows=3, window_requests=3000, servers=1, events=EVENTS)
    m = measure(server_path=server.path, tool_path=tool.path, tool_env=dict(getattr(tool, "env", {}) or {}),
                commands=["set", "get"], clients=2, pipeline=1, data_size=3, keyspace=1000, seed=1, method=method,
                work_dir=tmp_path / "server", password=secrets.token_urlsafe(16), server_env=dict(server.env))
    assert [(w.command, w.index) for w in m.windows] == [("set", i) for i in range(3)] + [("get", i) for i in range(3)]
    assert m.memory["keys"] == 1000 and m.rehash["status"] in ("finished", "not reported by this server version")
    for w in m.windows:
        readings = {r["event"]: r for r in w.readings}
        assert set(readings) == set(EVENTS)
        assert all(r["status"] == "counted" and r["enabled_pct"] == 100.0 for r in readings.values())
        # 3,000 requests from 2 clients without pipelining: the server sleeps in epoll_wait
        # between them, so it is switched out many times - and was counted all the while.
        assert w.instructions == int(readings["context-switches"]["value"]) > 0
        assert w.per_op == pytest.approx(w.instructions / 3000)
        assert readings["task-clock"]["value"] > 0
        assert w.subtracted == {} and w.strings is None and w.code_per_op is None
        # main thread plus valkey's bio threads: perf attached to all of them (-p PID).
        assert w.threads >= 4
    block = summarize([m], method)
    assert block["method"]["id"].startswith("perf-") and block["method"]["counted"] == "total"
    assert block["method"]["events"] == list(EVENTS) and block["method"]["subtract"] == []
    assert set(block["commands"]) == {"set", "get"}
    assert all("code_per_op" not in c and c["top_functions"] == [] for c in block["commands"].values())


def test_a_window_counter_counts_nothing_before_enable_and_after_disable(binaries, tmp_path):
    """The mechanics alone on one pinned server: load outside the window is not counted, load
    inside it is, and perf's per-window total is the window's (task-clock against /proc)."""
    server, _ = binaries
    password = secrets.token_urlsafe(16)
    with PinnedServer(server.path, tmp_path / "server", seed=1, method=perf_method(), password=password,
                      env=dict(server.env)) as pinned:
        pid = pinned.proc.pid
        with WindowCounter(pid, ("task-clock",), tmp_path) as counter:
            pinned.preload(20000, 3)                 # before enable: must not count
            readings = counter.stop()
        assert readings[0].status == "not counted"   # never switched on
        with WindowCounter(pid, ("task-clock",), tmp_path) as counter:
            counter.enable()
            before = _cpu_ms(pid)
            pinned.preload(20000, 3)                 # the window
            inside = _cpu_ms(pid) - before
            counter.disable()
            pinned.preload(20000, 3)                 # after disable: must not count
            readings = counter.stop()
        counted_ms = readings[0].value
        assert readings[0].status == "counted" and counted_ms > 0
        # /proc's clock ticks are 10 ms: the window's CPU time within a tick or two of perf's,
        # and nowhere near the three preloads' together.
        assert abs(counted_ms - inside) <= max(30.0, 0.3 * inside)
        assert parse_csv(counter.raw)[0].value == counted_ms
