"""Where the deployment password is visible during a real `vkbench run`: /proc/<pid>/cmdline of
every process of the run is sampled while it runs (what `ps` shows).

Servers get it from their 0600 config file, never on argv. The benchmark tool gets it from
REDISCLI_AUTH/VALKEYCLI_AUTH when that build reads it; valkey-benchmark 8.0.1 and
redis-benchmark 7.0.15 do not (they answer NOAUTH), so they take `-a` and the result says
so: tool.password_via == "argv". The test checks the result tells the truth either way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vkbench.results.io import load_result

pytestmark = pytest.mark.integration


def sample(root_pid: int, seen: dict[int, bytes]) -> None:
    """The command line of every process under ``root_pid`` (ppid chain from /proc/*/stat)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(") ", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    tree = {root_pid}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parents.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grew = True
    for pid in tree:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        seen[pid] = max(seen.get(pid, b""), cmd, key=len)


def password_of_run(tmp_path: Path) -> str | None:
    for conf in (tmp_path / "tmp").glob("vkbench-*/*/*.conf"):
        try:
            for line in conf.read_text().splitlines():
                if line.startswith("requirepass "):
                    return line.split(" ", 1)[1].strip().strip('"')
        except OSError:
            continue
    return None


@pytest.mark.parametrize("tool,server", [("valkey-benchmark", "valkey:9.1.2"), ("redis-benchmark", "redis:7.0.15")])
def test_password_in_ps_only_where_the_result_says(tmp_path, tool, server):
    (tmp_path / "tmp").mkdir()
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"))
    cell = {"server": server, "tool": tool, "requests": 30000, "keyspace": 1000, "repetitions": 1, "tests": ["set"]}
    child = subprocess.Popen([sys.executable, "-m", "vkbench", "run", "--cell", json.dumps(cell), "--out", str(tmp_path / "out"),
                              "--state-dir", str(tmp_path / "state")], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen: dict[int, bytes] = {}
    password = None
    deadline = time.monotonic() + 240
    while child.poll() is None and time.monotonic() < deadline:
        sample(child.pid, seen)
        password = password or password_of_run(tmp_path)
        time.sleep(0.01)
    assert child.wait(timeout=30) == 0, child.stderr.read().decode()[-2000:]
    assert password, "the run's server config was never seen"

    result = load_result(next((tmp_path / "out").glob("*.json")))
    via = result["tool"]["password_via"]
    holders = {pid: cmd.replace(b"\0", b" ").decode(errors="replace") for pid, cmd in seen.items()
               if password.encode() in cmd}
    tools_seen = [cmd for cmd in seen.values() if tool.encode() in cmd and b"--csv" in cmd]
    assert tools_seen, "no benchmark process was sampled"
    assert all(tool in cmd for cmd in holders.values()), f"only the benchmark tool may show it: {holders}"
    if via == "argv":
        assert holders, "the result says argv: ps must have shown it"
    else:
        assert via == "env" and holders == {}
    assert password not in result["run"]["command_line"]
    assert password not in json.dumps(result)
