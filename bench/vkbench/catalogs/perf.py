"""valkey-perf-benchmark configs (``configs/*.json``) -> valkey-benchmark cells, or refusals.

A config file is a list of entries; each entry's list fields (keyspacelen, data_sizes,
pipelines, clients, io-threads, requests) multiply into cells, each running every command of
``commands`` as valkey-benchmark tests, as valkey-perf-benchmark does.
"""

from __future__ import annotations

import itertools
import json
import re
from . import shellwords
from typing import Any

from pydantic import ValidationError

from ..matrix.model import Cell
from .groups import UNKNOWN, command_group
from .specs import JUDGED_AGAINST, R_INVALID, Refusal, valkey_configs

SOURCE = "valkey-perf-benchmark"
R_MODULE = "module workload"
R_DURATION = "duration without --requests"
R_CONFIG = "server setting not in Valkey"
MAX_CELLS_PER_ENTRY = 512


def _as_list(value: Any) -> list:
    if value is None:
        return [None]
    return value if isinstance(value, list) else [value]


def config_cells(text: str, *, file_name: str, servers: list[str],
                 overrides: dict[str, Any]) -> tuple[list[Cell], list[Refusal]]:
    try:
        entries = json.loads(text)
    except json.JSONDecodeError as exc:
        return [], [Refusal(file_name, R_INVALID, f"not JSON: {exc}", source=SOURCE)]
    if isinstance(entries, dict):
        entries = [entries]
    if not isinstance(entries, list):
        return [], [Refusal(file_name, R_INVALID, "a config file is a list of entries", source=SOURCE)]
    cells: list[Cell] = []
    refusals: list[Refusal] = []
    for index, entry in enumerate(entries):
        name = f"{file_name}#{index}"
        try:
            cells += _entry_cells(entry, name, servers, overrides)
        except _Refused as exc:
            refusals.append(Refusal(name, exc.reason, exc.detail, groups=exc.groups, source=SOURCE))
    return cells, refusals


class _Refused(Exception):
    def __init__(self, reason: str, detail: str, groups: list[str] | None = None):
        super().__init__(detail)
        self.reason, self.detail, self.groups = reason, detail, groups or []


def _tls(value: Any) -> bool:
    return value is True or str(value).lower() in ("yes", "true", "1")


def _entry_cells(entry: Any, name: str, servers: list[str], overrides: dict[str, Any]) -> list[Cell]:
    if not isinstance(entry, dict):
        raise _Refused(R_INVALID, "an entry is not a JSON object")
    if entry.get("modules") or entry.get("test_groups"):
        raise _Refused(R_MODULE, "loads server modules (search scenarios); vkbench runs Valkey alone")
    commands = entry.get("commands")
    if not isinstance(commands, list) or not commands:
        raise _Refused(R_INVALID, "has no commands")
    tests = [str(c).lower() for c in commands]
    groups = sorted({_group(t) for t in tests})
    if any(not re.match(r"^[a-z0-9_-]{1,32}$", t) for t in tests):
        raise _Refused(R_INVALID, "a command is not a valkey-benchmark test name", groups)
    requests_list = _as_list(entry.get("requests"))
    if overrides.get("requests"):
        requests_list = [overrides["requests"]]
    elif requests_list == [None]:
        raise _Refused(R_DURATION, f"runs for a duration ({entry.get('duration')} s); valkey-benchmark counts "
                                   "requests: give --requests N to run it", groups)
    server_args: list[str] = []
    for key, value in (entry.get("custom-server-configs") or {}).items():
        if str(key).lower() not in valkey_configs():
            raise _Refused(R_CONFIG, f"server setting {key} is not a {JUDGED_AGAINST} config parameter", groups)
        server_args += [f"--{str(key).lower()}", *(shellwords.split(str(value)) or [""])]
    topology = "cluster:3" if entry.get("cluster_mode") in (True, "yes", "true") else "standalone"
    threads = entry.get("benchmark-threads")
    io_threads = [overrides["io_threads"]] if "io_threads" in overrides else _as_list(entry.get("io-threads"))
    combos = list(itertools.product(servers, _as_list(entry.get("keyspacelen")), _as_list(entry.get("data_sizes")),
                                    _as_list(entry.get("pipelines")), _as_list(entry.get("clients")), io_threads,
                                    requests_list))
    if len(combos) > MAX_CELLS_PER_ENTRY:
        raise _Refused(R_INVALID, f"expands into {len(combos)} cells, more than {MAX_CELLS_PER_ENTRY}", groups)
    cells = []
    for server, keyspace, size, pipeline, clients, io, requests in combos:
        data = {"server": server, "tool": "valkey-benchmark", "tests": tests, "topology": topology,
                "io_threads": io or 1, "keyspace": keyspace or 100000, "data_size": size or 3,
                "pipeline": pipeline or 1, "clients": clients or 50, "requests": requests,
                "client_threads": threads, "extra_server_args": server_args,
                # tls_mode: TLS servers (tls-cluster too) and valkey-benchmark --tls (docs/tls.md)
                "workload": {"tls": True} if _tls(entry.get("tls_mode")) else None,
                "repetitions": overrides.get("repetitions", 1),
                "catalog": {"source": SOURCE, "name": name, "groups": groups, "commands": tests,
                            "spec_duration": entry.get("duration"),
                            "spec_requests": requests if not overrides.get("requests") else None}}
        try:
            cells.append(Cell.model_validate(data))
        except ValidationError as exc:
            first = exc.errors()[0]
            raise _Refused(R_INVALID, f"does not fit vkbench's cell model: {'.'.join(map(str, first['loc']))}: "
                                      f"{first['msg']}", groups) from None
    return cells


def _group(test: str) -> str:
    """valkey-benchmark test -> data-type group (the groups of redis-benchmarks-specification)."""
    group = command_group(test)
    return "generic" if group == UNKNOWN else group
