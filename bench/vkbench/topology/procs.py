"""Server processes on this machine: free ports, start, stop, pid files, leftovers of killed runs.

Pid files live in a *state dir* (the native backend uses ``<run_dir>/../.state`` unless it is
given one). Each is ``native-<owner pid>-<port>.json`` and names the server's pid and start time
and the pid and start time of the Python process that owns it. :func:`cleanup_stale` kills the
servers of owners that are gone (a SIGKILLed run) and never touches a live owner's servers.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import NoFreePortError

log = logging.getLogger(__name__)

PORT_RANGE = (20000, 30000)   # below the usual ephemeral range, so outgoing connections do not take them
CLUSTER_BUS_OFFSET = 10000    # the cluster bus listens on port + 10000 (30000-39999 here)
SERVER_NAMES = ("valkey-server", "redis-server")


# -- ports -------------------------------------------------------------------------------------

def _bind(port: int, host: str = "127.0.0.1") -> socket.socket | None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # The servers bind with SO_REUSEADDR, so a port with only TIME_WAIT connections is usable.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        return None
    return sock


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    sock = _bind(port, host)
    if sock is None:
        return False
    sock.close()
    return True


def allocate_ports(count: int, *, cluster: bool, host: str = "127.0.0.1",
                   port_range: tuple[int, int] | None = None) -> list[int]:
    """``count`` distinct free ports (and free bus ports for a cluster), probed together.

    All probe sockets stay open until every port is chosen, so no port is handed out twice. A
    port can still be taken between the probe and the server's bind: the caller retries then.
    """
    _check_host_bindable(host)
    port_range = port_range or configured_port_range()
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        for _ in range(2000):
            if len(ports) == count:
                return ports
            port = random.randrange(*port_range)
            if port in ports:
                continue
            socks = [_bind(port, host)]
            if cluster:
                socks.append(_bind(port + CLUSTER_BUS_OFFSET, host))
            if all(socks):
                ports.append(port)
                held += [s for s in socks if s]
            else:
                for s in socks:
                    if s:
                        s.close()
        raise NoFreePortError(
            f"found only {len(ports)} of {count} free port(s) on {host} in {port_range[0]}-{port_range[1] - 1}"
            + (f" (with their cluster bus ports +{CLUSTER_BUS_OFFSET})" if cluster else ""),
            hint="`ss -ltn` shows what holds them; stop leftovers with `vkbench run --cleanup-only`, then retry")
    finally:
        for sock in held:
            sock.close()


def _check_host_bindable(host: str) -> None:
    """One listening socket on port 0 and one connection to it first: with the loopback
    interface down (a network namespace, a container without networking) a bind may even work
    but nothing can connect, and every server would then "not answer" after its timeout."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
            server.bind((host, 0))
            server.listen(1)
            with socket.create_connection(server.getsockname(), timeout=5):
                pass
    except OSError as exc:
        raise NoFreePortError(
            f"no TCP port can be bound and reached on {host}: {exc.strerror or exc}",
            hint=f"the servers listen on {host}: bring the loopback interface up (`ip link set lo up`) "
                 "or run where it is up (not in a network namespace without it)") from None


def configured_port_range() -> tuple[int, int]:
    """PORT_RANGE, or ``VKBENCH_PORT_RANGE=LOW-HIGH`` (inclusive): where a machine shares
    20000-29999 with something else (and for tests that exhaust a range of one port)."""
    text = os.environ.get("VKBENCH_PORT_RANGE", "").strip()
    if not text:
        return PORT_RANGE
    low, sep, high = text.partition("-")
    try:
        bounds = (int(low), int(high) + 1)
    except ValueError:
        bounds = (0, 0)
    if not sep or not 1024 <= bounds[0] < bounds[1] <= 65536 - CLUSTER_BUS_OFFSET:
        from ..errors import UsageError

        raise UsageError(f"VKBENCH_PORT_RANGE={text!r} is not LOW-HIGH within 1024-{65535 - CLUSTER_BUS_OFFSET}",
                         hint="e.g. VKBENCH_PORT_RANGE=20000-29999 (cluster bus ports are +10000)")
    return bounds


def ports_in_use(ports: list[int], *, cluster: bool, host: str = "127.0.0.1") -> list[int]:
    all_ports = ports + ([p + CLUSTER_BUS_OFFSET for p in ports] if cluster else [])
    return [p for p in all_ports if not port_is_free(p, host)]


# -- /proc -------------------------------------------------------------------------------------

def process_start_time(pid: int) -> int | None:
    """Start time in clock ticks since boot (field 22 of /proc/<pid>/stat): tells a reused pid apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    return int(fields[19]) if len(fields) > 19 and fields[0] != "Z" else None


def process_cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def is_alive(pid: int, start_time: int | None) -> bool:
    current = process_start_time(pid)
    return current is not None and (start_time is None or current == start_time)


# -- one server ----------------------------------------------------------------------------------

@dataclass
class ServerProcess:
    name: str
    port: int
    role: str
    shard: int
    workdir: Path
    config: Path
    log_file: Path
    stdio_file: Path
    popen: subprocess.Popen
    pidfile: Path | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def log_tail(self, lines: int = 15) -> str:
        """Last lines of the server log and of stdout/stderr (config errors only appear there)."""
        parts = []
        for path in (self.log_file, self.stdio_file):
            try:
                text = path.read_text(errors="replace").strip()
            except OSError:
                continue
            if text:
                parts.append(f"--- {path} ---\n" + "\n".join(text.splitlines()[-lines:]))
        return "\n".join(parts) or "(no log output)"


def write_private(path: Path, text: str) -> None:
    """Write ``text`` readable by the owner only (the config holds the password)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)   # an existing file keeps its old mode otherwise
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def start_server(command: list[str], *, workdir: Path, stdio_file: Path, env: dict[str, str]) -> subprocess.Popen:
    """Start a server in its own session: a Ctrl-C on the terminal reaches us, not the servers,
    so they are stopped in order (SHUTDOWN NOSAVE) by the teardown."""
    with open(stdio_file, "wb") as stdio:
        return subprocess.Popen(
            command, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=stdio,
            stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
        )


def stop(processes: list[ServerProcess], *, grace_s: float = 3.0, term_s: float = 3.0) -> list[str]:
    """Wait up to ``grace_s`` for processes already asked to exit, then SIGTERM, then SIGKILL.

    Returns the names of processes that needed SIGKILL. Reaps every child.
    """
    _wait_all(processes, grace_s)
    remaining = [p for p in processes if p.popen.poll() is None]
    for proc in remaining:
        _signal(proc.popen, signal.SIGTERM)
    _wait_all(remaining, term_s)
    killed = []
    for proc in remaining:
        if proc.popen.poll() is None:
            _signal(proc.popen, signal.SIGKILL)
            killed.append(proc.name)
    _wait_all(remaining, 5.0)
    return killed


def _wait_all(processes: list[ServerProcess], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for proc in processes:
        try:
            proc.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass


def _signal(popen: subprocess.Popen, sig: int) -> None:
    try:
        popen.send_signal(sig)
    except ProcessLookupError:
        pass


# -- pid files and leftovers -------------------------------------------------------------------

def write_pidfile(state_dir: Path, proc: ServerProcess, binary: Path) -> Path:
    state_dir.mkdir(parents=True, exist_ok=True)
    record = {
        "pid": proc.pid, "start_time": process_start_time(proc.pid),
        "owner_pid": os.getpid(), "owner_start_time": process_start_time(os.getpid()),
        "node": proc.name, "port": proc.port, "binary": str(binary), "workdir": str(proc.workdir),
    }
    path = state_dir / f"native-{os.getpid()}-{proc.port}.json"
    # Written aside and renamed: a concurrent cleanup_stale never reads a half-written file.
    partial = state_dir / f".{path.name}.partial"
    partial.write_text(json.dumps(record, indent=2) + "\n")
    os.replace(partial, path)
    proc.pidfile = path
    return path


def _is_our_server(record: dict) -> bool:
    """The pid is still the server we started: same start time, and its command line names a
    valkey/redis server or our binary (the server rewrites its title to ``<path> host:port``)."""
    pid = int(record["pid"])
    if not is_alive(pid, record.get("start_time")):
        return False
    cmdline = process_cmdline(pid)
    return any(name in cmdline for name in SERVER_NAMES) or record.get("binary", "\0") in cmdline


def cleanup_stale(state_dir: Path, *, term_s: float = 3.0) -> list[str]:
    """Kill servers whose owning process is gone and remove their pid files; describe each."""
    removed: list[str] = []
    if not state_dir.is_dir():
        return removed
    for path in sorted(state_dir.glob("native-*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            path.unlink(missing_ok=True)
            removed.append(f"unreadable pid file {path.name}")
            continue
        if is_alive(int(record.get("owner_pid", 0)), record.get("owner_start_time")):
            continue   # a run in progress (maybe another engineer's): not ours to touch
        what = f"{record.get('node')} pid {record.get('pid')} port {record.get('port')}"
        if _is_our_server(record):
            _kill(int(record["pid"]), record.get("start_time"), term_s)
            removed.append(f"killed leftover server {what}")
        else:
            removed.append(f"removed pid file of exited server {what}")
        path.unlink(missing_ok=True)
    for line in removed:
        log.info("stale cleanup: %s", line)
    return removed


def _kill(pid: int, start_time: int | None, term_s: float) -> None:
    """SIGTERM, then SIGKILL after ``term_s``. Not our child: poll /proc instead of waitpid."""
    for sig, wait_s in ((signal.SIGTERM, term_s), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if not is_alive(pid, start_time):
                return
            time.sleep(0.02)
