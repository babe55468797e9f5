"""Write the keyspace before reads are measured.

valkey-benchmark's ``-r N`` draws keys ``key:000000000000`` .. ``key:{N-1:012d}``; GET against a
keyspace that was never written measures misses, not reads. Preloading every key makes GET
numbers comparable across runs.
"""

from __future__ import annotations

import time

import valkey
from valkey.cluster import ClusterNode, ValkeyCluster

from ..errors import ToolTimeoutError
from ..topology.backend import Deployment

READ_TESTS = {"get", "mget", "lrange", "lrange_100", "lrange_300", "lrange_500", "lrange_600"}
BATCH = 2000


def needs_preload(tests: list[str]) -> bool:
    return any(t in READ_TESTS for t in tests)


def cell_reads(cell) -> bool:
    """Whether the cell reads keys (so GET must find what a preload wrote)."""
    if cell.tool != "memtier_benchmark":
        return needs_preload(cell.tests)
    workload = cell.workload
    if workload and workload.commands:
        return any(c.command.split()[0].lower() in READ_TESTS | {"hget", "exists", "strlen", "getrange"}
                   for c in workload.commands)
    return cell.memtier_ratio()[1] > 0 or bool(workload and workload.multi_key_get)


def key_names(cell):
    """The keys the cell's tool reads: valkey-benchmark ``key:%012d`` (-r), memtier ``{prefix}{n}``."""
    if cell.tool == "memtier_benchmark":
        from .tools import memtier_keys

        return memtier_keys(cell).names()
    return (f"key:{i:012d}" for i in range(cell.keyspace))


def tls_kwargs(deployment: Deployment) -> dict:
    """valkey-py arguments for a TLS deployment's client certificate ({} without TLS)."""
    return deployment.spec.tls.client_kwargs() if deployment.spec.tls else {}


def node_client(deployment: Deployment, endpoint, *, timeout: float = 10.0) -> valkey.Valkey:
    return valkey.Valkey(host=endpoint.host, port=endpoint.port, password=deployment.spec.password,
                         socket_timeout=timeout, **tls_kwargs(deployment))


def client_for(deployment: Deployment, *, timeout: float = 10.0):
    primary = deployment.primaries[0]
    if deployment.spec.topology.is_cluster:
        return ValkeyCluster(
            startup_nodes=[ClusterNode(e.host, e.port) for e in deployment.primaries],
            password=deployment.spec.password, socket_timeout=timeout, **tls_kwargs(deployment),
        )
    return node_client(deployment, primary, timeout=timeout)


def preload_keyspace(deployment: Deployment, keyspace: int, data_size: int, names=None,
                     deadline: float | None = None, timeout_s: float | None = None) -> int:
    """SET every key of the keyspace with a ``data_size``-byte value; return the keys written.

    ``names``: the key names (default valkey-benchmark's ``key:%012d`` for ``-r keyspace``).
    ``deadline`` (time.monotonic()): checked between batches; past it, ToolTimeoutError."""
    value = b"x" * data_size
    names = iter(names if names is not None else (f"key:{i:012d}" for i in range(keyspace)))
    client = client_for(deployment)
    written = 0
    try:
        while True:
            batch = [name for _, name in zip(range(BATCH), names)]
            if not batch:
                break
            if deadline is not None and time.monotonic() > deadline:
                raise ToolTimeoutError(
                    f"the preload did not finish within {timeout_s or 0:g} s (--timeout): {written} of {keyspace} keys "
                    "written; the cell was stopped: its servers, pid files and temporary folders are removed",
                    hint="raise --timeout or lower keyspace")
            pipe = client.pipeline(transaction=False)
            for name in batch:
                pipe.set(name, value)
            pipe.execute()
            written += len(batch)
    finally:
        client.close()
    return written


def used_memory(deployment: Deployment) -> int:
    """INFO memory's used_memory summed over the primaries (replicas hold copies)."""
    total = 0
    for endpoint in deployment.primaries:
        conn = node_client(deployment, endpoint)
        try:
            total += int(conn.info("memory")["used_memory"])
        finally:
            conn.close()
    return total


def total_keys(deployment: Deployment) -> int:
    """Keys on the primaries (replicas hold copies)."""
    total = 0
    for endpoint in deployment.primaries:
        conn = node_client(deployment, endpoint)
        try:
            total += int(conn.dbsize())
        finally:
            conn.close()
    return total


def wait_replicas_synced(deployment: Deployment, timeout: float = 30.0) -> None:
    """After a preload, replicas serving reads must hold the data: wait for offsets to match."""
    if not deployment.replicas:
        return
    from ..topology.readiness import wait_ready

    wait_ready(deployment.endpoints, deployment.spec.password, deployment.spec.topology, timeout=timeout,
               tls=deployment.spec.tls)


def create_acl_user(deployment: Deployment, user: str) -> None:
    """An ACL user with the deployment's password and every right, on every server (ACL users
    are per node, never replicated): the tool then logs in as that user instead of default."""
    for endpoint in deployment.endpoints:
        conn = node_client(deployment, endpoint)
        try:
            conn.execute_command("ACL", "SETUSER", user, "reset", "on", f">{deployment.spec.password}", "~*", "&*", "+@all")
        finally:
            conn.close()
