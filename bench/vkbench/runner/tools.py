"""Command lines for the benchmark tools, built from a cell and a running deployment."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from ..errors import UsageError
from ..matrix.model import Cell
from ..topology.backend import Deployment, Endpoint


@dataclass
class ToolCommand:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    secret: str | None = None           # redacted from every display of argv
    json_out: str | None = None         # memtier --json-out-file path, when used

    def display(self) -> str:
        """The command line with the password replaced: safe for logs and result files."""
        shown = [("***" if self.secret and a == self.secret else a) for a in self.argv]
        return shlex.join(shown)


def targets(cell: Cell, deployment: Deployment) -> list[Endpoint]:
    """Where the tool connects: replicas for read-from-replicas cells, else the first primary.

    Cluster clients discover the other shards themselves from the first primary."""
    if cell.read_from == "replicas":
        return deployment.replicas
    return [deployment.primaries[0]]


def build_command(
    cell: Cell,
    target: Endpoint,
    password: str,
    tool_path: str,
    *,
    requests: int | None = None,
    tests: list[str] | None = None,
    json_out: str | None = None,
    host: str | None = None,
) -> ToolCommand:
    """One invocation of the tool. ``requests``/``tests`` override the cell's (warm-up, preload)."""
    tests = tests or cell.tests
    requests = requests if requests is not None else cell.requests
    host = host or target.host
    cluster = cell.topology.startswith("cluster")
    if cell.tool in ("valkey-benchmark", "redis-benchmark"):
        # No option reads the password from a file or the environment: -a is the only way.
        argv = [tool_path, "-h", host, "-p", str(target.port), "-a", password,
                "-t", ",".join(tests), "-c", str(cell.clients), "-P", str(cell.pipeline),
                "-d", str(cell.data_size), "--csv"]
        if requests is None:
            raise UsageError(f"{cell.tool} needs a request count", hint="set requests in the matrix")
        argv += ["-n", str(requests)]
        if cell.keyspace:
            argv += ["-r", str(cell.keyspace)]
        if cell.client_threads:
            argv += ["--threads", str(cell.client_threads)]
        if cluster:
            argv.append("--cluster")
        return ToolCommand(argv, secret=password)
    if cell.tool == "memtier_benchmark":
        return _memtier(cell, target, password, tool_path, tests, requests, json_out, host, cluster)
    raise UsageError(f"unsupported tool {cell.tool}")


def _memtier(cell, target, password, tool_path, tests, requests, json_out, host, cluster) -> ToolCommand:
    threads = cell.client_threads or 1
    per_thread_clients = max(1, cell.clients // threads)
    sets = 1 if "set" in tests else 0
    gets = 1 if "get" in tests else 0
    if not (sets or gets):
        raise UsageError("memtier_benchmark cells support tests set and get", hint="use tests: [set, get], [set] or [get]")
    argv = [tool_path, "-s", host, "-p", str(target.port), "-a", password, "--protocol=redis",
            f"--ratio={sets}:{gets}", "-t", str(threads), "-c", str(per_thread_clients),
            f"--pipeline={cell.pipeline}", "-d", str(cell.data_size), "--hide-histogram",
            "--print-percentiles=50,95,99,99.9"]
    if cell.keyspace:
        argv += ["--key-pattern=R:R", f"--key-maximum={cell.keyspace}"]
    if cell.duration:
        argv += [f"--test-time={cell.duration}"]
    elif requests:
        # memtier's -n counts requests per client connection.
        argv += ["-n", str(max(1, requests // (threads * per_thread_clients)))]
    if cluster:
        argv.append("--cluster-mode")
    if json_out:
        argv += [f"--json-out-file={json_out}"]
    return ToolCommand(argv, secret=password, json_out=json_out)
