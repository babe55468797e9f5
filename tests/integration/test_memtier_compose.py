"""memtier_benchmark through the compose backend: the same cells as the native test, against
the servers of a docker compose stack per cell (podman's Docker-compatible socket here), the
client on the host. Each cell must read what the preload wrote and record memtier's own table."""

from __future__ import annotations

import os

import pytest

from test_compose_backend import LOCAL_VERSION, containers_env
from test_memtier import BASE, GOOD_CELLS, check_good_cells, run_cells

pytestmark = pytest.mark.compose


def test_memtier_cells_in_every_topology_on_compose(tmp_path, monkeypatch):
    for name, value in containers_env().items():
        monkeypatch.setenv(name, value)
    names = list(GOOD_CELLS)
    cells = [{**GOOD_CELLS[n], "server": f"valkey:{LOCAL_VERSION}"} for n in names]
    # One failure through compose too: writes to a replica.
    cells.append({"server": f"valkey:{LOCAL_VERSION}", "topology": "replication:1", "read_from": "replicas",
                  "tests": ["set"], **BASE})
    report = run_cells(cells, tmp_path, backend="compose")
    failed = report.outcomes.pop()
    assert "writes went to a read-only replica: READONLY" in str(failed.error)
    check_good_cells(report, tmp_path / "out", names)
    for outcome in report.outcomes:
        assert outcome.result["run"]["backend"] == "compose"
    assert os.environ.get("DOCKER_HOST")
