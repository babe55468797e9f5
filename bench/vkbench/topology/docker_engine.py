"""The docker CLI as vkbench drives it, and what the engine tells about its machine.

The compose backend (compose.py) and the source-build images (source_image.py) talk to the engine
only through :class:`Docker`. It lives apart from the stack logic so that callers can inject
another one (``ComposeBackend(docker=...)``): tests pass a fake engine instead of patching module
globals. The engine's machine fingerprint (for a remote ``DOCKER_HOST``) is read through the same
wrapper, so it lives here too.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import signal
import subprocess
from collections.abc import Callable

from ..errors import ContainerEngineError

ENGINE_HINT = "run tools/setup/containers.sh and source tools/containers-env.sh, or set DOCKER_HOST"
ENGINE_CHECK_TIMEOUT_S = 30.0    # `docker version` over ssh:// takes a few seconds


class EngineTimeout(ContainerEngineError):
    """A docker/compose call that did not return in time (its process group was killed)."""


def engine_is_local() -> bool:
    """Containers share this machine's /proc (pids, CPU sampling): unix socket, not ssh/tcp."""
    host = os.environ.get("DOCKER_HOST", "")
    return host == "" or host.startswith("unix://")


class Docker:
    """The docker CLI, run in its own session so a Ctrl-C reaches vkbench, not the engine calls
    (teardown then runs its own ``down``)."""

    def __init__(self, env: dict[str, str] | None = None):
        self.env = env

    def run(self, *args: str, timeout: float, check: bool = True) -> subprocess.CompletedProcess:
        try:
            child = subprocess.Popen(
                ["docker", *args], env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, start_new_session=True,
            )
        except FileNotFoundError:
            raise ContainerEngineError("the docker CLI is not on PATH", hint=ENGINE_HINT) from None
        try:
            stdout, stderr = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            # The whole session: `docker compose` runs plugins and helpers of its own.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            raise EngineTimeout(
                f"`docker {' '.join(args[:3])} ...` did not finish within {timeout:.0f} s",
                hint="is the engine overloaded or hung? " + ENGINE_HINT,
            ) from None
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            raise
        done = subprocess.CompletedProcess(child.args, child.returncode, stdout, stderr)
        if check and done.returncode != 0:
            raise ContainerEngineError(
                f"`docker {shlex.join(args)}` failed (exit {done.returncode}): {tail(done.stderr or done.stdout)}",
                hint=ENGINE_HINT,
            )
        return done

    def check_engine(self) -> str:
        """The engine's version; ContainerEngineError with the setup hint when unreachable."""
        where = os.environ.get("DOCKER_HOST") or "the default socket /var/run/docker.sock"
        done = self.run("version", "--format", "{{.Server.Version}}", timeout=ENGINE_CHECK_TIMEOUT_S, check=False)
        if done.returncode != 0 or not done.stdout.strip():
            raise ContainerEngineError(f"no container engine answers at {where}: {tail(done.stderr)}", hint=ENGINE_HINT)
        compose = self.run("compose", "version", "--short", timeout=ENGINE_CHECK_TIMEOUT_S, check=False)
        if compose.returncode != 0:
            raise ContainerEngineError(f"docker compose (v2 plugin) is missing: {tail(compose.stderr)}", hint=ENGINE_HINT)
        return done.stdout.strip()

    def containers(self, *filters: str) -> list[dict[str, str]]:
        """``docker ps -a`` rows: id, service, project, state, run, owner."""
        fmt = "\t".join(['{{.ID}}', '{{.Label "com.docker.compose.service"}}', '{{.Label "com.docker.compose.project"}}',
                         '{{.State}}', '{{.Label "vkbench.run"}}', '{{.Label "vkbench.owner"}}'])
        args = ["ps", "-a", "--no-trunc", "--format", fmt]
        for f in filters:
            args += ["--filter", f]
        rows = []
        for line in self.run(*args, timeout=60).stdout.splitlines():
            parts = line.split("\t")
            if len(parts) == 6:
                rows.append(dict(zip(("id", "service", "project", "state", "run", "owner"), parts)))
        return rows


# Makes the Docker of a stack from its environment (None: this process's); ComposeBackend takes one.
DockerFactory = Callable[[dict[str, str] | None], Docker]


_ENGINE_ARCH = {"amd64": "x86_64", "arm64": "aarch64"}
# sh builtins only: the server image has no cat. One line per field, "key=value".
_PROBE = (
    'm=; while IFS= read -r l; do case "$l" in "model name"*|Hardware*|Model*) m=${l#*: }; break;; esac; '
    'done </proc/cpuinfo; echo "cpu_model=$m"; '
    'read -r t </sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null; echo "thp=$t"; '
    'read -r g </sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null; echo "cpufreq_governor=$g"; '
    'read -r b </proc/device-tree/model 2>/dev/null; echo "board_model=$b"'
)


def engine_arch(docker: Docker) -> str:
    """The engine machine's architecture as ``uname -m`` names it (``x86_64``, ``aarch64``)."""
    arch = docker.run("info", "--format", "{{.Architecture}}", timeout=ENGINE_CHECK_TIMEOUT_S).stdout.strip()
    return _ENGINE_ARCH.get(arch, arch)


def server_fingerprint(docker: Docker, container_id: str) -> dict:
    """The engine machine's fingerprint in the fields of :func:`vkbench.envinfo.fingerprint`."""
    from ..engine_probe import probe_engine
    from ..envinfo import fingerprint_id

    fmt = "\t".join(["{{.Architecture}}", "{{.NCPU}}", "{{.MemTotal}}", "{{.KernelVersion}}", "{{.OperatingSystem}}",
                     "{{.Name}}"])
    info = docker.run("info", "--format", fmt, timeout=ENGINE_CHECK_TIMEOUT_S).stdout.strip().split("\t")
    info += [""] * (6 - len(info))
    arch, ncpu, memory, kernel, os_name, name = info[:6]
    probe = docker.run("exec", container_id, "/bin/sh", "-c", _PROBE, timeout=ENGINE_CHECK_TIMEOUT_S, check=False)
    seen = dict(line.split("=", 1) for line in probe.stdout.splitlines() if "=" in line)
    thp = seen.get("thp") or None
    if thp and "[" in thp:
        thp = thp.split("[", 1)[1].split("]", 1)[0]
    env = {
        "arch": _ENGINE_ARCH.get(arch, arch),
        "cpu_model": seen.get("cpu_model") or None,
        "cores": int(ncpu) if ncpu.isdigit() else 0,
        "memory_bytes": int(memory) if memory.isdigit() else None,
        "kernel": kernel or None,
        "os": os_name or None,
        "cpufreq_governor": seen.get("cpufreq_governor") or None,
        "thp": thp,
        "board_model": (seen.get("board_model") or "").strip("\x00") or None,
        **probe_engine().as_fields(),   # the engine names itself through its API, not through a CLI
        "hostname_hash": hashlib.sha256(name.encode()).hexdigest()[:12] if name else None,
        "engine_address": engine_address(),
    }
    env["fingerprint_id"] = fingerprint_id(env)
    return env


def engine_address() -> str | None:
    """DOCKER_HOST without any user:password part."""
    host = os.environ.get("DOCKER_HOST")
    if not host:
        return None
    scheme, sep, rest = host.partition("://")
    return f"{scheme}{sep}{rest.rpartition('@')[2]}" if sep else host


def tail(text: str, lines: int = 3) -> str:
    return "\n".join((text or "").strip().splitlines()[-lines:]) or "(no output)"
