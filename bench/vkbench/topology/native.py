"""The native backend: real server processes on 127.0.0.1, one directory per node.

Per deployment (``with NativeBackend().deploy(spec) as deployment:``)::

    <spec.run_dir>/<node name>/valkey.conf   mode 0600: holds the password, so it never shows in ps
    <spec.run_dir>/<node name>/server.log    the server's log file
    <spec.run_dir>/<node name>/stdio.log     stdout/stderr (config errors appear only here)
    <state dir>/native-<pid>-<port>.json     pid files; state dir = <spec.run_dir>/../.state
                                             unless NativeBackend(state_dir=...) is given

Files of an earlier deployment in the same run_dir are overwritten. Teardown runs on every exit
of the context (success, exception, Ctrl-C, SIGTERM): SHUTDOWN NOSAVE (replicas first), then
SIGTERM, then SIGKILL; pid files removed; ports checked free.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import valkey

from ..errors import MissingBinaryError, ServerStartError
from ..servers import Binary, resolve_server
from ..servers.source_build import sigterm_raises
from . import procs
from .backend import Backend, Deployment, DeploymentSpec, Endpoint
from .cluster_setup import create_cluster
from .model import NodeSpec, render_config_file, server_config
from .readiness import connect, server_identity, wait_ready
from .signals import signals_deferred
from .tls import TlsFiles, require_tls

log = logging.getLogger(__name__)

LISTEN_TIMEOUT_S = 10.0     # from exec to accepting connections; measured 0.04-0.1 s here
START_ATTEMPTS = 3          # a port taken between the probe and the server's bind: new ports, retry


class _PortTaken(Exception):
    """A server could not bind its port: somebody took it after the probe."""


class NativeBackend(Backend):
    name = "native"

    def __init__(self, state_dir: Path | None = None, *, fetch: bool = True, ready_timeout: float = 30.0):
        self.state_dir = state_dir
        self.fetch = fetch                  # False: a binary missing from the cache is an error
        self.ready_timeout = ready_timeout

    def state_dir_for(self, spec: DeploymentSpec) -> Path:
        return self.state_dir or spec.run_dir.parent / ".state"

    def cleanup_stale(self, state_dir: Path) -> list[str]:
        return procs.cleanup_stale(state_dir)

    @contextlib.contextmanager
    def deploy(self, spec: DeploymentSpec) -> Iterator[Deployment]:
        # A TLS cell's source build is built with BUILD_TLS=yes (its own cache entry).
        binary = resolve_server(spec.engine, spec.version, fetch=self.fetch, tls=spec.tls is not None)
        if spec.tls is not None:
            require_tls(binary.path, f"{spec.engine}:{spec.version}")
        state_dir = self.state_dir_for(spec)
        self.cleanup_stale(state_dir)
        if spec.server_cpus and shutil.which("taskset") is None:
            raise MissingBinaryError("taskset is needed to pin servers to CPUs", hint="apt-get install util-linux")
        started: list[procs.ServerProcess] = []
        with sigterm_raises():   # while servers run, SIGTERM unwinds like Ctrl-C: teardown runs
            try:
                began = time.monotonic()
                deployment = self._start(spec, binary, state_dir, started)
                deployment.startup_s = round(time.monotonic() - began, 4)
                yield deployment
            finally:
                with signals_deferred():
                    _teardown(started, spec.password, cluster=spec.topology.is_cluster, tls=spec.tls)

    # -- start ---------------------------------------------------------------------------------

    def _start(self, spec: DeploymentSpec, binary: Binary, state_dir: Path,
               started: list[procs.ServerProcess]) -> Deployment:
        nodes = spec.topology.nodes()
        for attempt in range(1, START_ATTEMPTS + 1):
            ports = procs.allocate_ports(len(nodes), cluster=spec.topology.is_cluster, host=spec.settings.bind)
            try:
                for node in nodes:
                    _start_node(spec, binary, node, ports, state_dir, started)
                _wait_listening(started, spec.password, spec.tls)
                break
            except _PortTaken as exc:
                log.info("attempt %d: %s; retrying with other ports", attempt, exc)
                # The thief may hold the port for good: do not wait for the ports to be free.
                _teardown(started, spec.password, cluster=spec.topology.is_cluster, verify_ports=False, tls=spec.tls)
                started.clear()
                if attempt == START_ATTEMPTS:
                    raise ServerStartError(str(exc), hint="another program keeps taking ports 20000-39999; retry") from None
        endpoints = [Endpoint(p.name, spec.settings.bind, p.port, p.role, p.shard, p.pid) for p in started]
        by_name = {p.name: p for p in started}
        if spec.topology.is_cluster:
            create_cluster(endpoints, spec.password, timeout=self.ready_timeout, tls=spec.tls)
        wait_ready(endpoints, spec.password, spec.topology, timeout=self.ready_timeout,
                   log_tail=lambda e: by_name[e.name].log_tail(), tls=spec.tls)
        version, commit = server_identity(endpoints[0], spec.password, tls=spec.tls)
        from .source_image import check_identity

        if binary.code:      # a source build must report the commit it was built from
            check_identity(spec.engine, spec.version, version, commit, binary.code, str(binary.path))
        return Deployment(
            spec=spec, endpoints=endpoints, server_version=version, server_commit=commit,
            build=binary.as_build(), log_files=[p.log_file for p in started],
        )


def _start_node(spec: DeploymentSpec, binary: Binary, node: NodeSpec, ports: list[int],
                state_dir: Path, started: list[procs.ServerProcess]) -> None:
    """Start one node; it joins ``started`` the moment it exists, so a Ctrl-C at any point still
    tears it down."""
    workdir = (spec.run_dir / node.name).absolute()
    workdir.mkdir(parents=True, exist_ok=True, mode=0o700)
    _clear_server_state(workdir)
    port = ports[node.index]
    primary_port = ports[node.primary_index] if node.primary_index is not None else None
    directives = server_config(
        spec.topology, node, port=port, primary_port=primary_port, settings=spec.settings,
        password=spec.password, workdir=str(workdir), primary_host=spec.settings.bind, tls=spec.tls,
    )
    config = workdir / f"{binary.engine}.conf"
    procs.write_private(config, render_config_file(directives))
    log_file, stdio_file = workdir / "server.log", workdir / "stdio.log"
    log_file.unlink(missing_ok=True)
    command = [str(binary.path), str(config)]
    if spec.server_cpus:
        command = ["taskset", "-c", spec.server_cpus, *command]
    popen = procs.start_server(command, workdir=workdir, stdio_file=stdio_file, env=binary.run_env())
    proc = procs.ServerProcess(node.name, port, node.role, node.shard, workdir, config, log_file, stdio_file, popen)
    started.append(proc)
    procs.write_pidfile(state_dir, proc, binary.path)


# What a server leaves in its dir and would load at the next start: old data (a replica writes
# the synced RDB to disk), or an old cluster's membership. A deployment must start empty.
_SERVER_STATE = ("dump.rdb", "temp-*.rdb", "nodes-*.conf", "appendonly.aof*", "appendonlydir")


def _clear_server_state(workdir: Path) -> None:
    for pattern in _SERVER_STATE:
        for path in workdir.glob(pattern):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()


def _wait_listening(started: list[procs.ServerProcess], password: str, tls: TlsFiles | None = None) -> None:
    """Every server answers PING, or one has exited (port taken: _PortTaken; else ServerStartError)."""
    deadline = time.monotonic() + LISTEN_TIMEOUT_S
    waiting = list(started)
    while waiting:
        for proc in list(waiting):
            if proc.popen.poll() is not None:
                tail = proc.log_tail()
                if "Address already in use" in tail:
                    raise _PortTaken(f"{proc.name} could not bind port {proc.port}")
                raise ServerStartError(
                    f"{proc.name} exited with status {proc.popen.returncode} while starting:\n{tail}",
                    hint=f"read the log above; the config is {proc.config}",
                )
            client = connect("127.0.0.1", proc.port, password, timeout=0.5, tls=tls)
            try:
                client.ping()
                waiting.remove(proc)
            except valkey.exceptions.ValkeyError:
                pass
            finally:
                client.close()
        if waiting and time.monotonic() > deadline:
            proc = waiting[0]
            raise ServerStartError(
                f"{proc.name} does not answer on 127.0.0.1:{proc.port} after {LISTEN_TIMEOUT_S:.0f} s:\n{proc.log_tail()}",
                hint="read the log above; is the machine overloaded?",
            )
        if waiting:
            time.sleep(0.01)


# -- teardown ----------------------------------------------------------------------------------

def _teardown(started: list[procs.ServerProcess], password: str, *, cluster: bool, verify_ports: bool = True,
              tls: TlsFiles | None = None) -> None:
    """Stop everything in ``started``; never raises (it runs while another error may propagate)."""
    if not started:
        return
    # Replicas first: a primary asked to shut down waits for lagging replicas (shutdown-timeout).
    for proc in sorted(started, key=lambda p: p.role != "replica"):
        if proc.popen.poll() is None and not _shutdown_nosave(proc, password, tls):
            # Not listening yet (Ctrl-C during startup) or not answering: no point waiting for it.
            proc.popen.send_signal(signal.SIGTERM)
    killed = procs.stop(started, grace_s=3.0, term_s=3.0)
    if killed:
        log.warning("servers needed SIGKILL: %s", ", ".join(killed))
    for proc in started:
        if proc.pidfile is not None:
            proc.pidfile.unlink(missing_ok=True)
    if not verify_ports:
        return
    ports = [p.port for p in started]
    deadline = time.monotonic() + 2.0
    while (busy := procs.ports_in_use(ports, cluster=cluster)) and time.monotonic() < deadline:
        time.sleep(0.02)
    if busy:
        log.warning("ports still in use after teardown: %s", busy)


def _shutdown_nosave(proc: procs.ServerProcess, password: str, tls: TlsFiles | None = None) -> bool:
    """Ask the server to exit without saving; True when it took the command."""
    client = connect("127.0.0.1", proc.port, password, timeout=2.0, tls=tls)
    try:
        client.ping()
    except valkey.exceptions.ValkeyError:
        client.close()
        return False
    try:
        client.execute_command("SHUTDOWN", "NOSAVE")
    except valkey.exceptions.ConnectionError:
        return True   # expected: the server closes the connection as it exits
    except valkey.exceptions.ValkeyError as exc:
        log.info("SHUTDOWN NOSAVE on %s: %s (will signal)", proc.name, exc)
        return False
    finally:
        client.close()
    return True
