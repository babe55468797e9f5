"""The demo sizes each topology's repetitions to the machine: one unrecorded probe per topology,
requests = minimum x margin worth (1-2-5 steps), kept for the next demo in the same directory."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vkbench import demo
from vkbench.demo import DemoPaths, nice_ceiling, size_cells
from vkbench.matrix import expand_matrix, load_matrix
from vkbench.runner import validity
from vkbench.runner.session import RunOptions


def test_nice_ceiling():
    assert [nice_ceiling(v) for v in (0.5, 1, 1.1, 2, 2.5, 7, 10, 914_285, 4_571_428)] == [1, 1, 2, 2, 5, 10, 10, 1_000_000, 5_000_000]


@pytest.fixture
def probe(monkeypatch):
    """A fake session: every probe repetition runs 200000 requests in 0.35 s (this machine kind,
    issue 22), and the demo's probe never reaches a server."""
    calls = []

    def fake_session(cells, options, progress=None):
        calls.append([c.cell_id for c in cells])
        outcomes = [SimpleNamespace(cell=c, result={"repetitions": [{"elapsed_s": 0.35 * c.requests / 200_000}]}) for c in cells]
        return SimpleNamespace(outcomes=outcomes)

    monkeypatch.setattr(demo, "run_session", fake_session)
    return calls


def test_the_smoke_demo_is_sized_so_no_repetition_is_too_short(tmp_path, probe):
    cells = expand_matrix(load_matrix("smoke"))
    paths = DemoPaths(tmp_path / "demo")
    sized, sizings = size_cells(cells, paths, RunOptions(run_id="r1"))
    assert len(probe) == 1 and len(probe[0]) == 3                     # standalone, cluster:3, replication:1
    by_topology = {s.topology: s.requests for s in sizings}
    assert by_topology == {"standalone": 1_000_000, "replication:1": 1_000_000, "cluster:3": 5_000_000}
    assert [c.requests for c in sized] == [by_topology[c.topology] for c in sized]
    for cell in sized:                                                 # at the probe's speed: long enough
        seconds = 0.35 * cell.requests / 200_000
        flags = validity.check(cell, repetitions=[{"elapsed_s": seconds, "records": [], "cpu": None}] * 3,
                               keys_before_reads=cell.keyspace, shards=3 if cell.topology == "cluster:3" else 1,
                               server_cpus=None, throttled=None)["flags"]
        assert "too-short" not in [f["code"] for f in flags], (cell.cell_id, seconds)
    assert not (paths.base / "sizing").exists()                        # the probe's results are not kept


def test_the_next_demo_reuses_the_sizing(tmp_path, probe):
    cells = expand_matrix(load_matrix("smoke"))
    paths = DemoPaths(tmp_path / "demo")
    first, _ = size_cells(cells, paths, RunOptions(run_id="r1"))
    second, sizings = size_cells(cells, paths, RunOptions(run_id="r2"))
    assert len(probe) == 1 and [c.requests for c in first] == [c.requests for c in second] and sizings
    (paths.base / demo.SIZING_FILE).write_text("{not json")
    size_cells(cells, paths, RunOptions(run_id="r3"))
    assert len(probe) == 2                                             # unreadable: probed again


def test_a_sizing_whose_results_were_still_too_short_is_probed_again(tmp_path, probe):
    from vkbench.demo import forget_short_sizings

    cells = expand_matrix(load_matrix("smoke"))
    paths = DemoPaths(tmp_path / "demo")
    sized, _ = size_cells(cells, paths, RunOptions(run_id="r1"))
    short = next(c for c in sized if c.topology == "standalone")
    flagged = SimpleNamespace(cell=short, result={"validity": {"flags": [{"code": "too-short"}]}})
    fine = SimpleNamespace(cell=next(c for c in sized if c.topology == "cluster:3"), result={"validity": {"flags": []}})
    assert forget_short_sizings(paths, SimpleNamespace(outcomes=[flagged, fine])) == ["standalone@200000"]
    size_cells(cells, paths, RunOptions(run_id="r2"))
    assert len(probe) == 2 and len(probe[1]) == 1                      # only standalone is probed again
