"""Which container engine answers on the Docker-compatible API, asked through the API itself.

The fingerprint used to ask ``docker version`` and fall back to ``podman`` when that CLI was slow,
so one podman engine was recorded as ``docker 4.3.1`` on one night and ``podman 4.3.1`` on the next.
Here the engine names itself: ``GET /version`` on the socket (``DOCKER_HOST``, else the usual
docker and podman sockets) answers ``Components[0].Name`` = "Podman Engine" or "Engine" (Docker).
The whole exchange has one deadline; a probe that fails is recorded as such, never guessed from a CLI.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

PROBE_TIMEOUT_S = 3.0
_MAX_RESPONSE_BYTES = 256 * 1024
_DEFAULT_SOCKETS = ("/var/run/docker.sock", "/run/podman/podman.sock")


@dataclass(frozen=True)
class EngineProbe:
    """``runtime`` ("podman 4.3.1") when the engine answered, else ``None`` and ``problem`` says why."""

    runtime: str | None
    address: str | None
    problem: str | None = None

    def as_fields(self) -> dict:
        return {"container_runtime": self.runtime, "container_runtime_probe": self.problem or "ok"}


def engine_address(environ: dict | None = None) -> str | None:
    """Where the engine's API is: ``DOCKER_HOST``, else the first default socket that exists."""
    environ = os.environ if environ is None else environ
    if environ.get("DOCKER_HOST"):
        return environ["DOCKER_HOST"]
    candidates = list(_DEFAULT_SOCKETS)
    if environ.get("XDG_RUNTIME_DIR"):
        candidates.append(f"{environ['XDG_RUNTIME_DIR']}/podman/podman.sock")
    for path in candidates:
        if Path(path).is_socket():
            return f"unix://{path}"
    return None


def probe_engine(address: str | None = None, *, timeout: float = PROBE_TIMEOUT_S) -> EngineProbe:
    """Ask the engine at ``address`` (default :func:`engine_address`) who it is, within ``timeout`` seconds."""
    address = address if address is not None else engine_address()
    if not address:
        return EngineProbe(None, None, "no engine socket (DOCKER_HOST unset, no docker or podman socket)")
    shown = _without_credentials(address)
    try:
        body = _get_version(address, timeout)
    except TimeoutError:
        return EngineProbe(None, shown, f"no answer from {shown} within {timeout:g} s")
    except (OSError, ValueError) as exc:
        return EngineProbe(None, shown, f"{shown}: {exc}")
    try:
        return EngineProbe(_runtime_of(json.loads(body)), shown)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        return EngineProbe(None, shown, f"{shown}: /version is not an engine's answer ({exc})")


def _runtime_of(version: dict) -> str:
    components = version.get("Components") or []
    names = " ".join(str(c.get("Name", "")) for c in components if isinstance(c, dict)).lower()
    kind = "podman" if "podman" in names else "docker"
    number = version.get("Version")
    if not isinstance(number, str) or not number or len(number) > 64:
        raise ValueError("no Version")
    return f"{kind} {number}"


def _connect(address: str, deadline: float) -> socket.socket:
    parts = urlsplit(address)
    if parts.scheme == "unix":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        target: object = parts.path
    elif parts.scheme == "tcp":
        if not parts.hostname or not parts.port:
            raise ValueError("tcp address without host or port")
        sock = socket.socket(socket.AF_INET6 if ":" in parts.hostname else socket.AF_INET, socket.SOCK_STREAM)
        target = (parts.hostname, parts.port)
    else:
        raise ValueError(f"the API is not probed over {parts.scheme or 'this address'}")
    try:
        sock.settimeout(_remaining(deadline))
        sock.connect(target)
    except BaseException:
        sock.close()
        raise
    return sock


def _get_version(address: str, timeout: float) -> bytes:
    """The body of ``GET /version`` (HTTP/1.0: the engine closes the connection when done)."""
    deadline = time.monotonic() + timeout
    with _connect(address, deadline) as sock:
        sock.settimeout(_remaining(deadline))
        sock.sendall(b"GET /version HTTP/1.0\r\nHost: docker\r\nAccept: application/json\r\n\r\n")
        data = b""
        while len(data) <= _MAX_RESPONSE_BYTES:
            sock.settimeout(_remaining(deadline))   # one deadline for the whole answer, however slowly it drips
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        else:
            raise ValueError(f"answer larger than {_MAX_RESPONSE_BYTES} bytes")
    head, sep, body = data.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].split()
    if not sep or len(status) < 2 or status[1] != b"200":
        raise ValueError(f"answered {head[:80].decode(errors='replace') or 'nothing'}")
    return body


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _without_credentials(address: str) -> str:
    scheme, sep, rest = address.partition("://")
    return f"{scheme}{sep}{rest.rpartition('@')[2]}" if sep else address
