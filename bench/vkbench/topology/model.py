"""Topology description shared by every backend.

A topology string is one of:

- ``standalone``            one primary
- ``cluster:N``             N primaries with cluster mode on, 16384 slots spread evenly
- ``cluster:N:R``           the same with R replicas per primary
- ``replication:R``         one primary and R replicas (no cluster mode)

:func:`server_config` returns the ordered server directives for one node. The native backend
writes them to a config file (so the password never shows in ``ps``); the compose backend
renders the very same directives into its stack files. A test compares both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..errors import UsageError

if TYPE_CHECKING:
    from .tls import TlsFiles

#: Upper bounds: every node is a real server process (or container) on one machine, so a
#: dispatch input like cluster:100000 must be refused, not attempted.
MAX_SHARDS = 32
MAX_REPLICAS = 8
TOPOLOGY_FORMS = f"standalone, cluster:N, cluster:N:R, replication:R (1 <= N <= {MAX_SHARDS}, 0 <= R <= {MAX_REPLICAS})"
_PATTERN = re.compile(r"^(standalone|cluster:([0-9]{1,6})(?::([0-9]{1,6}))?|replication:([0-9]{1,6}))$")

Role = Literal["primary", "replica"]


@dataclass(frozen=True)
class NodeSpec:
    """One server of a topology. ``index`` is its position, which fixes its port offset."""

    index: int
    name: str                # stable: "primary", "replica-1", "shard-0-primary", "shard-2-replica-1"
    role: Role
    shard: int               # 0 for non-cluster topologies
    primary_index: int | None  # for replicas: index of the node they replicate


@dataclass(frozen=True)
class Topology:
    kind: Literal["standalone", "cluster", "replication"]
    shards: int = 1
    replicas: int = 0        # per shard for clusters, in total for replication

    @classmethod
    def parse(cls, text: str) -> Topology:
        text = str(text)
        match = _PATTERN.match(text.strip()) if len(text) <= 64 else None
        if not match:
            raise UsageError(
                f"unknown topology {text[:40]!r}",
                hint=f"use one of: {TOPOLOGY_FORMS}",
            )
        if match.group(1) == "standalone":
            return cls("standalone")
        if match.group(4) is not None:
            replicas = int(match.group(4))
            if replicas < 1:
                raise UsageError(f"topology {text!r} has no replica", hint="use replication:1 or more, or standalone")
            if replicas > MAX_REPLICAS:
                raise UsageError(f"topology {text!r}: at most {MAX_REPLICAS} replicas", hint=f"use one of: {TOPOLOGY_FORMS}")
            return cls("replication", 1, replicas)
        shards = int(match.group(2))
        replicas = int(match.group(3) or 0)
        if shards < 1:
            raise UsageError(f"topology {text!r} has no shard", hint="use cluster:1 or more")
        if shards > MAX_SHARDS or replicas > MAX_REPLICAS:
            raise UsageError(f"topology {text!r}: at most {MAX_SHARDS} shards and {MAX_REPLICAS} replicas per shard", hint=f"use one of: {TOPOLOGY_FORMS}")
        return cls("cluster", shards, replicas)

    def __str__(self) -> str:
        if self.kind == "standalone":
            return "standalone"
        if self.kind == "replication":
            return f"replication:{self.replicas}"
        return f"cluster:{self.shards}" + (f":{self.replicas}" if self.replicas else "")

    @property
    def is_cluster(self) -> bool:
        return self.kind == "cluster"

    def nodes(self) -> list[NodeSpec]:
        """All servers, primaries first (so ports of primaries are contiguous, as in the blog's 6379-6381)."""
        if self.kind == "standalone":
            return [NodeSpec(0, "primary", "primary", 0, None)]
        if self.kind == "replication":
            nodes = [NodeSpec(0, "primary", "primary", 0, None)]
            nodes += [NodeSpec(i, f"replica-{i}", "replica", 0, 0) for i in range(1, self.replicas + 1)]
            return nodes
        nodes = [NodeSpec(s, f"shard-{s}-primary", "primary", s, None) for s in range(self.shards)]
        index = self.shards
        for s in range(self.shards):
            for r in range(1, self.replicas + 1):
                nodes.append(NodeSpec(index, f"shard-{s}-replica-{r}", "replica", s, s))
                index += 1
        return nodes


@dataclass(frozen=True)
class ServerSettings:
    """What varies per cell, as opposed to per node."""

    io_threads: int = 1
    bind: str = "127.0.0.1"
    extra_args: tuple[str, ...] = ()   # free-form "--directive value" pairs from the matrix


def server_config(
    topology: Topology,
    node: NodeSpec,
    *,
    port: int,
    primary_port: int | None,
    settings: ServerSettings,
    password: str,
    workdir: str,
    primary_host: str = "127.0.0.1",
    tls: TlsFiles | None = None,
) -> list[tuple[str, ...]]:
    """Ordered server directives for ``node``: ``[("port", "7000"), ("save", '""'), ...]``.

    Values are in config-file syntax (an empty string is ``""``). ``workdir`` must be absolute:
    valkey refuses a relative logfile combined with ``dir``.
    """
    # TLS: the node's port is its tls-port and the plain port is closed (port 0), so nothing
    # reaches it without TLS; cluster bus and replication links use TLS as well.
    directives: list[tuple[str, ...]] = [("port", "0"), ("tls-port", str(port))] if tls else [("port", str(port))]
    directives += [
        ("bind", settings.bind),
        ("protected-mode", "yes"),
        ("requirepass", password),
        ("masterauth", password),          # replicas and cluster failover authenticate to primaries
        ("save", '""'),                    # no RDB snapshots: benchmarks measure the server, not the disk
        ("appendonly", "no"),
        ("io-threads", str(settings.io_threads)),
        ("repl-diskless-sync", "yes"),
        ("repl-diskless-sync-delay", "0"),  # default 5 s would delay replica readiness
        ("repl-diskless-load", "on-empty-db"),  # replicas load from the socket: linked in ~0.05 s, not ~1 s
        ("dir", workdir),
        ("logfile", f"{workdir.rstrip('/')}/server.log"),
        ("daemonize", "no"),
    ]
    if topology.is_cluster:
        directives += [
            ("cluster-enabled", "yes"),
            ("cluster-config-file", f"nodes-{port}.conf"),
            ("cluster-node-timeout", "5000"),
        ]
    elif node.role == "replica":
        if primary_port is None:
            raise ValueError("a replica needs its primary's port")
        directives.append(("replicaof", primary_host, str(primary_port)))
    if tls:
        directives += tls.server_directives()
        if topology.is_cluster:
            directives.append(("tls-cluster", "yes"))
        if topology.is_cluster or topology.kind == "replication":
            directives.append(("tls-replication", "yes"))
    directives += _extra_directives(settings.extra_args)
    return directives


def _extra_directives(extra_args: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Turn ``("--maxmemory", "1gb", "--hz", "100")`` into directives."""
    out: list[list[str]] = []
    for arg in extra_args:
        if arg.startswith("--"):
            out.append([arg[2:]])
        elif out:
            out[-1].append(arg)
        else:
            raise UsageError(f"extra server argument {arg!r} does not start with --", hint="write e.g. '--maxmemory 1gb'")
    return [tuple(d) for d in out]


def render_config_file(directives: list[tuple[str, ...]]) -> str:
    """Config-file text for the native backend. Values with spaces or quotes are quoted the way
    the server's config parser (sdssplitargs) reads them back."""
    return "".join(" ".join([d[0], *(_quote(v) for v in d[1:])]) + "\n" for d in directives)


def _quote(value: str) -> str:
    if value == '""' or (value and not any(c in value for c in ' \t"\'\\')):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_command_args(directives: list[tuple[str, ...]]) -> list[str]:
    """Command-line form (``--port 7000 --save ''``) for backends that pass arguments."""
    args: list[str] = []
    for name, *values in directives:
        args.append(f"--{name}")
        args.extend("" if v == '""' else v for v in values)
    return args
