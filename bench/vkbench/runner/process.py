"""Run one benchmark tool process: bounded in time and in output, CPU measured exactly.

The output streams through a pipe into a temporary file, at most ``output_limit`` bytes
(:class:`vkbench.capped_output.OutputPump`): a tool that prints without end is killed at the
cap, and only that much is ever read back."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass

from ..capped_output import OutputPump
from .tools import ToolCommand

#: Default cap on one tool process's output (stdout and stderr together). valkey-benchmark's
#: --csv output is a few KiB, its progress lines over a 600 s run about 150 KiB, memtier's with
#: --hide-histogram and --print-all-runs a few KiB: 4 MiB is 25 times the largest seen, and
#: eleven capped files still fit in the 64 MiB a result's raw folder may bring into the history.
DEFAULT_OUTPUT_LIMIT = 4 * 1024 * 1024


@dataclass
class ToolRun:
    output: str
    exit_code: int
    elapsed_s: float
    cpu_seconds: float          # user + system of the tool and all its threads (wait4 rusage)
    timed_out: bool = False
    aborted: str | None = None  # the output line that made the watchdog stop the tool early
    output_limit: int | None = None   # set when the tool printed more than this and was killed for it


#: How often the watchdog reads new output of a running tool (it sleeps in between).
WATCH_INTERVAL_S = 0.25


def _watch(proc: subprocess.Popen, sink, pattern: re.Pattern[str], found: list[str], done: threading.Event) -> None:
    """Stop the tool as soon as its output shows a failure it would otherwise sit out until the
    timeout (memtier keeps running after ``authentication failed``). Reads with pread, so the
    sink's offset is untouched."""
    offset, tail = 0, b""
    while not done.wait(WATCH_INTERVAL_S):
        try:
            chunk = os.pread(sink.fileno(), 1 << 20, offset)
        except (OSError, ValueError):
            return
        if not chunk:
            continue
        offset += len(chunk)
        text = (tail + chunk).decode("utf-8", errors="replace").replace("\r", "\n")
        match = pattern.search(text)
        if match:
            found.append(match.group(0).strip())
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return
        tail = chunk[-4096:]  # a line split across two reads still matches


def run_tools(commands: list[ToolCommand], *, cpus: str | None, timeout: float,
              output_limit: int = DEFAULT_OUTPUT_LIMIT) -> list[ToolRun]:
    """Start all commands together (several targets read in parallel), wait for all.

    ``os.wait4`` gives each child's own rusage, so the client's CPU is exact even with threads,
    and servers started by the same Python process are not counted. ``timeout`` bounds the
    whole call; ``output_limit`` each tool's output (see the module doc).
    """
    started = []
    for cmd in commands:
        argv = (["taskset", "-c", cpus] if cpus else []) + cmd.argv
        sink = tempfile.TemporaryFile(buffering=0)
        env = {**os.environ, **cmd.env}
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
        pump = OutputPump(proc.stdout, sink, output_limit, proc.pid)
        watch = None
        if cmd.fatal is not None:
            found: list[str] = []
            done = threading.Event()
            thread = threading.Thread(target=_watch, args=(proc, sink, cmd.fatal, found, done), daemon=True)
            thread.start()
            watch = (found, done, thread)
        started.append((proc, sink, time.monotonic(), watch, pump))
    deadline = time.monotonic() + timeout
    results: list[ToolRun] = []
    try:
        for proc, sink, t0, watch, pump in started:
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
            aborted = None
            if watch is not None:
                watch[1].set()
                watch[2].join()
                aborted = watch[0][0] if watch[0] else None
            proc.returncode = os.waitstatus_to_exitcode(status)
            pump.join(5.0)      # the pipe ends with the tool (a helper it left holding it is not waited for)
            sink.seek(0)
            text = sink.read(output_limit).decode("utf-8", errors="replace")
            sink.close()
            results.append(ToolRun(text, proc.returncode, elapsed, usage.ru_utime + usage.ru_stime, timed_out.is_set(),
                                   aborted, output_limit if pump.overflowed else None))
    except BaseException:
        for proc, sink, _, watch, pump in started:
            if watch is not None:
                watch[1].set()
            if proc.returncode is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                    os.waitpid(proc.pid, 0)
                except (ProcessLookupError, ChildProcessError):
                    pass
            pump.thread.join(5.0)
            sink.close()
        raise
    return results
