"""Output of a child process, bounded: streamed to a file up to a cap, never read whole.

A benchmark tool (or anything put in its place through ``VKBENCH_TOOL_<NAME>``) can print
without end: read whole, 20 s of that were a 2 GB file and 6 GB of memory. Here the output
goes through a pipe into a file, at most ``limit`` bytes; one byte more and the child's whole
process group is killed and the overflow recorded. Nothing past the cap is ever read into
memory or written to disk.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import threading
import time
from typing import BinaryIO

#: What a probe (``--version``, ``--help``, one PING) may print: real tools print a few KiB.
PROBE_LIMIT = 1 << 20


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class OutputPump:
    """Copies a child's output pipe into ``sink`` (an unbuffered file) on a thread of its own,
    up to ``limit`` bytes; past it the child's process group is killed (it was started with
    ``start_new_session``). ``error`` holds an OSError of the sink (a full disk), re-raised by
    :meth:`join`."""

    CHUNK = 1 << 16

    def __init__(self, pipe: BinaryIO, sink: BinaryIO, limit: int, pid: int):
        self.pipe, self.sink, self.limit, self.pid = pipe, sink, limit, pid
        self.written = 0
        self.overflowed = False
        self.error: OSError | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        fd, out = self.pipe.fileno(), self.sink.fileno()
        try:
            while True:
                chunk = os.read(fd, self.CHUNK)
                if not chunk:
                    return
                room = self.limit - self.written
                if room > 0:
                    part = chunk[:room]
                    view = memoryview(part)
                    while view:
                        view = view[os.write(out, view):]
                    self.written += len(part)
                if len(chunk) > room:
                    self.overflowed = True
                    kill_group(self.pid)
                    return
        except OSError as exc:       # the sink's disk is full, or past the file-size limit
            self.error = exc
            kill_group(self.pid)
        finally:
            self.pipe.close()

    def join(self, timeout: float = 30.0) -> None:
        """Wait for the copy to end (the child is gone, so the pipe ends; a grandchild that kept
        it open is not waited for past ``timeout``)."""
        self.thread.join(timeout)
        if self.error is not None:
            raise self.error


def run_capped(argv: list[str], *, timeout: float, limit: int = PROBE_LIMIT, env: dict[str, str] | None = None,
               stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    """``subprocess.run(argv, capture_output=True, text=True, timeout=...)`` with at most
    ``limit`` bytes kept of stdout and of stderr each: past it the process group is killed and
    the output ends there (returncode -9). Raises subprocess.TimeoutExpired like run()."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=stdin, env=env,
                            start_new_session=True)
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    kept = {out_fd: bytearray(), err_fd: bytearray()}
    deadline = time.monotonic() + timeout
    try:
        with selectors.DefaultSelector() as selector:
            for stream in (proc.stdout, proc.stderr):
                selector.register(stream, selectors.EVENT_READ)
            while selector.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    kill_group(proc.pid)
                    proc.wait()
                    raise subprocess.TimeoutExpired(argv, timeout)
                for key, _ in selector.select(min(remaining, 1.0)):
                    chunk = os.read(key.fd, 1 << 16)
                    buffer = kept[key.fd]
                    if not chunk:
                        selector.unregister(key.fileobj)
                        continue
                    buffer += chunk[: max(0, limit - len(buffer))]
                    if len(buffer) >= limit:
                        kill_group(proc.pid)
                        selector.unregister(key.fileobj)
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except BaseException:
        kill_group(proc.pid)
        proc.wait()
        raise
    finally:
        proc.stdout.close()
        proc.stderr.close()
    out, err = bytes(kept[out_fd]), bytes(kept[err_fd])
    return subprocess.CompletedProcess(argv, proc.returncode, out.decode("utf-8", errors="replace"),
                                       err.decode("utf-8", errors="replace"))
