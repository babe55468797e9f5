"""`vkbench run` killed with SIGKILL at three moments - while servers start, while the benchmark
runs, while the cluster is being created - and then the next run (or `--cleanup-only`) leaves
no server process, no benchmark process, no bound port, no vkbench-* temp dir and no config
file with the password behind."""

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

from vkbench.topology import procs

pytestmark = pytest.mark.integration

SMALL = {"server": "valkey:9.1.2", "requests": 200000, "keyspace": 1000, "repetitions": 3, "preload": False,
         "tests": ["set"]}


def start_run(tmp_path: Path, cell: dict) -> tuple[subprocess.Popen, dict]:
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir(exist_ok=True)
    child = subprocess.Popen(
        [sys.executable, "-m", "vkbench", "run", "--cell", json.dumps(cell), "--out", str(tmp_path / "out"),
         "--state-dir", str(tmp_path / "state")],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    return child, env


def descendants_and_orphans(tmp_path: Path) -> list[tuple[int, str]]:
    """Every process that belongs to this test's runs: its command line or environment names
    the test's TMPDIR (servers run from it; tools inherit TMPDIR)."""
    marker = str(tmp_path / "tmp").encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker in (entry / "environ").read_bytes() or marker in (entry / "cmdline").read_bytes():
                if (entry / "stat").read_text().split(") ")[-1][0] != "Z":
                    found.append((int(entry.name), procs.process_cmdline(int(entry.name))))
        except OSError:
            continue
    return found


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


def tool_running(tmp_path: Path) -> bool:
    return any("valkey-benchmark" in cmd and "--csv" in cmd for _, cmd in descendants_and_orphans(tmp_path))


def assert_nothing_left(tmp_path: Path, ports: list[int]) -> None:
    deadline = time.monotonic() + 15
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
    "server-start": (SMALL, lambda tmp: server_ports(tmp)),
    "benchmark": (SMALL, lambda tmp: tool_running(tmp)),
    # all three pid files: the servers are up and the cluster is being created
    "cluster-creation": ({**SMALL, "topology": "cluster:3"}, lambda tmp: len(server_ports(tmp)) >= 3),
}


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_sigkill_then_next_run_leaves_nothing(tmp_path, moment):
    cell, reached = MOMENTS[moment]
    child, env = start_run(tmp_path, cell)
    try:
        wait_for(lambda: reached(tmp_path) or child.poll() is not None, 120, moment)
        assert child.poll() is None, child.stderr.read().decode()[-2000:]
    finally:
        os.kill(child.pid, signal.SIGKILL)             # the vkbench process only: no teardown runs
        child.wait()
    ports = server_ports(tmp_path)
    assert any((tmp_path / "tmp").glob("vkbench-*")), "the killed run left its temp dir (the case under test)"

    if moment == "benchmark":
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
