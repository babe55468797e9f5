"""Server and tool binaries: resolve (explicit path, cache, fetch) and describe them.

    from vkbench.servers import resolve_server, resolve_tool
    server = resolve_server("valkey", "9.1")          # -> Binary(version="9.1.2", ...)
    bench = resolve_tool("valkey-benchmark")
    subprocess.run([bench.path, ...], env=bench.run_env())

See docs/servers.md for the sources, the cache layout and the environment variables.
"""

from .binary import Binary
from .cache import cache_dir
from .catalog import known_versions, map_version
from .resolve import fetch_release, resolve_server, resolve_tool

__all__ = ["Binary", "cache_dir", "fetch_release", "known_versions", "map_version", "resolve_server", "resolve_tool"]
