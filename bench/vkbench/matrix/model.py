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

_SERVER = re.compile(r"^(valkey|redis):([A-Za-z0-9._/+-]+)$")
_CPUSET = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


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
    duration: int | None = Field(None, ge=1, description="seconds (memtier --test-time); valkey-benchmark uses requests")
    warmup: int = Field(0, ge=0, description="requests of an unmeasured warm-up run before the repetitions")
    preload: bool = Field(True, description="write the keyspace before measuring reads (GET on an empty keyspace measures misses)")
    repetitions: int = Field(3, ge=1, le=100)
    cpu: CpuPlacement | None = None
    read_from: ReadFrom = "primary"
    extra_server_args: list[str] = Field(default_factory=list)
    runner: str = Field("local", description="machine class / runner label: pi-cm4, cloud-x86, cloud-arm64, local")

    @field_validator("server")
    @classmethod
    def _server(cls, value: str) -> str:
        if not _SERVER.match(value):
            raise ValueError(
                f"{value!r} is not engine:version; engine is 'valkey' or 'redis', e.g. valkey:9.1.2, valkey:unstable"
            )
        return value

    @field_validator("topology")
    @classmethod
    def _topology(cls, value: str) -> str:
        try:
            return str(Topology.parse(value))
        except Exception:
            raise ValueError(f"{value!r} is not a topology; allowed: {TOPOLOGY_FORMS}") from None

    @field_validator("tests")
    @classmethod
    def _tests(cls, value: list[str]) -> list[str]:
        return [t.strip().lower() for t in value]

    @model_validator(mode="after")
    def _consistent(self) -> Cell:
        if self.requests is None and self.duration is None:
            raise ValueError("set requests or duration")
        if self.read_from == "replicas" and not Topology.parse(self.topology).replicas:
            raise ValueError("read_from: replicas needs a topology with replicas (replication:R or cluster:N:R)")
        if self.duration is not None and self.tool != "memtier_benchmark" and self.requests is None:
            raise ValueError(f"{self.tool} has no duration option; set requests instead")
        return self

    # -- identity -----------------------------------------------------------------------------
    @property
    def engine(self) -> str:
        return self.server.split(":", 1)[0]

    @property
    def version(self) -> str:
        return self.server.split(":", 1)[1]

    def dimensions(self) -> dict[str, Any]:
        """Every dimension that defines what was measured (the series key, minus runner)."""
        data = self.model_dump(mode="json")
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
        digest = hashlib.sha256(json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()[:8]
        return f"{readable}_{digest}"

    def to_arg(self) -> str:
        """Compact JSON for ``vkbench run --cell``."""
        return json.dumps(self.model_dump(mode="json", exclude_defaults=True), sort_keys=True, separators=(",", ":"))


class MatrixFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    defaults: dict[str, Any] = Field(default_factory=dict)
    groups: list[dict[str, Any]] = Field(min_length=1)
