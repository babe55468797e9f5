"""redis-benchmarks-specification test-suite specs -> vkbench cells, or a refusal with the reason.

A spec (``version: 0.4``) has a ``dbconfig`` (server settings, a preload by memtier or by
``init_commands``/``init_lua``, a ``check`` of the key count, sometimes a ``dataset`` RDB),
a ``clientconfig`` (tool, container image, arguments), ``tested-groups``, ``tested-commands`` and
``redis-topologies``. Each honoured topology becomes one cell per server version.
"""

from __future__ import annotations

import re
from . import shellwords
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from pydantic import ValidationError

from ..matrix.model import Cell
from .memtier_args import Unmappable, parse_memtier, preload_arguments, split_arguments

SOURCE = "redis-benchmarks-specification"
#: The commands and config parameters of the Valkey release the refusals are judged against
#: (COMMAND LIST and CONFIG GET * of valkey 9.1.2, written by tools/catalog_counts.py --refresh-lists).
JUDGED_AGAINST = "valkey 9.1.2"

#: Refusal reasons, short and stable (tools/catalog_counts.py counts by them).
R_DATASET = "data set (RDB download)"
R_CLIENTS = "several clients"
R_CONTAINER = "container-only client"
R_COMMAND = "command not in Valkey (Redis-only or module)"
R_CONFIG = "server setting not in Valkey"
R_TOPOLOGY = "topology not offered (persistence)"
R_ARGS = "tool arguments not mappable"
R_INVALID = "not a valid spec"

_IO_THREADS = re.compile(r"^oss-standalone(?:-(\d+)-replicas)?(?:-(\d+)-io-threads)?$")
_CLUSTER = re.compile(r"^oss-cluster-(\d+)-primaries$")
_PLACEHOLDER = re.compile(r"__[a-z_]+__")


@dataclass
class Refusal:
    name: str
    reason: str                       # one of the R_* codes
    detail: str
    groups: list[str] = field(default_factory=list)
    source: str = SOURCE

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "name": self.name, "groups": self.groups, "reason": self.reason,
                "detail": self.detail}


class Refused(Exception):
    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


@lru_cache(maxsize=None)
def valkey_commands() -> frozenset[str]:
    text = (resources.files("vkbench.catalogs") / "valkey-commands.txt").read_text()
    return frozenset(line.strip().lower() for line in text.splitlines() if line.strip())


@lru_cache(maxsize=None)
def valkey_configs() -> frozenset[str]:
    text = (resources.files("vkbench.catalogs") / "valkey-configs.txt").read_text()
    return frozenset(line.strip().lower() for line in text.splitlines() if line.strip())


def topology_of(name: str) -> tuple[str, int] | None:
    """``oss-standalone-02-io-threads`` -> ("standalone", 2); None for what vkbench has not."""
    if match := _CLUSTER.match(name):
        return f"cluster:{int(match.group(1))}", 1
    if match := _IO_THREADS.match(name):
        replicas, threads = match.group(1), match.group(2)
        return (f"replication:{int(replicas)}" if replicas else "standalone"), int(threads or 1)
    return None


def _command_words(argv: list[str]) -> list[str]:
    return [argv[0].lower()] if argv else []


def _check_commands(words: list[str], where: str) -> None:
    known = valkey_commands()
    for word in words:
        if word not in known:
            raise Refused(R_COMMAND, f"{where} uses {word.upper()}, which {JUDGED_AGAINST} does not have")


def _server_args(params: Any) -> list[str]:
    if params is None:
        return []
    if not isinstance(params, dict):
        raise Refused(R_INVALID, "dbconfig.configuration-parameters is not a mapping")
    args: list[str] = []
    for key, value in params.items():
        key = str(key).lower()
        if key == "save":
            continue          # vkbench never snapshots (save "" on every server)
        if key not in valkey_configs():
            raise Refused(R_CONFIG, f"server setting {key} is not a {JUDGED_AGAINST} config parameter")
        try:
            values = shellwords.split(str(value)) or [""]
        except ValueError:
            raise Refused(R_INVALID, f"server setting {key} has an unparsable value") from None
        args += [f"--{key}", *values]
    return args


def _init_commands(dbconfig: dict) -> list[list[str]]:
    out: list[list[str]] = []
    init = dbconfig.get("init_commands") or []
    if isinstance(init, str):
        init = [init]
    if not isinstance(init, list):
        raise Refused(R_INVALID, "dbconfig.init_commands is not a list")
    for entry in init:
        if isinstance(entry, list):
            argv = [str(a) for a in entry]
        else:
            try:
                argv = shellwords.split(str(entry))
            except ValueError as exc:
                raise Refused(R_INVALID, f"an init command does not parse: {exc}") from None
        if argv:
            out.append(argv)
    lua = dbconfig.get("init_lua")
    if lua:
        out.append(["EVAL", str(lua), "0"])
    for argv in out:
        _check_commands(_command_words(argv), "an init command")
    return out


def spec_cells(doc: Any, *, origin: str, servers: list[str], overrides: dict[str, Any]) -> list[Cell]:
    """The cells of one spec; raises :class:`Refused` with the reason when it cannot run here."""
    if not isinstance(doc, dict) or not isinstance(doc.get("name"), str):
        raise Refused(R_INVALID, f"{origin} is not a spec (a mapping with name, dbconfig, clientconfig)")
    dbconfig = doc.get("dbconfig") or {}
    if not isinstance(dbconfig, dict):
        raise Refused(R_INVALID, "dbconfig is not a mapping")
    if dbconfig.get("dataset"):
        raise Refused(R_DATASET, f"needs the data set {str(dbconfig['dataset'])[:200]} loaded as an RDB; "
                                 "vkbench starts empty servers and loads no RDB files")
    if doc.get("clientconfigs"):
        raise Refused(R_CLIENTS, "runs several clients at once (clientconfigs); a vkbench cell runs one tool")
    client = doc.get("clientconfig")
    if not isinstance(client, dict):
        raise Refused(R_INVALID, "has no clientconfig")
    tool = client.get("tool")
    if tool != "memtier_benchmark":
        raise Refused(R_CONTAINER, f"its client {tool} exists only as the container image {client.get('run_image')}")
    groups = [str(g).lower() for g in doc.get("tested-groups") or []]
    tested = [str(c).lower() for c in doc.get("tested-commands") or []]
    try:
        args = parse_memtier(split_arguments(str(client.get("arguments") or "")))
        preload = dbconfig.get("preload_tool")
        preload_args: list[str] = []
        if preload:
            if not isinstance(preload, dict) or preload.get("tool") != "memtier_benchmark":
                raise Refused(R_CONTAINER, "its preload tool is not memtier_benchmark")
            preload_argv = split_arguments(str(preload.get("arguments") or ""))
            preload_args = preload_arguments(preload_argv)
            _check_commands([w for c in parse_memtier(preload_argv).commands for w in _command_words(c["command"].split())],
                            "its preload")
    except Unmappable as exc:
        raise Refused(R_ARGS, str(exc)) from None
    _check_commands([w for c in args.commands for w in _command_words(c["command"].split())], "its client")
    init = _init_commands(dbconfig)
    server_args = _server_args(dbconfig.get("configuration-parameters"))
    topologies: list[tuple[str, int]] = []
    skipped: list[str] = []
    for name in doc.get("redis-topologies") or ["oss-standalone"]:
        mapped = topology_of(str(name))
        (topologies.append(mapped) if mapped else skipped.append(str(name)))
    if not topologies:
        raise Refused(R_TOPOLOGY, f"asks only for {', '.join(skipped)}: vkbench runs no persistence (RDB/AOF) topologies")
    check = dbconfig.get("check") or {}
    keyspacelen = check.get("keyspacelen") if isinstance(check, dict) else None
    catalog = {
        "source": SOURCE, "name": doc["name"], "groups": groups, "commands": tested,
        "preload": preload_args, "init_commands": init,
        "keyspacelen": keyspacelen if isinstance(keyspacelen, int) else None,
        "spec_duration": args.test_time, "spec_requests": args.requests,
        **({"notes": ["memtier -n allkeys: one request per key of the range, as vkbench requests"]} if args.all_keys else {}),
    }
    base = _cell_fields(args, tested)
    duration, requests = _length(args, overrides)
    cells: list[Cell] = []
    for server in servers:
        for topology, io_threads in topologies:
            data = {**base, "server": server, "topology": topology, "io_threads": io_threads,
                    "extra_server_args": server_args, "duration": duration, "requests": requests,
                    "repetitions": overrides.get("repetitions", 1), "catalog": catalog}
            if "io_threads" in overrides:
                data["io_threads"] = overrides["io_threads"]
            try:
                cells.append(Cell.model_validate(data))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise Refused(R_ARGS, f"does not fit vkbench's cell model: {where}: {first['msg']}") from None
    return cells


def _cell_fields(args, tested: list[str]) -> dict[str, Any]:
    workload: dict[str, Any] = {}
    if args.commands:
        workload["commands"] = [{"command": c["command"], "ratio": c.get("ratio", 1),
                                 "key_pattern": c.get("key_pattern", "R")} for c in args.commands]
    for name in ("ratio", "key_pattern", "key_prefix", "data_size_range", "data_size_pattern", "data_size_list",
                 "run_count", "rate_limit", "multi_key_get"):
        value = getattr(args, name)
        if value is not None:
            workload[name] = value
    minimum = args.key_minimum if args.key_minimum else 1     # memtier's own default minimum is 0; vkbench's 1
    maximum = args.key_maximum if args.key_maximum is not None else max(minimum, 10_000_000)
    workload["key_minimum"] = minimum
    tests = [t for t in tested if re.match(r"^[a-z0-9_-]{1,32}$", t)] or ["custom"]
    return {
        "tool": "memtier_benchmark", "tests": tests, "clients": args.clients * args.threads,
        "client_threads": args.threads, "pipeline": max(1, args.pipeline), "data_size": max(1, args.data_size),
        "keyspace": max(1, maximum - minimum + 1), "preload": False, "workload": workload,
        "tool_args": list(args.passthrough),
    }


def _length(args, overrides: dict[str, Any]) -> tuple[int | None, int | None]:
    """(duration, requests) of the cell: the override, else the spec's test time, else its -n
    converted to vkbench's count (per command, over all connections)."""
    if overrides.get("duration"):
        return overrides["duration"], None
    if overrides.get("requests"):
        return None, overrides["requests"]
    if args.test_time:
        return args.test_time, None
    if args.all_keys:
        # -n allkeys: one request per key of the range in all; vkbench counts requests per command.
        keys = max(1, (args.key_maximum or 10_000_000) - (args.key_minimum or 0) + 1)
        commands = max(1, len(args.commands) or sum(1 for p in (args.ratio or "1:1").split(":") if p != "0"))
        return None, max(1, keys // commands)
    if args.requests:
        commands = max(1, len(args.commands) or sum(1 for p in (args.ratio or "1:1").split(":") if p != "0"))
        return None, max(1, args.requests * args.clients * args.threads // commands)
    commands = max(1, len(args.commands) or 2)
    return None, max(1, 10000 * args.clients * args.threads // commands)   # memtier's default -n 10000
