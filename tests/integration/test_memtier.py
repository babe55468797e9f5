"""memtier_benchmark for real: the binary tools/setup/memtier.sh built, through vkbench's runner on
real servers (native backend; the compose backend in test_memtier_compose.py), every topology.

Each good cell must read what the preload wrote (GET hit ratio >= 99 %), and every per-command
figure in the result must equal the table memtier itself printed (read here with a parser of
its own, independent of vkbench's). Failures (READONLY, WRONGPASS, MOVED, NOAUTH, refused)
must fail with their reason, a wrong password within seconds.
"""

from __future__ import annotations

import dataclasses
import json
import re
import socket
import time
from pathlib import Path

import pytest

from vkbench.errors import ParseError
from vkbench.matrix.model import Cell
from vkbench.parsers.dispatch import parse_tool_run
from vkbench.runner.process import run_tools
from vkbench.runner.session import RunOptions, run_session
from vkbench.runner.tools import build_command
from vkbench.servers import resolve_tool
from vkbench.topology.backend import DeploymentSpec
from vkbench.topology.model import ServerSettings, Topology
from vkbench.topology.native import NativeBackend

pytestmark = pytest.mark.integration

VERSION = "9.1.2"
BASE = {"tool": "memtier_benchmark", "requests": 6000, "keyspace": 3000, "clients": 4, "repetitions": 1}

#: memtier's row names -> vkbench command names, and its columns -> record fields.
ROWS = {"Sets": "SET", "Gets": "GET", "Totals": "TOTALS"}
COLUMNS = {"Ops/sec": "rps", "Hits/sec": "hits_per_s", "Misses/sec": "misses_per_s", "KB/sec": "kb_per_s",
           "Avg. Latency": "avg", "p50 Latency": "p50", "p90 Latency": "p90", "p95 Latency": "p95",
           "p99 Latency": "p99", "p99.9 Latency": "p999", "p99.990 Latency": "p9999"}


def memtier_binary():
    """The project's own build (tools/setup/memtier.sh); missing means the setup is broken: fail."""
    return resolve_tool("memtier_benchmark", fetch=False)


def printed_table(raw: str) -> dict[str, dict[str, float]]:
    """memtier's result table as printed (ALL STATS, or AGGREGATED with --run-count), read
    independently of vkbench's parsers."""
    lines = raw.splitlines()
    headers = [i for i, line in enumerate(lines) if line.startswith("Type ") and "Ops/sec" in line]
    header_at = next(i for i in headers if lines[i - 2].startswith(("ALL STATS", "AGGREGATED AVERAGE RESULTS")))
    columns = re.findall(r"Type|Ops/sec|Hits/sec|Misses/sec|MOVED/sec|ASK/sec|Avg\. Latency|p[\d.]+ Latency|KB/sec", lines[header_at])
    table = {}
    for line in lines[header_at + 2:]:
        words = line.split()
        if not words or words[0] not in ("Sets", "Gets", "Waits", "Totals"):
            break
        table[words[0]] = {col: float(word) for col, word in zip(columns[1:], words[1:]) if word != "---"}
    return table


def assert_result_is_memtiers_table(result: dict, out_dir: Path) -> None:
    for rep in result["repetitions"]:
        table = printed_table((out_dir / rep["raw_output"]).read_text())
        records = {r["command"]: r for r in [*rep["records"], rep["aggregate"]]}   # Totals: the aggregate
        for row, values in table.items():
            if row not in ROWS or values.get("Ops/sec", 0) == 0:
                continue
            record = records[ROWS[row]]
            for column, value in values.items():
                if column not in COLUMNS:   # MOVED/sec, ASK/sec (--cluster-mode): not recorded
                    continue
                field = COLUMNS[column]
                if field == "rps":
                    got = record["rps"]
                elif column.endswith("Latency"):
                    got = record["latency_ms"].get(field)
                else:
                    got = record.get(field)
                assert got == pytest.approx(value, abs=1e-9), f"{row} {column}: result {got}, memtier printed {value}"


def memtier_runtime_s(json_path: Path) -> float:
    """memtier's own measured time, from the JSON it wrote (kept beside the raw output): its
    Runtime, or with --run-count the sum of every run's (--print-all-runs)."""
    document = json.loads(json_path.read_text())
    if "ALL STATS" in document:
        return document["ALL STATS"]["Runtime"]["Total duration"] / 1000
    runs = [v for k, v in document.items() if k.startswith("RUN #")]
    assert runs, "a --run-count JSON without its runs' sections"
    return sum(run["Runtime"]["Total duration"] for run in runs) / 1000


def hit_ratio(result: dict) -> float:
    hits = sum(r["hits_per_s"] for rep in result["repetitions"] for r in rep["records"] if r["command"] == "GET")
    misses = sum(r["misses_per_s"] for rep in result["repetitions"] for r in rep["records"] if r["command"] == "GET")
    return hits / (hits + misses)


def run_cells(cells: list[dict], tmp_path: Path, backend: str = "native", timeout: float = 120.0):
    memtier_binary()
    report = run_session([Cell.model_validate(c) for c in cells],
                         RunOptions(backend=backend, out_dir=tmp_path / "out", state_dir=tmp_path / "state",
                                    run_id="memtier-test", timeout=timeout))
    return report


GOOD_CELLS = {
    "standalone P16": {"server": f"valkey:{VERSION}", "pipeline": 16, **BASE},
    "cluster:3": {"server": f"valkey:{VERSION}", "topology": "cluster:3", "client_threads": 2, **BASE},
    "replica reads": {"server": f"valkey:{VERSION}", "topology": "replication:1", "read_from": "replicas",
                      "tests": ["get"], **BASE},
    "ratio 1:10": {"server": f"valkey:{VERSION}", "workload": {"ratio": "1:10"}, **BASE},
    "set only": {"server": f"valkey:{VERSION}", "tests": ["set"], **BASE},
    "run count 2": {"server": f"valkey:{VERSION}", "workload": {"run_count": 2}, **BASE},
}


def check_good_cells(report, out_dir: Path, names: list[str]) -> None:
    assert [o.error for o in report.outcomes] == [None] * len(names), [str(o.error) for o in report.outcomes]
    for name, outcome in zip(names, report.outcomes):
        result = outcome.result
        # Right cells: nothing invalid but client-bound, which says how this 2-core machine was
        # loaded (memtier's one thread can fill its core while the server idles), not that the
        # cell is wrong; misses, tool errors or a wrong key space are.
        invalid = {f["code"] for f in result["validity"]["flags"] if f["severity"] == "invalid"}
        assert invalid <= {"client-bound"}, (name, result["validity"])
        assert "tool-error" not in [f["code"] for f in result["validity"]["flags"]]
        assert_result_is_memtiers_table(result, out_dir)
        rep = result["repetitions"][0]
        kept_json = out_dir / rep["raw_output"].replace(".txt", ".memtier-0.json")
        # The repetition's time is memtier's own (its Runtime; with --run-count every run's), not the
        # process's lifetime, which is longer by up to a second per run (2 s between runs).
        assert rep["elapsed_s"] == pytest.approx(memtier_runtime_s(kept_json), abs=0.001), name
        assert rep["elapsed_s"] < rep["wall_s"], name
        assert not any("wall time" in w for w in rep["warnings"]), name
        commands = {r["command"] for r in rep["records"]}
        assert rep["aggregate"]["command"] == "TOTALS", name      # memtier's Totals: the aggregate, not a command
        assert "TOTALS" not in result["summary"] and result["aggregate"]["rps"]["median"] > 0, name
        if outcome.cell.memtier_ratio()[1]:
            assert hit_ratio(result) >= 0.99, (name, hit_ratio(result))
        if name == "set only":
            assert commands == {"SET"}
        if name == "replica reads":
            assert commands == {"GET"}
        if name == "ratio 1:10":
            by = {r["command"]: r["rps"] for r in rep["records"]}
            assert 5 < by["GET"] / by["SET"] < 20
        if name == "run count 2":
            assert "--run-count=2" in result["run"]["command_line"]
            assert all(any("AGGREGATED AVERAGE RESULTS (2 runs)" in w for w in r["warnings"]) for r in rep["records"])
        assert "***" in result["run"]["command_line"]


def test_memtier_cells_in_every_topology(tmp_path):
    names = list(GOOD_CELLS)
    report = run_cells([GOOD_CELLS[n] for n in names], tmp_path)
    check_good_cells(report, tmp_path / "out", names)


def test_memtier_failures_are_clear_and_fast(tmp_path):
    # Writes sent to a replica: every SET gets READONLY.
    readonly = {"server": f"valkey:{VERSION}", "topology": "replication:1", "read_from": "replicas", "tests": ["set"],
                **BASE}
    report = run_cells([readonly], tmp_path / "readonly", timeout=300)
    assert "writes went to a read-only replica: READONLY" in str(report.outcomes[0].error)
    # A wrong password: memtier itself would wait until the timeout (300 s here).
    wrong_password = {"server": f"valkey:{VERSION}", "tests": ["get"], "tool_args": ["-a", "not-the-password"], **BASE}
    started = time.monotonic()
    report = run_cells([wrong_password], tmp_path / "wrongpass", timeout=300)
    took = time.monotonic() - started
    assert "the server rejected the credentials: WRONGPASS" in str(report.outcomes[0].error)
    # Deploy, preload, 1 repetition: seconds when quiet, not the 300 s timeout. The bound is half
    # the timeout so that a loaded machine's slow deploy cannot fail it; waiting out the timeout does.
    assert took < 150, f"took {took:.0f} s: the wrong password was not stopped early (timeout 300 s)"


def test_gets_that_miss_make_the_cell_invalid(tmp_path):
    """memtier's own hits/misses: GETs of keys the preload did not write (memtier's last
    --key-prefix wins) find nothing, and the cell must say so although every key exists."""
    cell = {"server": f"valkey:{VERSION}", "tests": ["get"], "tool_args": ["--key-prefix=not-preloaded-"], **BASE}
    report = run_cells([cell], tmp_path)
    outcome = report.outcomes[0]
    assert outcome.error is None, outcome.error
    result = outcome.result
    assert hit_ratio(result) < 0.01
    flags = {f["code"]: f for f in result["validity"]["flags"]}
    assert not result["validity"]["valid"]
    assert flags["empty-keyspace"]["severity"] == "invalid"
    assert "of GETs found their key (the tool's own hits/misses)" in flags["empty-keyspace"]["message"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_memtier(cell: Cell, endpoint, password: str, *, drop_auth: bool = False):
    tool = memtier_binary()
    cmd = build_command(cell, endpoint, password, str(tool.path))
    if drop_auth:
        at = cmd.argv.index("-a")
        del cmd.argv[at:at + 2]
    started = time.monotonic()
    [run] = run_tools([cmd], cpus=None, timeout=120)
    return run, time.monotonic() - started


def test_moved_noauth_and_refused_are_refused_with_their_reason(tmp_path):
    from vkbench.servers import resolve_server

    resolve_server("valkey", VERSION, fetch=False)
    spec = DeploymentSpec(Topology.parse("cluster:3"), "valkey", VERSION, ServerSettings(), "pw-memtier-test",
                          tmp_path / "run")
    standalone = Cell(server=f"valkey:{VERSION}", **{**BASE, "requests": 600})   # no --cluster-mode
    with NativeBackend(state_dir=tmp_path / "state").deploy(spec) as deployment:
        node = deployment.primaries[0]
        run, _ = run_memtier(standalone, node, spec.password)
        with pytest.raises(ParseError, match="redirected the request: MOVED") as moved:
            parse_tool_run(run.output, tool="memtier_benchmark", source="moved")
        assert "--cluster-mode" in moved.value.hint
        run, took = run_memtier(standalone, node, spec.password, drop_auth=True)
        with pytest.raises(ParseError, match="NOAUTH Authentication required"):
            parse_tool_run(run.output, tool="memtier_benchmark", source="noauth")
    closed = dataclasses.replace(node, port=free_port())
    run, took = run_memtier(standalone, closed, spec.password)
    assert took < 60        # refused at once; run_tools' own timeout (120 s) is what this rules out
    with pytest.raises(ParseError, match="Connection refused"):
        parse_tool_run(run.output, tool="memtier_benchmark", source="refused")
