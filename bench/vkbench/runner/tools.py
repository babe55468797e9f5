"""Command lines for the benchmark tools, built from a cell and a running deployment."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache

from ..capped_output import run_capped
from ..errors import UsageError
from ..matrix.model import Cell
from ..topology.backend import Deployment, Endpoint
from ..topology.tls import TlsFiles


@dataclass
class ToolCommand:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    secret: str | None = None           # redacted from every display of argv
    json_out: str | None = None         # memtier --json-out-file path, when used
    fatal: re.Pattern[str] | None = None  # output that means "stop now": the run can only fail

    def display(self) -> str:
        """The command line with the password replaced: safe for logs and result files."""
        shown = [("***" if self.secret and a == self.secret else a) for a in self.argv]
        return shlex.join(shown)

    @property
    def password_via(self) -> str | None:
        """How the tool gets the password: ``env`` (not visible in ps), ``argv`` (visible in ps
        for the tool's lifetime: the tool has no other way), or None (no password)."""
        if not self.secret:
            return None
        if any(self.secret in a for a in self.argv):
            return "argv"
        return "env" if self.secret in self.env.values() else None


#: The variables valkey-cli and redis-cli read the password from (REDISCLI_AUTH; VALKEYCLI_AUTH
#: too since valkey 9.0). No benchmark tool reads either, checked in the sources and binaries:
#: valkey-benchmark's main() and parseOptions() (valkey 8.0 through unstable) and cli_common.c
#: never call getenv for a password (only valkey-cli.c does), and neither name is in the
#: valkey-benchmark 8.0.1 or redis-benchmark 7.0.15 binaries; given only the variable they answer
#: NOAUTH. Their -u URI carries the password on the command line too, so ``-a`` it is, and the
#: result says so (tool.password_via: argv). The env branch below serves a build that learns to
#: read the variable: it is taken only when that build proves it against the live server.
AUTH_ENV_VARS = ("VALKEYCLI_AUTH", "REDISCLI_AUTH")


@lru_cache(maxsize=None)
def _documented_auth_env(tool_path: str, library_path: str) -> tuple[str, ...]:
    """The password variables this tool's --help documents (every tool that reads one says so:
    valkey-cli, redis-cli); () for the benchmark tools released so far."""
    env = dict(os.environ, LD_LIBRARY_PATH=library_path) if library_path else None
    try:
        proc = run_capped([tool_path, "--help"], timeout=10, env=env)
    except (OSError, subprocess.SubprocessError):
        return ()
    text = proc.stdout + proc.stderr
    return tuple(var for var in AUTH_ENV_VARS if var in text)


#: What a tool prints when the server refused it: the password did not arrive.
_AUTH_REFUSED = re.compile(r"NOAUTH|WRONGPASS|AUTH failed|invalid password|Authentication required", re.IGNORECASE)


@lru_cache(maxsize=None)
def _env_auth_works(tool_path: str, tool_env: tuple[tuple[str, str], ...], variables: tuple[str, ...],
                    host: str, port: int, password: str, auth_args: tuple[str, ...]) -> bool:
    """Does the tool authenticate with only the variables set? One PING against the live
    server (a help text is a claim; this is the behaviour), once per tool and server."""
    argv = [tool_path, "-h", host, "-p", str(port), *auth_args, "-c", "1", "-n", "1", "-t", "ping", "--csv"]
    env = {**os.environ, **dict(tool_env), **{var: password for var in variables}}
    for var in AUTH_ENV_VARS:
        if var not in variables:
            env.pop(var, None)
    try:
        proc = run_capped(argv, timeout=30, env=env)
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0 and not _AUTH_REFUSED.search(proc.stdout + proc.stderr)


def _auth_env_for(tool_path: str, tool_env: dict[str, str] | None, host: str, port: int, password: str,
                  auth_args: tuple[str, ...]) -> dict[str, str]:
    """The environment that gives this tool the password without ``-a``, or {} when it has none
    that works (then ``-a``: visible in ps, and recorded as password_via argv)."""
    variables = _documented_auth_env(tool_path, (tool_env or {}).get("LD_LIBRARY_PATH", ""))
    if not variables:
        return {}
    if not _env_auth_works(tool_path, tuple(sorted((tool_env or {}).items())), variables, host, port, password, auth_args):
        return {}
    return {var: password for var in variables}


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
    tool_env: dict[str, str] | None = None,
    tls: TlsFiles | None = None,
) -> ToolCommand:
    """One invocation of the tool. ``requests``/``tests`` override the cell's (warm-up, preload):
    such a run is not a measurement, so memtier then runs exactly ``requests`` once (no
    --test-time, no --run-count). ``tls``: the deployment's certificates, for a TLS cell."""
    workload = cell.workload
    if workload and workload.tls and tls is None:
        raise UsageError("a TLS cell needs the deployment's certificates", hint="deploy with DeploymentSpec(tls=...)")
    tests = tests or cell.tests
    measured = requests is None
    requests = requests if requests is not None else cell.requests
    host = host or target.host
    cluster = cell.topology.startswith("cluster")
    if cell.tool in ("valkey-benchmark", "redis-benchmark"):
        # The password goes through the environment when this build reads it from there (none
        # released so far: AUTH_ENV_VARS); otherwise -a is the only way (no file option), and
        # the result says so (tool.password_via: argv).
        workload = cell.workload
        probe_args = tuple(["--user", workload.acl_user] if workload and workload.acl_user else []) + \
            tuple(tls.benchmark_args() if tls else [])
        auth_env = _auth_env_for(tool_path, tool_env, host, target.port, password, probe_args) if password else {}
        auth = [] if auth_env or not password else ["-a", password]
        argv = [tool_path, "-h", host, "-p", str(target.port), *auth,
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
        workload = cell.workload
        if workload and workload.protocol == "resp3":
            argv.append("-3")
        if workload and workload.acl_user:
            argv[1:1] = ["--user", workload.acl_user]
        if tls:
            argv += tls.benchmark_args()
        argv += list(cell.tool_args)
        return ToolCommand(argv, env=auth_env, secret=password)
    if cell.tool == "memtier_benchmark":
        return _memtier(cell, target, password, tool_path, requests, json_out, host, cluster, measured=measured, tls=tls)
    raise UsageError(f"unsupported tool {cell.tool}")


#: memtier's percentile columns: every level the record keeps (p90 and p99.99 included).
MEMTIER_PERCENTILES = "50,90,95,99,99.9,99.99"
#: memtier's default key prefix; vkbench's preload writes exactly memtier's key names.
MEMTIER_KEY_PREFIX = "memtier-"


@dataclass(frozen=True)
class MemtierKeys:
    """The key space a memtier cell reads and writes: ``{prefix}{n}`` for n in minimum..maximum."""

    prefix: str
    minimum: int
    maximum: int

    def names(self):
        return (f"{self.prefix}{n}" for n in range(self.minimum, self.maximum + 1))

    @property
    def count(self) -> int:
        return self.maximum - self.minimum + 1


def memtier_keys(cell: Cell) -> MemtierKeys:
    workload = cell.workload
    prefix = workload.key_prefix if workload and workload.key_prefix is not None else MEMTIER_KEY_PREFIX
    minimum = workload.key_minimum if workload and workload.key_minimum else 1
    return MemtierKeys(prefix, minimum, minimum + (cell.keyspace or 1) - 1)


def memtier_request_plan(cell: Cell, requests: int | None) -> tuple[int, int, str | None]:
    """(connections, requests per connection, note): ``requests`` is per command, as valkey-benchmark's
    ``-n`` per test, so a SET+GET cell does N SETs and N GETs with either tool."""
    threads = cell.client_threads or 1
    connections = threads * (cell.clients // threads)
    workload = cell.workload
    if workload and workload.commands:
        commands = len(workload.commands)
    else:
        commands = sum(1 for part in cell.memtier_ratio() if part)
    total = (requests or 0) * commands
    per_connection = max(1, -(-total // connections))
    note = None
    if per_connection * connections != total:
        note = (f"memtier counts requests per connection: {per_connection} x {connections} connections = "
                f"{per_connection * connections} requests instead of {total}")
    if workload and (workload.ratio not in (None, "1:1", "1:0", "0:1") or workload.commands):
        mix = workload.ratio or "command ratios"
        note = ((note + "; ") if note else "") + (
            f"memtier interleaves commands by {mix}: {total} requests in total over {commands} commands, "
            "so per-command counts differ from valkey-benchmark's N per test")
    return connections, per_connection, note


def _memtier(cell, target, password, tool_path, requests, json_out, host, cluster, *, measured: bool,
             tls: TlsFiles | None = None) -> ToolCommand:
    threads = cell.client_threads or 1
    per_thread_clients = cell.clients // threads
    workload = cell.workload
    keys = memtier_keys(cell)
    secret = password
    credentials = password
    if workload and workload.acl_user:
        credentials = secret = f"{workload.acl_user}:{password}"
    protocol = workload.protocol if workload and workload.protocol else "redis"
    argv = [tool_path, "-s", host, "-p", str(target.port), "-a", credentials, f"--protocol={protocol}",
            "-t", str(threads), "-c", str(per_thread_clients), f"--pipeline={cell.pipeline}",
            "--hide-histogram", f"--print-percentiles={MEMTIER_PERCENTILES}",
            f"--key-prefix={keys.prefix}", f"--key-minimum={keys.minimum}", f"--key-maximum={keys.maximum}"]
    if workload and workload.commands:
        for command in workload.commands:
            argv += [f"--command={command.command}", f"--command-ratio={command.ratio}",
                     f"--command-key-pattern={command.key_pattern}"]
    else:
        sets, gets = cell.memtier_ratio()
        if not (sets or gets):
            raise UsageError("memtier_benchmark cells need set and/or get", hint="use tests: [set, get], [set] or [get]")
        argv.append(f"--ratio={sets}:{gets}")
        # Only without --command: memtier refuses --key-pattern beside arbitrary commands (each
        # command has its own --command-key-pattern).
        argv.append(f"--key-pattern={workload.key_pattern if workload and workload.key_pattern else 'R:R'}")
    if workload and workload.data_size_range:
        argv.append(f"--data-size-range={workload.data_size_range}")
        if workload.data_size_pattern:
            argv.append(f"--data-size-pattern={workload.data_size_pattern}")
    elif workload and workload.data_size_list:
        argv.append(f"--data-size-list={workload.data_size_list}")
    else:
        argv += ["-d", str(cell.data_size)]
    if workload and workload.multi_key_get:
        argv.append(f"--multi-key-get={workload.multi_key_get}")
    if workload and workload.rate_limit:
        argv.append(f"--rate-limiting={workload.rate_limit}")
    if measured and workload and workload.run_count:
        argv.append(f"--run-count={workload.run_count}")
        if workload.run_count > 1:
            # Each run's section in the JSON: their durations add up to the time the client CPU
            # covers (the AGGREGATED section's Runtime is all zeros).
            argv.append("--print-all-runs")
    if measured and cell.duration:
        argv += [f"--test-time={cell.duration}"]
    elif requests:
        argv += ["-n", str(memtier_request_plan(cell, requests)[1])]
    if cluster:
        argv.append("--cluster-mode")
    if tls:
        argv += tls.memtier_args()
    if json_out:
        argv += [f"--json-out-file={json_out}"]
    argv += list(cell.tool_args)
    return ToolCommand(argv, secret=secret, json_out=json_out, fatal=MEMTIER_FATAL)


#: memtier output after which the run cannot succeed. memtier does not exit on these: after a
#: failed AUTH it waits forever; on an error reply it carries on sending (and counts it as a
#: request); on a refused connection it restarts threads. Stopping at once turns a 600 s
#: timeout into a failure within a second, with the reason.
MEMTIER_FATAL = re.compile(
    r"error: authentication failed[^\n]*"
    r"|handle error response: -[^\n]*"
    r"|Connection error: [^\n]*"
    r"|NOAUTH[^\n]*|WRONGPASS[^\n]*"
)
