"""A history into PostgreSQL, in Valkey's own schema (``benchmark_metrics`` of
valkey-io/valkey-perf-benchmark's ``dashboards/schema.sql``), so Valkey's Grafana dashboards show
vkbench's numbers.

One row per series point (a series is one command of one configuration on one machine class).
The mapping (docs/history-format.md, "PostgreSQL export"):

- ``timestamp``: the point's; ``commit``: the build's commit (source builds), else the
  server's version (``9.1.2``), else the version asked for; cut to 40 characters;
- ``command``, ``data_size``, ``pipeline``, ``clients``, ``requests``, ``io_threads``,
  ``warmup``, ``duration``: the series' dimensions; ``benchmark_threads``: ``client_threads``;
  ``benchmark_mode``: ``duration`` when the run was timed, else ``requests``;
- ``cluster_mode``: topology ``cluster``; ``tls``: the ``workload`` dimension's ``tls`` (false
  when absent);
- ``architecture``: the machine's (``x86_64``, ``aarch64``);
- ``rps`` and ``avg/min/p50/p95/p99/max_latency_ms``: the medians over the repetitions
  (NULL where the tool did not report one).

Idempotent: ``vkbench_exported_points`` (vkbench's own table) records each exported point's
(series, run, cell) with the row it became, its machine class and validity; a point already
there is not inserted again, so exporting the same history twice adds nothing. One transaction
per export, serialised between concurrent exporters by an advisory lock.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from pathlib import Path

from ..errors import ExportError, UsageError
from ..history.store import HistoryStore
from ..results.aggregate import command_series

#: pg_advisory_xact_lock key of vkbench exports (any constant; "vkbench" in ASCII).
_LOCK_KEY = 0x766B62656E6368

LATENCY_COLUMNS = {"avg": "avg_latency_ms", "min": "min_latency_ms", "p50": "p50_latency_ms",
                   "p95": "p95_latency_ms", "p99": "p99_latency_ms", "max": "max_latency_ms"}
METRIC_COLUMNS = ("timestamp", "commit", "command", "data_size", "pipeline", "clients", "requests", "rps",
                  *LATENCY_COLUMNS.values(), "cluster_mode", "tls", "io_threads", "benchmark_threads",
                  "benchmark_mode", "duration", "warmup", "architecture")


def schema_sql() -> str:
    return resources.files("vkbench.export").joinpath("postgres_schema.sql").read_text(encoding="utf-8")


@dataclass
class PostgresExport:
    series: int = 0
    points: int = 0
    inserted: int = 0
    already: int = 0

    def summary(self) -> str:
        return (f"{self.points} points of {self.series} series: {self.inserted} inserted into benchmark_metrics, "
                f"{self.already} already there")


def _int(value) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _median(point: dict, metric: str) -> float | None:
    stat = (point.get("metrics") or {}).get(metric)
    return stat.get("median") if isinstance(stat, dict) else None


def metrics_row(dims: dict, arch: str | None, point: dict) -> dict:
    """The benchmark_metrics row of one series point (the mapping above)."""
    commit = point.get("commit") or point.get("server_version") or point.get("version") or dims.get("version") or "unknown"
    row = {
        "timestamp": datetime.fromisoformat(point["timestamp"].replace("Z", "+00:00")),
        "commit": str(commit)[:40],
        "command": str(dims.get("command", ""))[:50],
        "data_size": _int(dims.get("data_size")),
        "pipeline": _int(dims.get("pipeline")),
        "clients": _int(dims.get("clients")),
        "requests": _int(dims.get("requests")),
        "rps": _median(point, "rps"),
        "cluster_mode": dims.get("topology") == "cluster",
        "tls": bool(dims.get("tls") or (dims.get("workload") or {}).get("tls")),
        "io_threads": _int(dims.get("io_threads")),
        "benchmark_threads": _int(dims.get("client_threads")),
        "benchmark_mode": "duration" if dims.get("duration") else "requests",
        "duration": _int(dims.get("duration")),
        "warmup": _int(dims.get("warmup")),
        "architecture": (arch or "")[:50] or None,
    }
    for metric, column in LATENCY_COLUMNS.items():
        row[column] = _median(point, metric)
    return row


def _connect(dsn: str):
    try:
        import psycopg
    except ImportError:
        raise UsageError("the PostgreSQL export needs psycopg",
                         hint="pip install 'vkbench[postgres]' (or: pip install 'psycopg[binary]')") from None
    try:
        return psycopg.connect(dsn, connect_timeout=30)
    except psycopg.Error as err:
        raise ExportError(f"cannot connect to PostgreSQL ({str(err).strip()})",
                          hint="check --dsn (e.g. postgresql://user@host:5432/db or host=/run/postgresql dbname=db)") from None


def export_postgres(history: str | os.PathLike, dsn: str, *, create_schema: bool = True) -> PostgresExport:
    """Every point of the history (checked as every reader checks it) into benchmark_metrics,
    once. Nothing is committed unless every new point went in."""
    import psycopg

    store = HistoryStore(Path(history))
    index = store.index()
    series = command_series(index["series"])
    report = PostgresExport(series=len(series))
    with _connect(dsn) as conn:
        try:
            with conn.transaction(), conn.cursor() as cur:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
                if create_schema:
                    cur.execute(schema_sql())
                cur.execute("SELECT series_id, run_id, cell_id FROM vkbench_exported_points")
                done = set(cur.fetchall())
                insert = (f"INSERT INTO benchmark_metrics ({', '.join(METRIC_COLUMNS)}) "
                          f"VALUES ({', '.join('%(' + c + ')s' for c in METRIC_COLUMNS)}) RETURNING id")
                for sid, entry in sorted(series.items()):
                    dims = entry.get("dims") or {}
                    for point in store.read_series(sid, entry):
                        report.points += 1
                        key = (sid, point["run_id"], point["cell_id"])
                        if key in done:
                            report.already += 1
                            continue
                        cur.execute(insert, metrics_row(dims, entry.get("arch"), point))
                        (metrics_id,) = cur.fetchone()
                        cur.execute(
                            "INSERT INTO vkbench_exported_points (series_id, run_id, cell_id, metrics_id, machine_class, version, valid) "
                            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                            (*key, metrics_id, dims.get("machine_class"), str(dims.get("version") or ""), bool(point.get("valid", True))),
                        )
                        done.add(key)
                        report.inserted += 1
        except psycopg.Error as err:
            raise ExportError(f"PostgreSQL refused the export, nothing was committed ({str(err).strip()})",
                              hint="a benchmark_metrics table of another shape? compare it with vkbench/export/postgres_schema.sql") from None
    return report
