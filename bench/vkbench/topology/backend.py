"""The interface every backend (native processes, docker compose) implements.

A backend turns a :class:`DeploymentSpec` into a running, *ready* :class:`Deployment` inside a
context manager, and tears everything down when the context exits, also on errors and Ctrl-C.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from .model import ServerSettings, Topology
from .tls import TlsFiles


@dataclass(frozen=True)
class DeploymentSpec:
    topology: Topology
    engine: str                      # "valkey" | "redis"
    version: str                     # "9.1.2", "unstable", ...
    settings: ServerSettings
    password: str                    # generated per run; never printed
    run_dir: Path                    # absolute; the backend keeps its files (configs, logs, pid files) below it
    server_cpus: str | None = None   # taskset -c list for the servers, None = no pinning
    tls: TlsFiles | None = None      # TLS only (port 0, tls-port), with these throw-away certificates


@dataclass
class Endpoint:
    name: str                        # NodeSpec.name
    host: str
    port: int
    role: str                        # "primary" | "replica"
    shard: int
    pid: int | None = None           # host PID of the server process, for CPU sampling


@dataclass
class Deployment:
    spec: DeploymentSpec
    endpoints: list[Endpoint]
    server_version: str | None = None       # INFO server: valkey_version / redis_version
    server_commit: str | None = None        # INFO server: *_git_sha1 when non-zero
    build: dict = field(default_factory=dict)  # {"source": ..., "id": sha256/digest, "detail": ...}
    startup_s: float | None = None          # start until ready
    log_files: list[Path] = field(default_factory=list)
    # The server machine's fingerprint when it is not this one (a remote engine), else None.
    server_environment: dict | None = None

    @property
    def primaries(self) -> list[Endpoint]:
        return [e for e in self.endpoints if e.role == "primary"]

    @property
    def replicas(self) -> list[Endpoint]:
        return [e for e in self.endpoints if e.role == "replica"]

    @property
    def server_pids(self) -> list[int]:
        return [e.pid for e in self.endpoints if e.pid]


class Backend(ABC):
    name: str = "abstract"

    @abstractmethod
    def deploy(self, spec: DeploymentSpec) -> contextlib.AbstractContextManager[Deployment]:
        """Start, wait until ready (see readiness.py), yield, always tear down."""

    def cleanup_stale(self, state_dir: Path) -> list[str]:
        """Remove leftovers of a killed earlier run; return a description of what was removed."""
        return []
