"""Which backend a run uses: the one place that knows every implementation of backend.Backend.

It lives apart from backend.py (the interface) so that the implementations can import the
interface without the interface importing them back (an import circle).
"""

from __future__ import annotations

from ..errors import UsageError
from .backend import Backend


def get_backend(name: str, *, server_host: str | None = None) -> Backend:
    """``server_host``: where the client reaches servers of a remote engine (compose only)."""
    if name == "native":
        if server_host:
            raise UsageError("--server-host applies to the compose backend only",
                             hint="native servers always run on 127.0.0.1; drop --server-host or use --backend compose")
        from .native import NativeBackend   # imported on use: the CLI starts without either backend

        return NativeBackend()
    if name == "compose":
        from .compose import ComposeBackend

        return ComposeBackend(server_host=server_host)
    raise UsageError(f"unknown backend {name!r}", hint="use --backend native or --backend compose")


