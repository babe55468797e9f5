"""`vkbench export postgres` into a real PostgreSQL (Debian's server, tools/setup/postgres.sh):
every point of a history lands in Valkey's benchmark_metrics once, however often it is exported.

The cluster is the test's own: initdb + pg_ctl in a fresh temporary directory, listening only on
a unix socket there (no TCP port), stopped and removed at the end. PostgreSQL refuses to run as
root, so as root it runs as Debian's ``postgres`` user; that user cannot enter pytest's
``tmp_path`` (under root's 0700 /tmp/pytest-of-root), hence a directory of its own under /tmp.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from factory import nightly_series

from cli_outcome import vk
from vkbench.history import HistoryStore, ingest

psycopg = pytest.importorskip("psycopg", reason="pip install 'vkbench[postgres]' (tools/setup.sh --test installs it)")


def _initdb() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if not found:
        pytest.fail("no PostgreSQL server: run tools/setup/postgres.sh (tools/setup.sh --test does)")
    return found[-1]


def _free_port() -> int:
    with socket.socket() as s:            # the socket file's name carries the port: any unused number
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def postgres_dsn():
    bindir = Path(_initdb()).parent
    as_root = os.geteuid() == 0
    base = Path(tempfile.mkdtemp(prefix="vkbench-pg-"))
    prefix: list[str] = []
    if as_root:
        user = pwd.getpwnam("postgres")
        os.chown(base, user.pw_uid, user.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    data, port = base / "data", _free_port()

    def run(*args: str) -> None:
        subprocess.run([*prefix, *args], check=True, capture_output=True, text=True, timeout=300)

    try:
        run(str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(base / "log"), "-w", "-t", "300", "-o",
            f"-c listen_addresses='' -c unix_socket_directories='{base}' -p {port} -c fsync=off", "start")
        try:
            yield f"host={base} port={port} user=postgres dbname=postgres"
        finally:
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "-t", "120", "stop")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_every_point_lands_once_in_benchmark_metrics(tmp_path, postgres_dsn):
    history = tmp_path / "h"
    store = HistoryStore(history)
    ingest(store, nightly_series(tmp_path / "a", [1e5 + i for i in range(31)], command="SET", commits=[f"{i:040x}" for i in range(31)]))
    ingest(store, nightly_series(tmp_path / "b", [2e5 + i for i in range(31)], command="GET", pipeline=1))
    index = store.index()
    points = {sid: store.read_series(sid, entry) for sid, entry in index["series"].items()}
    total = sum(map(len, points.values()))
    assert total == 62

    code, text = vk("export", "postgres", "--dsn", postgres_dsn, history)
    assert code == 0 and "62 inserted" in text, text
    code, text = vk("export", "postgres", "--dsn", postgres_dsn, history)      # again: nothing new
    assert code == 0 and "0 inserted" in text and "62 already there" in text, text

    with psycopg.connect(postgres_dsn) as conn:
        rows = conn.execute(
            "SELECT e.series_id, e.run_id, e.cell_id, m.timestamp, m.commit, m.command, m.pipeline, m.clients, m.data_size, "
            "m.io_threads, m.cluster_mode, m.tls, m.architecture, m.rps, m.p50_latency_ms "
            "FROM benchmark_metrics m JOIN vkbench_exported_points e ON e.metrics_id = m.id").fetchall()
        assert conn.execute("SELECT count(*) FROM benchmark_metrics").fetchone()[0] == total
    by_key = {(r[0], r[1], r[2]): r for r in rows}
    assert len(by_key) == total
    for sid, series in points.items():
        dims = index["series"][sid]["dims"]
        for p in series:
            row = by_key[(sid, p["run_id"], p["cell_id"])]
            assert row[3].isoformat().replace("+00:00", "Z") == p["timestamp"]
            assert row[4] == (p.get("commit") or p.get("server_version") or p["version"])[:40]
            assert (row[5], row[6], row[7], row[8], row[9]) == (dims["command"], dims["pipeline"], dims["clients"], dims["data_size"], dims["io_threads"])
            assert row[10] is (dims["topology"] == "cluster") and row[11] is False and row[12] == index["series"][sid]["arch"]
            assert abs(float(row[13]) - p["metrics"]["rps"]["median"]) <= 0.006        # DECIMAL(12,2)
            assert abs(float(row[14]) - p["metrics"]["p50"]["median"]) <= 0.0006       # DECIMAL(10,3)


def test_a_refused_connection_is_an_export_error(tmp_path):
    code, text = vk("export", "postgres", "--dsn", f"host={tmp_path} port=1 user=nobody dbname=none", tmp_path)
    assert code == 12 and "cannot connect to PostgreSQL" in text, text
