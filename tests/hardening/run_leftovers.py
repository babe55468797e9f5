"""Clean up after a `vkbench run` a hardening test started, whatever the test's outcome.

A test that kills or times out a run (tests/hardening/test_kill9.py, test_password_exposure.py)
must not leave its servers on this shared machine when an assertion fails half-way. The tests
start each run in a session of its own (``start_new_session=True``) with a state dir and a TMPDIR
of their own; :func:`clean_up_runs` then, in a ``finally`` or a finalizer:

1. SIGKILLs each run's process group (vkbench and the benchmark tool it started);
2. reads the server pids and start times from the run's pid files (before step 3 removes them);
3. runs ``vkbench run --cleanup-only --state-dir STATE`` (stops the servers of a dead owner,
   removes the run's vkbench-* temp dirs under TMPDIR);
4. SIGKILLs every recorded server still alive with the same start time (a reused pid is left alone).

(A plain module with a distinctive name: pytest imports test helpers by their bare name.)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from vkbench.topology import procs


def run_processes(tmp_dir: Path) -> list[tuple[int, str]]:
    """(pid, command line) of every live process of the runs given ``TMPDIR=tmp_dir``: its command
    line or its environment names that dir (servers run from it; tools inherit TMPDIR)."""
    marker = str(tmp_dir).encode()
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


def recorded_servers(state_dir: Path) -> list[tuple[int, int | None]]:
    """(pid, start time) of every server the pid files under ``state_dir`` name."""
    servers = []
    for pidfile in state_dir.glob("native-*.json"):
        try:
            record = json.loads(pidfile.read_text())
            servers.append((int(record["pid"]), record.get("start_time")))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return servers


def kill_run(child: subprocess.Popen) -> None:
    """SIGKILL the run's process group (the run was started in a session of its own) and reap it."""
    if child.poll() is None:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        child.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass
    for stream in (child.stdout, child.stderr):
        if stream is not None:
            stream.close()


def clean_up_runs(children: list[subprocess.Popen], state_dir: Path, env: dict[str, str]) -> list[str]:
    """Steps 1-4 above; returns what was still left for step 4 to kill (for the test's report)."""
    for child in children:
        kill_run(child)
    servers = recorded_servers(state_dir)
    subprocess.run([sys.executable, "-m", "vkbench", "run", "--cleanup-only", "--state-dir", str(state_dir)],
                   env=env, capture_output=True, timeout=120)
    killed = []
    for pid, start_time in servers:
        if procs.is_alive(pid, start_time):
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(f"server pid {pid}")
            except ProcessLookupError:
                continue
    deadline = time.monotonic() + 10
    while any(procs.is_alive(pid, start) for pid, start in servers) and time.monotonic() < deadline:
        time.sleep(0.05)
    return killed
