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
from run_leftovers import clean_up_runs, run_processes

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


def watch_run(tmp_path: Path, cell: dict, env: dict[str, str], *, interval: float,
              timeout: float = 240) -> tuple[dict[int, bytes], str]:
    """Run the cell, sampling every process of the run until it exits; the samples and the run's
    password. However it ends (a timeout, a failed assertion), the run and its servers are gone
    afterwards (run_leftovers.clean_up_runs: its process group killed, --cleanup-only)."""
    child = subprocess.Popen([sys.executable, "-m", "vkbench", "run", "--cell", json.dumps(cell), "--out", str(tmp_path / "out"),
                              "--state-dir", str(tmp_path / "state")], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             start_new_session=True)
    try:
        seen: dict[int, bytes] = {}
        password = None
        deadline = time.monotonic() + timeout
        while child.poll() is None and time.monotonic() < deadline:
            sample(child.pid, seen)
            password = password or password_of_run(tmp_path)
            time.sleep(interval)
        assert child.poll() is not None, f"the run did not end within {timeout:.0f} s"
        assert child.wait() == 0, child.stderr.read().decode()[-2000:]
        assert password, "the run's server config was never seen"
        return seen, password
    finally:
        clean_up_runs([child], tmp_path / "state", env)


def test_a_run_that_overruns_is_stopped_and_cleaned_up(tmp_path):
    """watch_run's timeout: the run is still measuring when the time is up. The test fails with a
    clear message, and the run, its servers, its temp dir and its pid files are gone."""
    (tmp_path / "tmp").mkdir()
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"))
    cell = {"server": "valkey:9.1.2", "requests": 5_000_000, "keyspace": 1000, "repetitions": 3, "tests": ["set"],
            "preload": False}
    with pytest.raises(AssertionError, match="did not end within"):
        watch_run(tmp_path, cell, env, interval=0.05, timeout=8)
    assert run_processes(tmp_path / "tmp") == []
    assert list((tmp_path / "tmp").iterdir()) == [] and list((tmp_path / "state").glob("native-*.json")) == []


@pytest.mark.parametrize("tool,server", [("valkey-benchmark", "valkey:9.1.2"), ("redis-benchmark", "redis:7.0.15")])
def test_password_in_ps_only_where_the_result_says(tmp_path, tool, server):
    (tmp_path / "tmp").mkdir()
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"))
    # 100000 requests: the tool runs a second or more, so the sampler (one /proc scan per pass, slow
    # on a loaded machine) sees it many times; 30000 ran for a fraction of a second.
    cell = {"server": server, "tool": tool, "requests": 100000, "keyspace": 1000, "repetitions": 1, "tests": ["set"]}
    seen, password = watch_run(tmp_path, cell, env, interval=0.01)

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


# -- the env branch: no released benchmark tool reads a password variable ------------------------

#: A stand-in for valkey-benchmark (a stub, acceptable for this branch only: no valkey-benchmark
#: or redis-benchmark reads REDISCLI_AUTH/VALKEYCLI_AUTH - see AUTH_ENV_VARS in
#: vkbench/runner/tools.py - so the env branch cannot be reached with a real tool). It speaks to
#: the real server with the Python client and prints valkey-benchmark's --csv output.
#: STUB_AUTH=env: reads the password from VALKEYCLI_AUTH, as valkey-cli does.
#: STUB_AUTH=help-only: its --help names VALKEYCLI_AUTH but it ignores the variable (takes -a only).
#: Every start appends its own /proc/self/cmdline (hex) to STUB_CMDLINES: what `ps` shows for it,
#: recorded by the process itself, so the tests need not catch a short-lived process in a sample.
STUB = '''#!{python}
"""Stub valkey-benchmark for tests/hardening/test_password_exposure.py (see STUB there)."""
import os, sys, time
import valkey

args = sys.argv[1:]
with open("/proc/self/cmdline", "rb") as own, open(os.environ["STUB_CMDLINES"], "a") as record:
    record.write(own.read().hex() + "\\n")
if "--help" in args:
    print("Usage: valkey-benchmark [OPTIONS]\\n -a <password>  Password. You can also use the VALKEYCLI_AUTH environment variable.")
    sys.exit(0)
if "--version" in args:
    print("valkey-benchmark 8.0.1 (stub)")
    sys.exit(0)
opts, i = {{}}, 0
while i < len(args):
    if args[i] in ("-h", "-p", "-a", "-t", "-c", "-P", "-d", "-n", "-r", "--threads", "--user"):
        opts[args[i]] = args[i + 1]
        i += 2
    else:
        i += 1
password = opts.get("-a")
if os.environ["STUB_AUTH"] == "env" and password is None:
    password = os.environ.get("VALKEYCLI_AUTH")
with open(os.environ["STUB_LOG"], "a") as log:
    log.write(("argv" if "-a" in opts else "env" if password else "none") + "\\n")
client = valkey.Valkey(host=opts["-h"], port=int(opts["-p"]), password=password, socket_timeout=10)
try:
    client.ping()
except valkey.exceptions.AuthenticationError as exc:
    print(f"NOAUTH {{exc}}", file=sys.stderr)
    sys.exit(1)
except valkey.exceptions.ResponseError as exc:
    print(str(exc), file=sys.stderr)
    sys.exit(1)
n, pipeline = int(opts.get("-n", "1000")), int(opts.get("-P", "1"))
print('"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"')
for test in opts.get("-t", "ping").split(","):
    name = {{"set": "SET", "get": "GET"}}.get(test, "PING_INLINE")
    started, done = time.perf_counter(), 0
    while done < n:
        pipe = client.pipeline(transaction=False)
        for k in range(min(pipeline, n - done)):
            if name == "SET":
                pipe.set(f"key:{{done + k}}", "x" * int(opts.get("-d", "3")))
            elif name == "GET":
                pipe.get(f"key:{{done + k}}")
            else:
                pipe.ping()
        pipe.execute()
        done += min(pipeline, n - done)
    elapsed = time.perf_counter() - started
    ms = elapsed * 1000 / max(n / pipeline, 1)
    print(f'"{{name}}","{{n / elapsed:.2f}}","{{ms:.3f}}","{{ms / 2:.3f}}","{{ms:.3f}}","{{ms * 1.5:.3f}}","{{ms * 2:.3f}}","{{ms * 3:.3f}}"')
'''


def run_with_stub(tmp_path: Path, mode: str) -> tuple[dict, dict[int, bytes], str, list[str], list[bytes]]:
    """The run's result, the sampled command lines, the password, how the stub got the password
    each time it ran (STUB_LOG) and the stub's own command lines (STUB_CMDLINES)."""
    stub = tmp_path / "bin" / "valkey-benchmark"
    stub.parent.mkdir()
    stub.write_text(STUB.format(python=sys.executable))
    stub.chmod(0o755)
    (tmp_path / "tmp").mkdir()
    log, cmdlines = tmp_path / "stub.log", tmp_path / "stub.cmdlines"
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"), VKBENCH_TOOL_VALKEY_BENCHMARK=str(stub), STUB_AUTH=mode,
               STUB_LOG=str(log), STUB_CMDLINES=str(cmdlines))
    for var in ("VALKEYCLI_AUTH", "REDISCLI_AUTH"):
        env.pop(var, None)
    cell = {"server": "valkey:9.1.2", "tool": "valkey-benchmark", "requests": 2000, "keyspace": 100, "repetitions": 1,
            "tests": ["set"], "preload": False}
    seen, password = watch_run(tmp_path, cell, env, interval=0.005)
    result = load_result(next((tmp_path / "out").glob("*.json")))
    return result, seen, password, log.read_text().split(), [bytes.fromhex(h) for h in cmdlines.read_text().split()]


def test_a_tool_that_reads_the_variable_gets_the_password_from_the_environment(tmp_path):
    result, seen, password, how, own = run_with_stub(tmp_path, "env")
    assert result["tool"]["password_via"] == "env"
    assert how and set(how) == {"env"}, how                  # the probe and the measured run: never -a
    stub_cmds = [cmd for cmd in own if b"bin/valkey-benchmark" in cmd and b"--csv" in cmd]
    assert stub_cmds, f"the measured run's tool never started: {own}"
    # /proc/<pid>/cmdline: nowhere, neither in the stub's own record nor in any sampled process
    assert [cmd for cmd in [*own, *seen.values()] if password.encode() in cmd] == []
    assert password not in json.dumps(result)


def test_a_help_text_that_claims_the_variable_is_not_believed(tmp_path):
    """--help names VALKEYCLI_AUTH but the tool ignores it: the probe against the server fails
    (NOAUTH), so the run uses -a and the result says argv."""
    result, seen, password, how, own = run_with_stub(tmp_path, "help-only")
    assert result["tool"]["password_via"] == "argv"
    assert how[0] == "none" and set(how[1:]) == {"argv"}, how  # the probe, then -a
    assert any(password.encode() in cmd for cmd in own), own   # the stub's own cmdline shows it
    holders = [cmd for cmd in [*own, *seen.values()] if password.encode() in cmd]
    assert all(b"bin/valkey-benchmark" in cmd for cmd in holders), holders
