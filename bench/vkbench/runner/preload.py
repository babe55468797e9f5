"""Write the keyspace before reads are measured.

valkey-benchmark's ``-r N`` draws keys ``key:000000000000`` .. ``key:{N-1:012d}``; GET against a
keyspace that was never written measures misses, not reads. Preloading every key makes GET
numbers comparable across runs.
"""

from __future__ import annotations

import valkey
from valkey.cluster import ClusterNode, ValkeyCluster

from ..topology.backend import Deployment

READ_TESTS = {"get", "mget", "lrange", "lrange_100", "lrange_300", "lrange_500", "lrange_600"}
BATCH = 2000


def needs_preload(tests: list[str]) -> bool:
    return any(t in READ_TESTS for t in tests)


def client_for(deployment: Deployment, *, timeout: float = 10.0):
    primary = deployment.primaries[0]
    if deployment.spec.topology.is_cluster:
        return ValkeyCluster(
            startup_nodes=[ClusterNode(e.host, e.port) for e in deployment.primaries],
            password=deployment.spec.password, socket_timeout=timeout,
        )
    return valkey.Valkey(host=primary.host, port=primary.port, password=deployment.spec.password, socket_timeout=timeout)


def preload_keyspace(deployment: Deployment, keyspace: int, data_size: int) -> int:
    """SET every key of the keyspace with a ``data_size``-byte value; return the keys written."""
    value = b"x" * data_size
    client = client_for(deployment)
    try:
        for start in range(0, keyspace, BATCH):
            pipe = client.pipeline(transaction=False)
            for i in range(start, min(start + BATCH, keyspace)):
                pipe.set(f"key:{i:012d}", value)
            pipe.execute()
    finally:
        client.close()
    return keyspace


def total_keys(deployment: Deployment) -> int:
    """Keys on the primaries (replicas hold copies)."""
    total = 0
    for endpoint in deployment.primaries:
        conn = valkey.Valkey(host=endpoint.host, port=endpoint.port, password=deployment.spec.password, socket_timeout=10)
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

    wait_ready(deployment.endpoints, deployment.spec.password, deployment.spec.topology, timeout=timeout)
