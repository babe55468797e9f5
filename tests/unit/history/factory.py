"""Schema-valid result files for tests (checked with validate_result on every call).

``make_result(rps={"SET": 400_000}, ...)`` builds one cell of one run; latency figures are
derived from rps so a throughput drop is also a latency rise, as on a real server.
"""

from __future__ import annotations

import json
from pathlib import Path

from vkbench.results.io import validate_result
from vkbench.stats import summarize

BASE_DIMENSIONS = {
    "engine": "valkey",
    "version": "unstable",
    "io_threads": 2,
    "topology": "standalone",
    "tool": "valkey-benchmark",
    "tests": ["set", "get"],
    "pipeline": 16,
    "clients": 50,
    "client_threads": None,
    "data_size": 3,
    "keyspace": 100000,
    "requests": 100000,
    "duration": None,
    "warmup": 0,
    "preload": True,
    "repetitions": 3,
    "cpu": None,
    "read_from": "primary",
    "extra_server_args": [],
    "runner": "cloud-x86",
}


def make_result(
    *,
    run_id: str = "run-1",
    cell_id: str | None = None,
    timestamp: str = "2026-11-01T02:00:00Z",
    rps: dict[str, float] | None = None,
    spread: float = 0.01,
    commit: str | None = "a1b2c3d4e5f6a7b8c9d0",
    version: str = "unstable",
    machine_class: str = "cloud-x86",
    fingerprint_id: str = "fp-aaaa",
    valid: bool = True,
    flags: list[str] | None = None,
    workflow_run_url: str | None = None,
    kind: str = "vkbench.result",
    **dimensions,
) -> dict:
    rps = rps if rps is not None else {"SET": 400_000.0, "GET": 450_000.0}
    dims = dict(BASE_DIMENSIONS, version=version, runner=machine_class, **dimensions)
    cell_id = cell_id or f"valkey-{version}_standalone_io{dims['io_threads']}_vb_P{dims['pipeline']}_c{dims['clients']}_d{dims['data_size']}"
    reps, summary = [], {}
    for command, value in rps.items():
        samples = [value * (1 - spread), value, value * (1 + spread)]
        p50 = [50 * 16 / s * 1000 for s in samples]            # Little's law-ish, ms
        summary[command] = {
            "rps": summarize(samples),
            "p50": summarize(p50),
            "p99": summarize([x * 2.5 for x in p50]),
            "avg": summarize([x * 1.1 for x in p50]),
        }
    for i in range(3):
        records = []
        for command, stats in summary.items():
            records.append({
                "command": command,
                "rps": stats["rps"]["samples"][i],
                "latency_ms": {k: stats[k]["samples"][i] for k in ("avg", "p50", "p99")},
                "tool": "valkey-benchmark",
            })
        reps.append({"index": i, "records": records})
    result = {
        "schema_version": 1,
        "kind": kind,
        "run": {
            "run_id": run_id,
            "cell_id": cell_id,
            "timestamp": timestamp,
            "trigger": "schedule",
            "vkbench_version": "0.1.0",
            "vkbench_commit": None,
            "workflow_run_url": workflow_run_url,
            "machine_class": machine_class,
            "backend": "native",
        },
        "subject": {
            "engine": "valkey",
            "version": version,
            "server_version": "9.1.2",
            "commit": commit,
            "build": {"source": "source-build", "id": f"sha256:{(commit or 'x')[:12]}"},
        },
        "tool": {"name": "valkey-benchmark", "version": "9.1.2"},
        "dimensions": dims,
        "repetitions": reps,
        "summary": summary,
        "environment": {"fingerprint_id": fingerprint_id, "arch": "x86_64", "cpu_model": "Test CPU", "cores": 2},
        "validity": {
            "valid": valid,
            "flags": [{"code": code, "message": f"{code} (test)", "severity": "warning"} for code in (flags or [])],
        },
    }
    return validate_result(result, source="factory")


def write_result(directory: Path, result: dict, name: str | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (name or f"{result['run']['run_id']}__{result['run']['cell_id']}.json")
    path.write_text(json.dumps(result, indent=1))
    return path


def nightly_series(
    directory: Path,
    values: list[float],
    *,
    start_day: int = 1,
    month: str = "2026-10",
    command: str = "SET",
    commits: list[str] | None = None,
    **kwargs,
) -> list[Path]:
    """One result file per night with the given rps for ``command`` (days roll into the next
    months past 28, so long series span several shards)."""
    paths = []
    year, mon = (int(x) for x in month.split("-"))
    for i, value in enumerate(values):
        day = start_day + i
        m_offset, d = divmod(day - 1, 28)
        y, m = year + (mon - 1 + m_offset) // 12, (mon - 1 + m_offset) % 12 + 1
        ts = f"{y:04d}-{m:02d}-{d + 1:02d}T02:00:00Z"
        commit = commits[i] if commits else f"{i:04x}" + "c0ffee" * 6
        result = make_result(run_id=f"run-{start_day - 1 + i:04d}", timestamp=ts, rps={command: value}, commit=commit[:40], **kwargs)
        paths.append(write_result(directory, result))
    return paths
