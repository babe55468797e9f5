"""`vkbench run` killed with SIGKILL at three moments - while servers start, while the benchmark
runs, while the cluster is being created - and then the next run (or `--cleanup-only`) leaves
no server process, no benchmark process, no bound port, no vkbench-* temp dir and no config
file with the password behind.

"While the cluster is being created" is observed on the nodes themselves (CLUSTER INFO, with the
run's password from a node's config file): vkbench's setup has assigned slots or met another
node somewhere, and the cluster is not whole yet. Pid files alone are not that moment: they are
written as each server starts, before vkbench waits for them and creates the cluster."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import valkey
from run_leftovers import clean_up_runs, run_processes

pytestmark = pytest.mark.integration

SMALL = {"server": "valkey:9.1.2", "requests": 200000, "keyspace": 1000, "repetitions": 3, "preload": False,
         "tests": ["set"]}


def run_env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, TMPDIR=str(tmp_path / "tmp"))


@pytest.fixture
def runs(tmp_path):
    """The runs a test starts (start_run adds them). Afterwards, passed or failed, nothing of them
    stays on the machine: each run's process group killed, `vkbench run --cleanup-only`, then any
    server its pid files name still alive SIGKILLed (run_leftovers.clean_up_runs)."""
    started: list[subprocess.Popen] = []
    yield started
    clean_up_runs(started, tmp_path / "state", run_env(tmp_path))


def start_run(tmp_path: Path, cell: dict, runs: list[subprocess.Popen]) -> tuple[subprocess.Popen, dict]:
    env = run_env(tmp_path)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    child = subprocess.Popen(
        [sys.executable, "-m", "vkbench", "run", "--cell", json.dumps(cell), "--out", str(tmp_path / "out"),
         "--state-dir", str(tmp_path / "state")],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    runs.append(child)
    return child, env


def descendants_and_orphans(tmp_path: Path) -> list[tuple[int, str]]:
    """Every process that belongs to this test's runs (their TMPDIR is tmp_path/tmp)."""
    return run_processes(tmp_path / "tmp")


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}")


def server_ports(tmp_path: Path) -> list[int]:
    ports = []
    for pidfile in (tmp_path / "state").glob("native-*.json"):
        try:
            ports.append(json.loads(pidfile.read_text())["port"])
        except (OSError, ValueError, KeyError):
            pass
    return ports


def server_pids(tmp_path: Path) -> list[int]:
    """(Servers rename their process title, so their command line no longer names the run's dir.)"""
    pids = []
    for pidfile in (tmp_path / "state").glob("native-*.json"):
        try:
            pids.append(json.loads(pidfile.read_text())["pid"])
        except (OSError, ValueError, KeyError):
            pass
    return pids


def tool_running(tmp_path: Path) -> bool:
    return any("valkey-benchmark" in cmd and "--csv" in cmd for _, cmd in descendants_and_orphans(tmp_path))


def run_password(tmp_path: Path) -> str | None:
    """The deployment's password, from a node's 0600 config file (this test's user owns it)."""
    for conf in (tmp_path / "tmp").glob("vkbench-*/*/*.conf"):
        try:
            for line in conf.read_text().splitlines():
                if line.startswith("requirepass "):
                    return line.split(" ", 1)[1].strip().strip('"')
        except OSError:
            continue
    return None


def cluster_views(tmp_path: Path) -> dict[int, dict[str, str]] | None:
    """CLUSTER INFO of every node of the run (None until all three answer)."""
    ports, password = server_ports(tmp_path), run_password(tmp_path)
    if len(ports) < 3 or not password:
        return None
    views = {}
    for port in ports:
        client = valkey.Valkey(host="127.0.0.1", port=port, password=password, socket_timeout=0.5,
                               socket_connect_timeout=0.5, decode_responses=True)
        try:
            text = client.execute_command("CLUSTER", "INFO")
        except valkey.exceptions.ValkeyError:
            return None                                  # not listening yet
        finally:
            client.close()
        text = text if isinstance(text, str) else "\n".join(f"{k}:{v}" for k, v in dict(text).items())
        views[port] = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    return views


def creation_begun(view: dict[str, str]) -> bool:
    """vkbench's cluster setup has reached this node: slots assigned or another node met."""
    return int(view.get("cluster_slots_assigned", 0)) > 0 or int(view.get("cluster_known_nodes", 1)) > 1


def creation_done(views: dict[int, dict[str, str]]) -> bool:
    return all(v.get("cluster_state") == "ok" and v.get("cluster_slots_ok") == "16384"
               and v.get("cluster_known_nodes") == str(len(views)) for v in views.values())


class Missed(Exception):
    """The cluster was already whole when it was first seen: the moment was missed."""


def creating_cluster(tmp_path: Path) -> dict[int, dict[str, str]] | None:
    """The nodes' views while the cluster is being created - setup begun (slots assigned or a
    MEET seen) on some node, the cluster not yet whole - else None."""
    views = cluster_views(tmp_path)
    if views is None or not any(creation_begun(v) for v in views.values()):
        return None
    if creation_done(views):
        raise Missed(f"the cluster was already whole: {views}")
    return views


def assert_nothing_left(tmp_path: Path, ports: list[int]) -> None:
    deadline = time.monotonic() + 60       # killed processes go within seconds; a loaded machine may take longer
    while descendants_and_orphans(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert descendants_and_orphans(tmp_path) == []
    for port in ports:
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", port))             # free again
    assert [p.name for p in (tmp_path / "tmp").iterdir()] == []            # no vkbench-* temp dir
    assert list((tmp_path / "state").glob("native-*.json")) == []
    leftovers = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix == ".conf"]
    assert leftovers == []                                                 # no password file


MOMENTS = {
    # the first server's pid file is written right after it is started, before it is ready
    "server-start": (SMALL, server_ports),
    "benchmark": (SMALL, tool_running),
    # the servers answer and vkbench has begun forming the cluster (slots assigned or nodes met)
    # but it is not whole yet: the kill lands inside create_cluster/wait_ready
    "cluster-creation": ({**SMALL, "topology": "cluster:3"}, creating_cluster),
}

#: (moment, what comes next): the next real run (it cleans up first), or --cleanup-only.
CASES = [("server-start", "cleanup-only"), ("benchmark", "next-run"), ("cluster-creation", "cleanup-only"),
         ("cluster-creation", "next-run")]


@pytest.mark.parametrize("moment,after", CASES, ids=[f"{m}-then-{a}" for m, a in CASES])
def test_sigkill_then_next_run_leaves_nothing(tmp_path, runs, moment, after):
    cell, reached = MOMENTS[moment]
    child, env = start_run(tmp_path, cell, runs)
    seen = None
    try:
        for attempt in range(3):    # the cluster can form faster than one look: try another run
            try:
                seen = wait_for(lambda: reached(tmp_path) or child.poll() is not None, 120, moment)
                break
            except Missed:
                if attempt == 2:
                    raise
                os.kill(child.pid, signal.SIGKILL)
                child.wait()
                subprocess.run([sys.executable, "-m", "vkbench", "run", "--cleanup-only", "--state-dir", str(tmp_path / "state")],
                               env=env, capture_output=True, timeout=120)
                child, env = start_run(tmp_path, cell, runs)
        assert child.poll() is None, child.stderr.read().decode()[-2000:]
        if moment == "cluster-creation":
            # where it was killed: inside the cluster's creation, the benchmark not started
            assert isinstance(seen, dict) and len(seen) == 3, seen
            assert any(creation_begun(v) for v in seen.values()) and not creation_done(seen), seen
            assert not tool_running(tmp_path)
    finally:
        os.kill(child.pid, signal.SIGKILL)             # the vkbench process only: no teardown runs
        child.wait()
    ports = server_ports(tmp_path)
    assert any((tmp_path / "tmp").glob("vkbench-*")), "the killed run left its temp dir (the case under test)"
    if moment == "cluster-creation":
        assert sorted(ports) == sorted(seen)            # the nodes seen forming are the run's servers
    if moment != "server-start":
        assert any(Path(f"/proc/{pid}").exists() for pid in server_pids(tmp_path)), \
            "the killed run left its servers running (the case under test)"

    if after == "next-run":
        # the next real run cleans up first, then runs and removes its own files
        nxt = subprocess.run([sys.executable, "-m", "vkbench", "run", "--cell", json.dumps({**SMALL, "requests": 2000, "repetitions": 1}),
                              "--out", str(tmp_path / "out2"), "--state-dir", str(tmp_path / "state")],
                             env=env, capture_output=True, text=True, timeout=240)
        assert nxt.returncode == 0, nxt.stderr[-2000:]
    else:
        nxt = subprocess.run([sys.executable, "-m", "vkbench", "run", "--cleanup-only", "--state-dir", str(tmp_path / "state")],
                             env=env, capture_output=True, text=True, timeout=120)
        assert nxt.returncode == 0, nxt.stderr[-2000:]
        assert "removed temp dir" in nxt.stdout + nxt.stderr
    assert "Traceback" not in nxt.stderr
    assert_nothing_left(tmp_path, ports)


def test_a_failed_test_leaves_no_run_behind(tmp_path, runs):
    """The `runs` finalizer on its own: a run in the middle of its benchmark (vkbench, the tool and
    the servers alive, as when an assertion fails before the test's own kill) is gone afterwards."""
    child, env = start_run(tmp_path, SMALL, runs)
    wait_for(lambda: tool_running(tmp_path) or child.poll() is not None, 120, "the benchmark")
    assert child.poll() is None, child.stderr.read().decode()[-2000:]
    ports, servers = server_ports(tmp_path), server_pids(tmp_path)
    assert ports and all(Path(f"/proc/{pid}").exists() for pid in servers)
    clean_up_runs(runs, tmp_path / "state", env)
    assert child.poll() is not None
    assert_nothing_left(tmp_path, ports)
