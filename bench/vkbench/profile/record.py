"""Record the server with ``perf record -g`` while a callback runs, and fold the stacks.

``perf`` comes from Debian's ``linux-perf`` (tools/setup/perf.sh); ``VKBENCH_PERF`` names
another binary. Where perf is missing or the kernel does not permit it (not root and
``perf_event_paranoid`` too high, or no perf events in a container), the profile says so and
the run carries on.
"""

from __future__ import annotations

import errno
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, TypeVar

from ..files import write_bytes_atomic
from . import folded

#: Samples per second: prime, so sampling does not lock onto periodic work; low enough that
#: the profiled repetition stays close to an unprofiled one.
FREQUENCY_HZ = 499
ATTACH_S = 0.3          # without --control (old perf): a moment to attach to running processes
ENABLE_TIMEOUT_S = 60.0  # perf attaching and acknowledging "enable", on a loaded machine
STOP_TIMEOUT_S = 60.0
SCRIPT_TIMEOUT_S = 300.0

T = TypeVar("T")


def perf_binary() -> str | None:
    configured = os.environ.get("VKBENCH_PERF")
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    return shutil.which("perf")


def perf_version(perf: str) -> str | None:
    try:
        out = subprocess.run([perf, "version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip().removeprefix("perf version ").strip() or None


def record(pids: list[int], body: Callable[[], T], *, out_file: Path,
           max_bytes: int = folded.MAX_PROFILE_BYTES) -> tuple[dict, T | None]:
    """Run ``body()`` while perf records ``pids``; write folded stacks to ``out_file``.

    Returns (profile block for the result, body's return value). ``body`` always runs, also
    when perf is missing or fails (then the block says why)."""
    perf = perf_binary()
    if not perf:
        return ({"status": "unavailable",
                 "reason": "perf is not installed: run tools/setup/perf.sh (Debian linux-perf)"}, body())
    if not pids:
        return {"status": "unavailable", "reason": "no server process ids (remote engine?)"}, body()
    work = Path(tempfile.mkdtemp(prefix="vkbench-perf-"))
    data = work / "perf.data"
    log = work / "perf.log"
    try:
        argv = [perf, "record", "-g", "-F", str(FREQUENCY_HZ), "-o", str(data), "-p", ",".join(map(str, pids))]
        ctl, ack = work / "ctl", work / "ack"
        os.mkfifo(ctl)
        os.mkfifo(ack)
        # Start with events disabled and enable them over the control FIFO: perf attaching to
        # several processes on a loaded machine can take longer than a short repetition, and
        # the acknowledgement says exactly when sampling runs.
        proc = _start(argv + ["-D", "-1", "--control", f"fifo:{ctl},{ack}"], log)
        fds: tuple[int, int] | None = None
        # From here on perf runs in a session of its own (a Ctrl-C does not reach it): whatever
        # happens - an OSError on the FIFOs, Ctrl-C while it attaches, the body failing - it is
        # stopped and the FIFO fds closed before this returns.
        try:
            fds = _enable(proc, ctl, ack)
            if fds is None and proc.poll() is not None and "control" in log.read_text(errors="replace"):
                proc = _start(argv, log)   # a perf without --control: give it a moment to attach
                time.sleep(ATTACH_S)
            if proc.poll() is not None:   # refused (permissions, no such pid, no perf events)
                refused = {"status": "failed", "reason": _why(log, proc.returncode)}
                value = None
            else:
                refused = None
                value = body()
        finally:
            stop_perf(proc)
            for fd in fds or ():
                os.close(fd)
        if refused is not None:
            return refused, body()
        if proc.returncode not in (0, -signal.SIGINT, 130) or not data.exists():
            return {"status": "failed", "reason": _why(log, proc.returncode)}, value
        try:
            script = subprocess.run([perf, "script", "-i", str(data), "-F", "comm,pid,tid,ip,sym,dso"],
                                    capture_output=True, text=True, errors="replace", timeout=SCRIPT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return {"status": "failed", "reason": f"perf script took more than {SCRIPT_TIMEOUT_S:.0f} s"}, value
        if script.returncode != 0:
            return {"status": "failed", "reason": "perf script: " + _tail(script.stderr)}, value
        stacks = folded.collapse(script.stdout)
        text, merged = folded.render(stacks, max_bytes)
        write_bytes_atomic(out_file, text.encode("utf-8"))
        samples = sum(stacks.values())
        return {
            "status": "recorded" if samples else "failed",
            "reason": None if samples else "perf recorded no samples",
            "bytes": len(text.encode()),
            "samples": samples,
            "stacks": len(stacks),
            "truncated_samples": merged,
            "frequency_hz": FREQUENCY_HZ,
            "perf_version": perf_version(perf),
            "symbols": symbols(pids[0], script.stdout),
        }, value
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _start(argv: list[str], log: Path) -> subprocess.Popen:
    with open(log, "wb") as log_fh:
        return subprocess.Popen(argv, stdout=log_fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)


def _enable(proc: subprocess.Popen, ctl: Path, ack: Path) -> tuple[int, int] | None:
    """Send ``enable`` on perf's control FIFO and wait for its ``ack``; the open fds, or None."""
    deadline = time.monotonic() + ENABLE_TIMEOUT_S
    ctl_fd = None
    while ctl_fd is None:
        if proc.poll() is not None or time.monotonic() > deadline:
            return None
        try:
            ctl_fd = os.open(ctl, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:   # ENXIO: perf has not opened its end yet
                raise
            time.sleep(0.02)
    ack_fd = None
    try:
        ack_fd = os.open(ack, os.O_RDONLY | os.O_NONBLOCK)
        os.write(ctl_fd, b"enable\n")
        received = b""
        while b"ack" not in received:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or proc.poll() is not None:
                break
            ready, _, _ = select.select([ack_fd], [], [], min(remaining, 0.5))
            if ready:
                received += os.read(ack_fd, 64)
    except BaseException:
        # The caller only closes what this returns: nothing is returned now.
        for fd in (ctl_fd, ack_fd):
            if fd is not None:
                os.close(fd)
        raise
    return ctl_fd, ack_fd


def stop_perf(proc: subprocess.Popen) -> None:
    """SIGINT makes perf (record or stat) write its data and exit; escalate if it does not exit.
    perf runs in its own process group (``start_new_session``)."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        proc.wait()


def _tail(text: str, lines: int = 4) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:] if line.strip()) or "no output"


def _why(log: Path, code: int | None) -> str:
    text = log.read_text(errors="replace") if log.exists() else ""
    hint = ""
    if "perf_event_paranoid" in text or "Permission" in text or "not permitted" in text:
        hint = " (run as root or lower /proc/sys/kernel/perf_event_paranoid)"
    return f"perf record exited with {code}: {_tail(text)}{hint}"


def symbols(pid: int, perf_script: str) -> dict:
    """Is the server binary stripped, and how much of its own code did perf name?"""
    exe = f"/proc/{pid}/exe"
    try:
        binary = os.readlink(exe)
    except OSError:
        binary = None
    info = folded.elf_symbols(exe)
    base = os.path.basename(binary or "")
    own = resolved = 0
    if base:
        for line in perf_script.splitlines():
            if line.endswith(f"/{base})") or line.endswith(f"({base})"):
                own += 1
                resolved += "[unknown]" not in line
    return {"binary": binary, **info, "resolved_share": round(resolved / own, 4) if own else None}


__all__ = ["record", "perf_binary", "perf_version", "FREQUENCY_HZ"]
