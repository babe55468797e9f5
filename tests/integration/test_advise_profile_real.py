"""On real servers on this machine: the io-threads advisor sees the client on the same 2-core
box and io-threads 2 oversubscribing it (and says so), every result carries the server's own evidence,
and --profile records folded stacks with perf during one extra, unmeasured repetition.

The box is made a 2-core one on any machine: server and client share the same two CPUs (the
cell's cpu placement, taskset), so the advisor sees 2 server cores shared with the client
whether the machine has 2 cores or 64."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vkbench.profile import profile_diff
from vkbench.profile.folded import read as read_folded
from vkbench.results.io import load_result

pytestmark = pytest.mark.integration

#: The first two CPUs this process may run on (one on a single-CPU machine), shared by server and client.
SHARED_CPUS = sorted(os.sched_getaffinity(0))[:2]
CPUSET = ",".join(map(str, SHARED_CPUS))
SWEEP = {"server": "valkey:9.1.2", "requests": 100000, "keyspace": 5000, "pipeline": 16, "repetitions": 3, "warmup": 2000,
         "cpu": {"server": CPUSET, "client": CPUSET}}


def vkbench(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vkbench", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sweep")
    cells = [arg for io in (1, 2) for arg in ("--cell", json.dumps({**SWEEP, "io_threads": io}))]
    proc = vkbench("run", *cells, "--interleave", "--out", str(out), "--machine-class", "this-box", "--profile")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def test_advisor_sees_the_client_on_this_box_and_io_threads_2_oversubscribed(sweep):
    """Which setting wins is measured (a loaded machine can make io-threads 2 faster, or either
    one client-bound, hence invalid); what the advisor derives from the cells is not: the box's
    cores, the client on it, io-threads 2 plus the client's thread oversubscribing 2 cores, and a
    sentence that starts with the recommendation and, for io-threads 1 over valid cells, says why not 2."""
    cores = len(SHARED_CPUS)
    proc = vkbench("advise", str(sweep), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    advice = json.loads(proc.stdout)["advice"]
    assert {a["command"] for a in advice} == {"SET", "GET"}
    for a in advice:
        assert a["recommended"] in (1, 2), a
        assert {s["io_threads"] for s in a["settings"]} == {1, 2}
        assert a["client_on_box"] and a["server_cores"] == cores
        # io-threads 2 plus the client's thread need 3 cores of 2.
        assert {"code": "oversubscribed", "io_threads": 2} in [{k: w[k] for k in ("code", "io_threads")} for w in a["warnings"]]
        assert a["sentence"].startswith(f"use io-threads {a['recommended']} on this-box"), a["sentence"]
        if a["recommended"] == 1 and all(s["valid"] for s in a["settings"]):
            # The sentence argues from io-threads 2 (an invalid setting would only be named as left out).
            assert f"the client shares the machine's {cores} cores" in a["sentence"], a["sentence"]
            assert "io-threads 2 oversubscribes them" in a["sentence"], a["sentence"]
    md = vkbench("advise", str(sweep), "--format", "markdown")
    assert md.returncode == 0 and "## io-threads advice" in md.stdout


def test_results_carry_the_servers_own_evidence(sweep):
    for path in sweep.glob("*.json"):
        result = load_result(path)
        for rep in result["repetitions"]:
            server = rep["server"]
            assert server.get("error") is None and server["primaries"] == 1 and server["reset"]
            # The tool's requests reached the server: calls of the measured window, per command.
            assert server["commands"]["SET"]["calls"] >= SWEEP["requests"]
            assert server["commands"]["GET"]["calls"] >= SWEEP["requests"]
            assert server["commands"]["SET"]["usec_per_call"] > 0
            assert server["cpu"]["cores"] > 0
            assert server["latency_usec"]["SET"]["p99"] >= server["latency_usec"]["SET"]["p50"]


def test_profile_is_recorded_beside_the_result_and_never_measured(sweep):
    results = {load_result(p)["dimensions"]["io_threads"]: (p, load_result(p)) for p in sweep.glob("*.json")}
    for io, (path, result) in results.items():
        profile = result["profile"]
        assert profile["status"] == "recorded", profile.get("reason")
        assert len(result["repetitions"]) == SWEEP["repetitions"]      # the profiled one is extra
        assert [r["index"] for r in result["repetitions"]] == [0, 1, 2]
        stacks = read_folded(path.parent / profile["file"])
        assert sum(stacks.values()) == profile["samples"] > 0
        assert profile["bytes"] <= 256 * 1024
        assert profile["symbols"]["symtab"] is True   # the cached 9.1.2 binary is not stripped
        assert set(profile["repetition"]["rps"]) == {"SET", "GET"}
        threads = {s.split(";", 1)[0] for s in stacks}
        assert "valkey-server" in threads
        # No assertion that io_thd threads were sampled with io-threads 2: Valkey activates its
        # io threads only while the event load is high enough, which a loaded CI machine does not
        # guarantee (a CI run failed on exactly that).
    # The lead's incident diff reads result files directly.
    rows = profile_diff(results[1][0], results[2][0])
    assert rows and all(-1 <= r.self_delta <= 1 for r in rows)
