"""When is a deployment ready? Used by both backends (native and compose).

Ready means a benchmark started now measures the topology it asked for:

- every node answers PING (with the password);
- cluster: every node says ``cluster_state:ok``, ``cluster_slots_assigned:16384`` and
  ``cluster_slots_ok:16384``, knows every node, sees exactly one primary per shard, and sees each
  replica attached to its shard's primary;
- replicas (replication and cluster): ``master_link_status:up`` and the replica's offset equals
  its primary's ``master_repl_offset``; each primary counts all its replicas as connected.

On timeout :class:`ServerStartError` names the node, what it last said, and the tail of its log.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import valkey

from ..errors import ServerStartError
from .backend import Endpoint
from .model import Topology
from .tls import TlsFiles

CLUSTER_SLOTS = 16384
POLL_S = 0.02


def connect(host: str, port: int, password: str, *, timeout: float = 1.0, tls: TlsFiles | None = None) -> valkey.Valkey:
    """A client that returns INFO as text, so values like ``00000000`` keep their zeros; over TLS
    with the cell's client certificate when ``tls`` is given."""
    client = valkey.Valkey(host=host, port=port, password=password, socket_timeout=timeout,
                           socket_connect_timeout=timeout, decode_responses=True,
                           **(tls.client_kwargs() if tls else {}))
    client.set_response_callback("INFO", lambda response, **_: response)
    return client


def info(client: valkey.Valkey, section: str) -> dict[str, str]:
    return parse_fields(client.execute_command("INFO", section))


def parse_fields(text: str) -> dict[str, str]:
    """``key:value`` lines (INFO, CLUSTER INFO) into a dict of strings."""
    out = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            key, value = line.split(":", 1)
            out[key.strip()] = value.strip()
    return out


def cluster_nodes(client: valkey.Valkey) -> list[dict[str, str]]:
    """CLUSTER NODES as {id, flags, primary, slots}; the command name is split so no client-side
    parser rewrites the reply."""
    nodes = []
    for line in client.execute_command("CLUSTER", "NODES").splitlines():
        parts = line.split()
        if len(parts) >= 8:
            nodes.append({"id": parts[0], "flags": parts[2], "primary": parts[3], "slots": " ".join(parts[8:])})
    return nodes


def my_id(client: valkey.Valkey) -> str:
    for node in cluster_nodes(client):
        if "myself" in node["flags"].split(","):
            return node["id"]
    raise ServerStartError("CLUSTER NODES has no 'myself' line", hint="is cluster mode enabled on this node?")


class _Check:
    """One pass over all nodes; collects what is not ready yet, per node."""

    def __init__(self, endpoints: list[Endpoint], clients: dict[str, valkey.Valkey], topology: Topology):
        self.endpoints = endpoints
        self.clients = clients
        self.topology = topology
        self.ids: dict[str, str] = {}   # endpoint name -> cluster node id, once known

    def run(self) -> dict[str, str]:
        problems: dict[str, str] = {}
        for endpoint in self.endpoints:
            try:
                self.clients[endpoint.name].ping()
            except valkey.exceptions.ValkeyError as exc:
                problems[endpoint.name] = f"PING: {exc}"
        if problems:
            return problems
        try:
            if self.topology.is_cluster:
                self._cluster(problems)
            if any(e.role == "replica" for e in self.endpoints):
                self._replication(problems)
        except valkey.exceptions.ValkeyError as exc:
            problems.setdefault("?", str(exc))
        return problems

    def _primary_of(self, replica: Endpoint) -> Endpoint:
        # Replication has one primary; a cluster replica belongs to its shard's primary.
        return next(e for e in self.endpoints if e.role == "primary" and e.shard == replica.shard)

    def _cluster(self, problems: dict[str, str]) -> None:
        for endpoint in self.endpoints:
            if endpoint.name not in self.ids:
                self.ids[endpoint.name] = my_id(self.clients[endpoint.name])
        for endpoint in self.endpoints:
            client = self.clients[endpoint.name]
            state = parse_fields(client.execute_command("CLUSTER", "INFO"))
            said = ", ".join(f"{k}:{state.get(k)}" for k in
                             ("cluster_state", "cluster_slots_assigned", "cluster_slots_ok", "cluster_known_nodes"))
            if (state.get("cluster_state") != "ok"
                    or state.get("cluster_slots_assigned") != str(CLUSTER_SLOTS)
                    or state.get("cluster_slots_ok") != str(CLUSTER_SLOTS)
                    or state.get("cluster_known_nodes") != str(len(self.endpoints))):
                problems[endpoint.name] = said
                continue
            problem = self._cluster_view(cluster_nodes(client))
            if problem:
                problems[endpoint.name] = problem

    def _cluster_view(self, view: list[dict[str, str]]) -> str | None:
        """This node's picture of the cluster matches the topology: one primary per shard, and
        every replica attached to its shard's primary."""
        by_id = {n["id"]: n for n in view}
        primaries = [n for n in view if "master" in n["flags"].split(",") and n["slots"]]
        if len(primaries) != self.topology.shards:
            return f"sees {len(primaries)} primaries with slots, expected {self.topology.shards}"
        for endpoint in self.endpoints:
            node = by_id.get(self.ids[endpoint.name])
            if node is None or any(f in node["flags"] for f in ("handshake", "noaddr", "fail")):
                return f"sees {endpoint.name} as {node['flags'] if node else 'unknown'}"
            if endpoint.role == "replica" and node["primary"] != self.ids[self._primary_of(endpoint).name]:
                return f"sees {endpoint.name} not yet replicating its primary"
        return None

    def _replication(self, problems: dict[str, str]) -> None:
        offsets: dict[str, str] = {}
        for primary in (e for e in self.endpoints if e.role == "primary"):
            fields = info(self.clients[primary.name], "replication")
            offsets[primary.name] = fields.get("master_repl_offset", "?")
            expected = sum(1 for e in self.endpoints if e.role == "replica" and e.shard == primary.shard)
            if fields.get("connected_slaves", "0") != str(expected):
                problems.setdefault(primary.name, f"connected_slaves:{fields.get('connected_slaves')} (expected {expected})")
        for replica in (e for e in self.endpoints if e.role == "replica"):
            if replica.name in problems:
                continue
            fields = info(self.clients[replica.name], "replication")
            primary_offset = offsets[self._primary_of(replica).name]
            if fields.get("master_link_status") != "up":
                problems[replica.name] = f"role:{fields.get('role')}, master_link_status:{fields.get('master_link_status')}"
            elif fields.get("slave_repl_offset") != primary_offset:
                problems[replica.name] = (f"slave_repl_offset:{fields.get('slave_repl_offset')} behind primary "
                                          f"master_repl_offset:{primary_offset}")


def wait_ready(
    endpoints: list[Endpoint],
    password: str,
    topology: Topology,
    *,
    timeout: float = 30.0,
    host_override: str | None = None,
    log_tail: Callable[[Endpoint], str] | None = None,
    tls: TlsFiles | None = None,
) -> None:
    """Block until every check above passes on every node, or raise ServerStartError.

    ``host_override`` connects to that host instead of each endpoint's (e.g. published container
    ports on 127.0.0.1). ``log_tail(endpoint)`` supplies the log lines quoted in the error.
    """
    clients = {e.name: connect(host_override or e.host, e.port, password, tls=tls) for e in endpoints}
    check = _Check(endpoints, clients, topology)
    deadline = time.monotonic() + timeout
    try:
        while True:
            problems = check.run()
            if not problems:
                return
            if time.monotonic() >= deadline:
                raise _not_ready(endpoints, problems, timeout, log_tail)
            time.sleep(POLL_S)
    finally:
        for client in clients.values():
            client.close()


def _not_ready(endpoints: list[Endpoint], problems: dict[str, str], timeout: float,
               log_tail: Callable[[Endpoint], str] | None) -> ServerStartError:
    name, said = next(iter(problems.items()))
    endpoint = next((e for e in endpoints if e.name == name), endpoints[0])
    others = [n for n in problems if n != name]
    message = f"{name} ({endpoint.host}:{endpoint.port}) not ready after {timeout:.0f} s: last said {said!r}"
    if others:
        message += f"; also not ready: {', '.join(others)}"
    if log_tail is not None:
        message += "\n" + log_tail(endpoint)
    return ServerStartError(
        message,
        hint="read the server log above; on a slow or busy machine raise the ready timeout; a replica that "
        "never links usually means a wrong masterauth or a primary that refused the sync",
    )


def server_identity(endpoint: Endpoint, password: str, *, tls: TlsFiles | None = None) -> tuple[str | None, str | None]:
    """(version, commit) as the server reports them in INFO server; commit None when unknown
    (release builds report all zeros)."""
    client = connect(endpoint.host, endpoint.port, password, tls=tls)
    try:
        fields = info(client, "server")
    finally:
        client.close()
    version = fields.get("valkey_version") or fields.get("redis_version")
    commit = fields.get("valkey_git_sha1") or fields.get("redis_git_sha1")
    return version, (commit if commit and commit.strip("0") else None)
