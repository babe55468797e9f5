"""Run one benchmark tool process: bounded in time, output captured, CPU measured exactly."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass

from .tools import ToolCommand


@dataclass
class ToolRun:
    output: str
    exit_code: int
    elapsed_s: float
    cpu_seconds: float          # user + system of the tool and all its threads (wait4 rusage)
    timed_out: bool = False


def run_tools(commands: list[ToolCommand], *, cpus: str | None, timeout: float) -> list[ToolRun]:
    """Start all commands together (several targets read in parallel), wait for all.

    ``os.wait4`` gives each child's own rusage, so the client's CPU is exact even with threads,
    and servers started by the same Python process are not counted.
    """
    started = []
    for cmd in commands:
        argv = (["taskset", "-c", cpus] if cpus else []) + cmd.argv
        sink = tempfile.TemporaryFile()
        env = {**os.environ, **cmd.env}
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
        started.append((proc, sink, time.monotonic()))
    deadline = time.monotonic() + timeout
    results: list[ToolRun] = []
    try:
        for proc, sink, t0 in started:
            # Block in wait4 (no polling: the measuring process stays idle); a timer kills
            # the tool's process group if it overruns.
            remaining = max(0.0, deadline - time.monotonic())
            timed_out = threading.Event()

            def _kill(pgid: int = proc.pid, flag: threading.Event = timed_out) -> None:
                flag.set()
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

            timer = threading.Timer(remaining, _kill)
            timer.daemon = True
            timer.start()
            try:
                _, status, usage = os.wait4(proc.pid, 0)
            finally:
                timer.cancel()
            elapsed = time.monotonic() - t0
            proc.returncode = os.waitstatus_to_exitcode(status)
            sink.seek(0)
            text = sink.read().decode("utf-8", errors="replace")
            sink.close()
            results.append(ToolRun(text, proc.returncode, elapsed, usage.ru_utime + usage.ru_stime, timed_out.is_set()))
    except BaseException:
        for proc, sink, _ in started:
            if proc.returncode is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                    os.waitpid(proc.pid, 0)
                except (ProcessLookupError, ChildProcessError):
                    pass
            sink.close()
        raise
    return results
