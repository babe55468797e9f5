"""`vkbench run` end to end on real servers (native backend, loopback), through the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vkbench.results.io import load_result

pytestmark = pytest.mark.integration

SMALL = {"requests": 20000, "keyspace": 5000, "pipeline": 16, "repetitions": 2, "warmup": 2000}


def vkbench(*args: str, timeout: float = 240, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vkbench", *args], capture_output=True, text=True,
                          timeout=timeout, **kwargs)


def cell(**fields) -> str:
    return json.dumps({**SMALL, **fields})


def only_result(out: Path) -> dict:
    files = sorted(out.glob("*.json"))
    assert len(files) == 1, files
    return load_result(files[0])


def test_standalone_cell_writes_a_valid_result_with_raw_output_and_no_password(tmp_path):
    proc = vkbench("run", "--cell", cell(server="valkey:9.1.2"), "--out", str(tmp_path), "--run-id", "r1",
                   "--machine-class", "test-box")
    assert proc.returncode == 0, proc.stderr
    result = only_result(tmp_path)
    assert result["run"]["run_id"] == "r1" and result["run"]["machine_class"] == "test-box"
    assert result["subject"]["server_version"] == "9.1.2"
    assert result["subject"]["build"]["id"].startswith("sha256:")
    assert set(result["summary"]) == {"SET", "GET"}
    assert result["summary"]["GET"]["rps"]["n"] == 2
    # CPU use is recorded per repetition; summed over both, since one short repetition may fall
    # under the kernel's accounting tick on a loaded machine.
    assert all(rep["cpu"]["client_cores"] >= 0 and rep["cpu"]["server_cores"] >= 0 for rep in result["repetitions"])
    assert sum(rep["cpu"]["client_cores"] for rep in result["repetitions"]) > 0
    assert sum(rep["cpu"]["server_cores"] for rep in result["repetitions"]) > 0
    raw = tmp_path / result["repetitions"][0]["raw_output"]
    assert '"GET"' in raw.read_text()
    assert "-a '***'" in result["run"]["command_line"]
    # The preload wrote the keyspace: GET measured hits, so no empty-keyspace flag.
    assert "empty-keyspace" not in [f["code"] for f in result["validity"]["flags"]]
    assert "SET" in proc.stdout and "GET" in proc.stdout  # the summary table
    # The server's log is kept beside the raw output, without the password.
    log = tmp_path / f"{result['run']['cell_id']}.raw" / "servers" / "primary.log"
    assert "Ready to accept connections" in log.read_text()


def test_cluster_and_replicas_read_path(tmp_path):
    proc = vkbench("run", "--cell", cell(server="valkey:9.0.0", topology="cluster:3"),
                   "--cell", cell(server="valkey:9.1.2", topology="replication:2", tests=["get"], read_from="replicas"),
                   "--out", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert len(report["cells"]) == 2 and all(c["error"] is None for c in report["cells"])
    results = {load_result(f)["dimensions"]["topology"]: load_result(f) for f in tmp_path.glob("*.json")}
    assert results["cluster:3"]["summary"]["SET"]["rps"]["median"] > 0
    replicas = results["replication:2"]
    assert set(replicas["summary"]) == {"GET"}
    assert any("2 client processes" in w for w in replicas["repetitions"][0]["warnings"])


def test_interleaved_runs_every_repetition(tmp_path):
    proc = vkbench("run", "--cell", cell(server="valkey:9.1.2"), "--cell", cell(server="valkey:9.0.0"),
                   "--interleave", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    for f in tmp_path.glob("*.json"):
        assert [r["index"] for r in load_result(f)["repetitions"]] == [0, 1]


def test_unknown_version_exits_3_with_a_hint(tmp_path):
    proc = vkbench("run", "--cell", cell(server="valkey:1.2.3"), "--out", str(tmp_path))
    assert proc.returncode == 3, proc.stderr
    assert "error:" in proc.stderr and "hint:" in proc.stderr
    assert not list(tmp_path.glob("*.json"))


def test_server_host_is_refused_for_the_native_backend(tmp_path):
    proc = vkbench("run", "--cell", cell(server="valkey:9.1.2"), "--server-host", "10.0.0.2", "--out", str(tmp_path))
    assert proc.returncode == 2 and "compose backend only" in proc.stderr


def test_bad_cell_is_a_usage_error_naming_the_field(tmp_path):
    proc = vkbench("run", "--cell", cell(server="valkey:9.1.2", topology="ring"), "--out", str(tmp_path))
    assert proc.returncode == 2
    assert "topology" in proc.stderr and "cluster:N:R" in proc.stderr


def test_dry_run_starts_nothing(tmp_path):
    proc = vkbench("run", "--preset", "smoke", "--dry-run", "--json", "--out", str(tmp_path))
    assert proc.returncode == 0
    assert len(json.loads(proc.stdout)) == 8
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def _server_children(parent: int) -> set[int]:
    """valkey-server processes started by ``parent`` (servers rename their process title,
    so the parent pid is what identifies them)."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and b"valkey-server" in cmd:
            pids.add(int(entry.name))
    return pids


def _alive(pid: int) -> bool:
    try:
        return "Z" not in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False


def test_ctrl_c_tears_everything_down(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "vkbench", "run", "--cell",
                             cell(server="valkey:9.1.2", topology="cluster:3", requests=5_000_000, repetitions=1, warmup=0),
                             "--out", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    servers: set[int] = set()
    while time.monotonic() < deadline and len(servers) < 3:
        servers |= _server_children(proc.pid)
        time.sleep(0.1)
    assert len(servers) >= 3, "the cluster never started"
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert not [p for p in servers if _alive(p)], "servers left behind after Ctrl-C"


def test_compare_two_runs_markdown(tmp_path):
    base, cand = tmp_path / "base", tmp_path / "cand"
    assert vkbench("run", "--cell", cell(server="valkey:9.0.0"), "--out", str(base)).returncode == 0
    assert vkbench("run", "--cell", cell(server="valkey:9.1.2"), "--out", str(cand)).returncode == 0
    proc = vkbench("compare", str(base), str(cand), "--format", "markdown")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "| cell | command | metric | valkey:9.0.0 | valkey:9.1.2 | change | 95% CI | p | MDE | verdict |"
    rows = [l for l in lines if l.startswith("| standalone")]
    assert {r.split(" | ")[2] for r in rows} >= {"rps", "avg", "min", "p50", "p95", "p99", "max"}
    verdicts = [r.rstrip(" |").split(" | ")[-1] for r in rows]
    assert all(v.split(" (")[0] in ("better", "worse", "no significant change") or v.startswith("inconclusive: MDE ")
               for v in verdicts), verdicts
    as_json = json.loads(vkbench("compare", str(base), str(cand), "--format", "json").stdout)
    assert len(as_json["rows"]) == len(rows)


def test_cpu_placement_pins_servers_and_client_and_is_recorded(tmp_path):
    from vkbench.topology.backend import DeploymentSpec
    from vkbench.topology.model import ServerSettings, Topology
    from vkbench.topology.native import NativeBackend

    spec = DeploymentSpec(Topology.parse("standalone"), "valkey", "9.1.2", ServerSettings(), "pw-x",
                          (tmp_path / "run").resolve(), server_cpus="0")
    with NativeBackend().deploy(spec) as deployment:
        assert os.sched_getaffinity(deployment.endpoints[0].pid) == {0}

    proc = vkbench("run", "--cell", cell(server="valkey:9.1.2", io_threads=2, cpu={"server": "0", "client": "1"}),
                   "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    result = only_result(tmp_path / "out")
    assert result["dimensions"]["cpu"] == {"server": "0", "client": "1"}
    # io-threads 2 on one pinned server CPU: the warning names the fix.
    flag = next(f for f in result["validity"]["flags"] if f["code"] == "io-threads-oversubscribed")
    assert "1 server CPU" in flag["message"]


def test_leftovers_of_a_killed_run_are_removed_before_the_next(tmp_path):
    state = tmp_path / "state"
    proc = subprocess.Popen([sys.executable, "-m", "vkbench", "run", "--state-dir", str(state), "--cell",
                             cell(server="valkey:9.1.2", topology="replication:1", requests=5_000_000, repetitions=1, warmup=0),
                             "--out", str(tmp_path / "out")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    servers: set[int] = set()
    while time.monotonic() < deadline and len(servers) < 2:
        servers |= _server_children(proc.pid)
        time.sleep(0.1)
    assert len(servers) == 2, "the servers never started"
    proc.kill()                      # SIGKILL: no teardown ran
    proc.wait()
    assert all(_alive(p) for p in servers), "servers should survive a SIGKILLed vkbench"
    cleanup = vkbench("run", "--cleanup-only", "--state-dir", str(state))
    assert cleanup.returncode == 0, cleanup.stderr
    assert "nothing to clean up" not in cleanup.stderr
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in servers):
        time.sleep(0.1)
    assert not [p for p in servers if _alive(p)], "leftover servers were not removed"
    again = vkbench("run", "--cleanup-only", "--state-dir", str(state))
    assert "nothing to clean up" in again.stderr


def test_passwords_are_masked_first_under_github_actions(tmp_path):
    env = {**os.environ, "GITHUB_ACTIONS": "true"}
    proc = vkbench("run", "--cell", cell(server="valkey:9.1.2", repetitions=1), "--out", str(tmp_path), "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)   # stdout stays machine-readable
    masks = [line for line in proc.stderr.splitlines() if line.startswith("::add-mask::")]
    assert len(masks) == 1 and len(masks[0]) > len("::add-mask::") + 20
    password = masks[0].removeprefix("::add-mask::")
    # Nowhere else: not in the output, the result file or the raw outputs.
    assert proc.stderr.count(password) == 1 and password not in proc.stdout
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert password not in path.read_text(errors="replace"), path
