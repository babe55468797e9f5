"""Pydantic models of a matrix file and of one fully resolved cell.

A matrix file::

    name: smoke
    description: seconds long; two versions; every topology
    defaults:            # applied to every group
      tests: [set, get]
      pipeline: 16
    groups:              # each group: any field may be a list -> cartesian product
      - server: [valkey:9.0.0, valkey:9.1.2]
        io_threads: [1, 2]
        topology: standalone

Validation errors name the field and the allowed values (see ``expand.format_validation_error``).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..topology.model import TOPOLOGY_FORMS, Topology

Tool = Literal["valkey-benchmark", "redis-benchmark", "memtier_benchmark"]
Engine = Literal["valkey", "redis"]
ReadFrom = Literal["primary", "replicas"]
Instrument = Literal["wallclock", "instructions", "both"]

_SERVER = re.compile(r"^(valkey|redis):([A-Za-z0-9._/+-]{1,128}(@source)?)$")
_CPUSET = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
#: A runner label (it reaches `runs-on` and a concurrency group); which labels are allowed
#: is runners/classes.yaml's business (vkbench.matrix.runner_classes).
_RUNNER = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
_TEST = re.compile(r"^[a-z0-9_-]{1,32}$")


class CpuPlacement(BaseModel):
    """Disjoint CPU sets for servers and client (taskset -c syntax)."""

    model_config = ConfigDict(extra="forbid")
    server: str
    client: str

    @field_validator("server", "client")
    @classmethod
    def _cpuset(cls, value: str) -> str:
        if not _CPUSET.match(value):
            raise ValueError(f"{value!r} is not a CPU list; write it like taskset -c: '0', '0-1', '0,2'")
        return value


_RATIO = re.compile(r"^\d{1,6}:\d{1,6}$")
_KEY_PATTERN = re.compile(r"^[GRZSP]:[GRZSP]$")
_SIZE_RANGE = re.compile(r"^\d{1,9}-\d{1,9}$")
_SIZE_LIST = re.compile(r"^\d{1,9}:\d{1,6}(,\d{1,9}:\d{1,6})*$")
_KEY_PREFIX = re.compile(r"^[A-Za-z0-9:_.{}-]{0,64}$")
_ACL_USER = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class ToolCommandSpec(BaseModel):
    """One memtier ``--command`` with its ``--command-ratio`` and ``--command-key-pattern``."""

    model_config = ConfigDict(extra="forbid")
    command: str = Field(min_length=1, max_length=65536,
                         description="e.g. 'SET __key__ __data__', 'GET __key__' (catalog specs write long ones)")
    ratio: int = Field(1, ge=1, le=1000000)
    key_pattern: Literal["G", "R", "Z", "S", "P"] = "R"


class Workload(BaseModel):
    """What memtier_benchmark users set beyond the common dimensions (docs/matrix.md, 'workload').

    Every field is optional; an unset field keeps vkbench's default (memtier's own default where
    vkbench has none). A field the cell's tool cannot express is refused when the cell is built,
    with the reason, so two tools' cells are never silently different workloads."""

    model_config = ConfigDict(extra="forbid")
    ratio: str | None = Field(None, description="memtier --ratio SET:GET, e.g. '1:10' (default: from tests)")
    key_pattern: str | None = Field(None, description="memtier --key-pattern SET:GET, e.g. 'R:R', 'G:G', 'S:S'")
    key_prefix: str | None = Field(None, description="memtier --key-prefix (default 'memtier-')")
    key_minimum: int | None = Field(None, ge=1, description="first key id; the range is key_minimum .. key_minimum+keyspace-1")
    data_size_range: str | None = Field(None, description="memtier --data-size-range 'min-max' (replaces data_size)")
    data_size_pattern: Literal["R", "S"] | None = None
    data_size_list: str | None = Field(None, description="memtier --data-size-list 'size:weight,...'")
    commands: list[ToolCommandSpec] = Field(default_factory=list, description="memtier --command entries")
    multi_key_get: int | None = Field(None, ge=1, le=10000)
    rate_limit: int | None = Field(None, ge=1, description="requests per second per connection (--rate-limiting)")
    run_count: int | None = Field(None, ge=1, le=100, description="memtier --run-count: runs per repetition (AGGREGATED)")
    protocol: Literal["resp2", "resp3"] | None = None
    acl_user: str | None = Field(None, description="an ACL user vkbench creates on every server and the tool logs in as")
    tls: bool = Field(False, description="TLS only: servers on tls-port (port 0) with a throw-away CA per cell, "
                                         "the tool with --tls and a client certificate (docs/tls.md)")

    @field_validator("ratio")
    @classmethod
    def _ratio(cls, value: str | None) -> str | None:
        if value is not None and (not _RATIO.match(value) or value == "0:0"):
            raise ValueError(f"{value!r} is not SET:GET, e.g. '1:10', '1:0', '0:1'")
        return value

    @field_validator("key_pattern")
    @classmethod
    def _key_pattern(cls, value: str | None) -> str | None:
        if value is not None and not _KEY_PATTERN.match(value):
            raise ValueError(f"{value!r} is not SET:GET patterns from G, R, Z, S, P (e.g. 'R:R')")
        return value

    @field_validator("key_prefix")
    @classmethod
    def _key_prefix(cls, value: str | None) -> str | None:
        if value is not None and not _KEY_PREFIX.match(value):
            raise ValueError(f"{value!r}: a key prefix has at most 64 of A-Z a-z 0-9 : _ . {{ }} -")
        return value

    @field_validator("data_size_range")
    @classmethod
    def _size_range(cls, value: str | None) -> str | None:
        if value is not None:
            if not _SIZE_RANGE.match(value):
                raise ValueError(f"{value!r} is not 'min-max' bytes, e.g. '32-1024'")
            low, high = (int(v) for v in value.split("-"))
            if not 1 <= low <= high:
                raise ValueError(f"{value!r}: need 1 <= min <= max")
        return value

    @field_validator("data_size_list")
    @classmethod
    def _size_list(cls, value: str | None) -> str | None:
        if value is not None and not _SIZE_LIST.match(value):
            raise ValueError(f"{value!r} is not 'size:weight,...', e.g. '32:7,1024:3'")
        return value

    @field_validator("acl_user")
    @classmethod
    def _acl_user(cls, value: str | None) -> str | None:
        if value is not None and (not _ACL_USER.match(value) or value == "default"):
            raise ValueError(f"{value!r}: an ACL user name of A-Z a-z 0-9 _ . - (not 'default')")
        return value

    def ratio_parts(self) -> tuple[int, int] | None:
        if self.ratio is None:
            return None
        sets, gets = self.ratio.split(":")
        return int(sets), int(gets)


_CATALOG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:#+-]{0,199}$")
_INIT_ARG = re.compile(r"^[^\x00]{0,65536}$", re.DOTALL)


class CatalogEntry(BaseModel):
    """Where a cell came from when it came from a workload catalog (vkbench.catalogs): the
    spec or config, its groups and commands, and what it asks before measuring."""

    model_config = ConfigDict(extra="forbid")
    source: Literal["redis-benchmarks-specification", "valkey-perf-benchmark"]
    name: str = Field(description="the spec's name, or the config file and entry (benchmark-configs.json#0)")
    groups: list[str] = Field(default_factory=list, max_length=32)
    commands: list[str] = Field(default_factory=list, max_length=64)
    preload: list[str] = Field(default_factory=list, max_length=512,
                               description="memtier_benchmark arguments of the spec's preload (run before measuring)")
    init_commands: list[list[str]] = Field(default_factory=list, max_length=10000,
                                           description="commands sent once after the preload (init_commands, init_lua)")
    keyspacelen: int | None = Field(None, ge=0, description="keys the spec expects after its preload (dbconfig.check)")
    spec_duration: int | None = Field(None, description="the spec's own --test-time / duration, before overrides")
    spec_requests: int | None = Field(None, description="the spec's own request count, before overrides")
    notes: list[str] = Field(default_factory=list, max_length=16, description="how the spec was mapped, where not 1:1")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _CATALOG_NAME.match(value):
            raise ValueError(f"{value[:60]!r} is not a catalog entry name (letters, digits, . _ : # + -)")
        return value

    @field_validator("groups", "commands")
    @classmethod
    def _words(cls, value: list[str]) -> list[str]:
        for word in value:
            if not _TEST.match(word):
                raise ValueError(f"{word[:40]!r} is not a group or command name")
        return value

    @field_validator("preload")
    @classmethod
    def _preload(cls, value: list[str]) -> list[str]:
        for arg in value:
            if not _INIT_ARG.match(arg) or len(arg) > 65536:
                raise ValueError(f"{arg[:40]!r}: a preload argument is at most 65536 characters without NUL")
        return value

    @field_validator("init_commands")
    @classmethod
    def _init(cls, value: list[list[str]]) -> list[list[str]]:
        for command in value:
            if not command or len(command) > 20000 or not all(_INIT_ARG.match(a) for a in command):
                raise ValueError("an init command is 1-20000 arguments without NUL, each at most 64 KB")
        return value

    def summary(self) -> dict[str, Any]:
        """What identifies the entry in results and series (the preload and init commands stay
        in the cell and its id, not in every series line)."""
        return {"source": self.source, "name": self.name, "groups": self.groups, "commands": self.commands}


#: Workload fields valkey-/redis-benchmark can express (the rest is memtier only).
BENCHMARK_WORKLOAD_FIELDS = {"protocol", "acl_user", "tls"}
#: Cell fields added after results existed: left out of dimensions and the cell id while at
#: their default, so the series of existing cells keep their identity.
OPTIONAL_DIMENSIONS: dict[str, Any] = {"workload": None, "tool_args": [], "instrument": "wallclock", "catalog": None}


def instructions_refusal(cell: "Cell") -> str | None:
    """Why this cell cannot be measured by instructions (docs/instructions.md), or None."""
    if cell.io_threads > 1:
        return (f"io-threads {cell.io_threads}: the I/O threads spin-poll and valgrind runs one thread at a time, so "
                "the counts measure the polling, not the work (CV 5-6% measured; perf would count the polling too, "
                "as much as time allows); count instructions at io-threads 1")
    if cell.topology != "standalone":
        return (f"topology {cell.topology}: instruction counts run one fresh server under callgrind per measurement; "
                "replicas and cluster nodes are other processes whose work the count would miss")
    if cell.tool != "valkey-benchmark":
        return (f"tool {cell.tool}: instruction counts need exactly N requests per window and the same keys for "
                "every server (valkey-benchmark -n and --seed); use tool valkey-benchmark")
    if cell.requests is None:
        return "instruction counts need a request count (requests), not a duration"
    if cell.workload and cell.workload.tls:
        return ("tls: instruction counts run their own plain server under callgrind; the handshake and "
                "encryption would be counted on a server vkbench does not start with TLS; count without tls")
    if cell.read_from != "primary" or cell.cpu is not None or cell.client_threads:
        return "instruction counts run one server with the client unpinned: drop read_from, cpu and client_threads"
    return None
_TOOL_ARG = re.compile(r"^[^\x00-\x1f]{1,1000}$")


class Cell(BaseModel):
    """One benchmark configuration, self-contained: what ``vkbench run --cell JSON`` takes."""

    model_config = ConfigDict(extra="forbid")

    server: str = Field(description="engine:version, e.g. valkey:9.1.2, redis:7.0.15, valkey:unstable (git ref)")
    io_threads: int = Field(1, ge=1, le=128)
    topology: str = "standalone"
    tool: Tool = "valkey-benchmark"
    tests: list[str] = Field(default_factory=lambda: ["set", "get"], min_length=1)
    pipeline: int = Field(1, ge=1, le=10000)
    clients: int = Field(50, ge=1, le=100000)
    client_threads: int | None = Field(None, ge=1, le=256)
    data_size: int = Field(3, ge=1, le=512 * 1024 * 1024)
    keyspace: int | None = Field(100000, ge=1, description="-r: random keys; None writes a single key")
    requests: int | None = Field(100000, ge=1)
    duration: int | None = Field(None, ge=1, description="seconds (memtier --test-time, replaces requests); "
                                                         "memtier_benchmark only")
    warmup: int = Field(0, ge=0, description="requests of an unmeasured warm-up run before the repetitions")
    preload: bool = Field(True, description="write the keyspace before measuring reads (GET on an empty keyspace measures misses)")
    repetitions: int = Field(3, ge=1, le=100)
    cpu: CpuPlacement | None = None
    read_from: ReadFrom = "primary"
    extra_server_args: list[str] = Field(default_factory=list)
    workload: Workload | None = Field(None, description="memtier-style workload options (ratio, key pattern, ...)")
    tool_args: list[str] = Field(default_factory=list, max_length=64,
                                 description="extra arguments appended to the tool's command line (recorded)")
    runner: str = Field("local", description="machine class / runner label: pi-cm4, cloud-x86, cloud-arm64, local")
    instrument: Instrument = Field("wallclock", description="wallclock (rps, latency), instructions (per operation, "
                                                            "under callgrind: docs/instructions.md) or both")
    catalog: CatalogEntry | None = Field(None, description="the catalog spec or config this cell comes from")

    @field_validator("server")
    @classmethod
    def _server(cls, value: str) -> str:
        if not _SERVER.match(value):
            raise ValueError(
                f"{value[:80]!r} is not engine:version; engine is 'valkey' or 'redis', e.g. valkey:9.1.2, valkey:unstable"
            )
        return value

    @field_validator("topology")
    @classmethod
    def _topology(cls, value: str) -> str:
        try:
            return str(Topology.parse(value))
        except Exception:
            raise ValueError(f"{value[:40]!r} is not a topology; allowed: {TOPOLOGY_FORMS}") from None

    @field_validator("tests")
    @classmethod
    def _tests(cls, value: list[str]) -> list[str]:
        tests = [t.strip().lower() for t in value]
        for test in tests:
            if not _TEST.match(test):
                raise ValueError(f"{test[:40]!r} is not a test name (lowercase letters, digits, _ and -, e.g. set, get, lpush)")
        return tests

    @field_validator("runner")
    @classmethod
    def _runner(cls, value: str) -> str:
        if not _RUNNER.match(value):
            raise ValueError(f"{value[:40]!r} is not a runner label (lowercase letters, digits and -, e.g. cloud-x86)")
        return value

    @field_validator("extra_server_args")
    @classmethod
    def _extra_server_args(cls, value: list[str]) -> list[str]:
        # one rule for matrices, catalogs, --cell and the A/B workflow (which runs this module
        # as a script): a cell tunes the server, never its auth, binding, modules or paths
        from .server_settings import ServerSettingError, check_server_args

        try:
            return check_server_args(value)
        except ServerSettingError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("tool_args")
    @classmethod
    def _tool_args(cls, value: list[str]) -> list[str]:
        for arg in value:
            if not _TOOL_ARG.match(arg):
                raise ValueError(f"{arg!r}: a tool argument is 1-1000 characters without control characters")
        return value

    @model_validator(mode="before")
    @classmethod
    def _tls_shorthand(cls, data: Any) -> Any:
        """``"tls": true`` on a cell (or a matrix group) is ``workload: {tls: true}``: one field,
        so a TLS cell's identity does not depend on how it was written."""
        if isinstance(data, dict) and "tls" in data:
            data = dict(data)
            tls = data.pop("tls")
            if tls is None or tls is False:
                return data
            if tls is not True:
                raise ValueError(f"tls: {tls!r} is not true or false")
            workload = data.get("workload")
            if workload is None:
                data["workload"] = {"tls": True}
            elif isinstance(workload, dict):
                data["workload"] = {**workload, "tls": True}
            else:
                data["workload"] = workload.model_copy(update={"tls": True})
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Cell:
        if self.requests is None and self.duration is None:
            raise ValueError("set requests or duration")
        if self.read_from == "replicas" and not Topology.parse(self.topology).replicas:
            raise ValueError("read_from: replicas needs a topology with replicas (replication:R or cluster:N:R)")
        if self.duration is not None and self.tool != "memtier_benchmark":
            raise ValueError(f"duration is memtier's --test-time: {self.tool} has no test-time option and would "
                             "silently run its requests instead; set requests (or use tool memtier_benchmark)")
        if self.instrument != "wallclock":
            refusal = instructions_refusal(self)
            if refusal:
                raise ValueError(f"instrument {self.instrument}: {refusal}")
        if self.tool == "memtier_benchmark":
            self._check_memtier()
        elif self.workload is not None:
            unsupported = sorted(name for name in self.workload.model_fields_set - BENCHMARK_WORKLOAD_FIELDS
                                 if getattr(self.workload, name) not in (None, [], False))
            if unsupported:
                raise ValueError(f"workload {', '.join(unsupported)}: {self.tool} cannot express this (memtier_benchmark "
                                 "only); without it the cells of the two tools would measure different workloads")
        return self

    def _check_memtier(self) -> None:
        """Clients and threads mean the same for every tool: clients = connections in total."""
        threads = self.client_threads or 1
        if self.clients % threads:
            raise ValueError(f"clients {self.clients} is the total number of connections and must be a multiple of "
                             f"client_threads {threads} (memtier runs clients/threads connections per thread)")
        workload = self.workload or Workload()
        if not workload.commands and workload.ratio is None:
            unknown = sorted(set(self.tests) - {"set", "get"})
            if unknown:
                raise ValueError(f"memtier_benchmark runs tests set and get (got {', '.join(unknown)}); "
                                 "other commands go in workload.commands")

    def memtier_ratio(self) -> tuple[int, int]:
        """SET:GET of a memtier cell: workload.ratio, else from tests (set -> 1:0, get -> 0:1, both 1:1)."""
        parts = self.workload.ratio_parts() if self.workload else None
        if parts is not None:
            return parts
        return (1 if "set" in self.tests else 0, 1 if "get" in self.tests else 0)

    # -- identity -----------------------------------------------------------------------------
    @property
    def engine(self) -> str:
        return self.server.split(":", 1)[0]

    @property
    def version(self) -> str:
        return self.server.split(":", 1)[1]

    def dimensions(self) -> dict[str, Any]:
        """Every dimension that defines what was measured (the series key, minus runner)."""
        data = self._identity_dump()
        if self.catalog is not None:
            data["catalog"] = self.catalog.summary()
        data.pop("server")
        data["engine"], data["version"] = self.engine, self.version
        return data

    @property
    def cell_id(self) -> str:
        """Readable and unique: ``valkey-9.1.2_standalone_io2_vb_P16_c50_d3_<hash8>``."""
        tool = {"valkey-benchmark": "vb", "redis-benchmark": "rb", "memtier_benchmark": "mt"}[self.tool]
        readable = (
            f"{self.engine}-{self.version}_{self.topology.replace(':', '-')}_io{self.io_threads}"
            f"_{tool}_P{self.pipeline}_c{self.clients}_d{self.data_size}"
        )
        readable = re.sub(r"[^A-Za-z0-9._-]", "-", readable)
        digest = hashlib.sha256(json.dumps(self._identity_dump(), sort_keys=True).encode()).hexdigest()[:8]
        return f"{readable}_{digest}"

    def _identity_dump(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", exclude_none=False)
        if data.get("workload") is not None:
            data["workload"] = self.workload.model_dump(mode="json", exclude_defaults=True) or None
        for name, default in OPTIONAL_DIMENSIONS.items():
            if data.get(name) == default:
                data.pop(name, None)
        return data

    def to_arg(self) -> str:
        """Compact JSON for ``vkbench run --cell``."""
        return json.dumps(self.model_dump(mode="json", exclude_defaults=True), sort_keys=True, separators=(",", ":"))


class CatalogSelection(BaseModel):
    """Specs of the pinned redis-benchmarks-specification catalog a matrix runs beside (or instead
    of) its groups (docs/catalogs.md): every spec must run here, else the matrix is refused."""

    model_config = ConfigDict(extra="forbid")
    specs: list[str] = Field(min_length=1, max_length=500, description="spec names (file stems)")
    server: list[str] = Field(default_factory=lambda: ["valkey:9.1.2"], min_length=1, max_length=16)
    duration: int | None = Field(None, ge=1, le=3600, description="seconds per spec (the specs say 180 or so)")
    repetitions: int | None = Field(None, ge=1, le=100)

    @field_validator("specs")
    @classmethod
    def _specs(cls, value: list[str]) -> list[str]:
        for name in value:
            if not _CATALOG_NAME.match(name):
                raise ValueError(f"{name[:60]!r} is not a spec name")
        return value


class MatrixFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    defaults: dict[str, Any] = Field(default_factory=dict)
    groups: list[dict[str, Any]] = Field(default_factory=list)
    catalog: CatalogSelection | None = None

    @model_validator(mode="after")
    def _something(self) -> "MatrixFile":
        if not self.groups and self.catalog is None:
            raise ValueError("a matrix needs groups, or catalog specs, or both")
        return self
