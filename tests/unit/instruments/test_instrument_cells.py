"""The cell field ``instrument``: refusals with their reason, ids of wall-clock cells unchanged,
and the result blocks it adds (``instructions``, ``memory``) accepted by the result schema."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from vkbench.cli._options import overrides_from
from vkbench.errors import ResultFileError
from vkbench.matrix.model import Cell
from vkbench.results.io import validate_result

_spec = importlib.util.spec_from_file_location("history_factory", Path(__file__).resolve().parents[1] / "history" / "factory.py")
_factory = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_factory)
make_result = _factory.make_result



def test_wallclock_is_the_default_and_stays_out_of_ids_and_dimensions():
    plain = Cell(server="valkey:9.1.2")
    explicit = Cell(server="valkey:9.1.2", instrument="wallclock")
    assert plain.instrument == "wallclock"
    assert plain.cell_id == explicit.cell_id
    assert "instrument" not in plain.dimensions()
    assert "instrument" not in json.loads(plain.to_arg())


def test_a_counted_cell_has_its_own_id_and_says_so_in_its_dimensions():
    counted = Cell(server="valkey:9.1.2", instrument="instructions")
    both = Cell(server="valkey:9.1.2", instrument="both")
    assert len({counted.cell_id, both.cell_id, Cell(server="valkey:9.1.2").cell_id}) == 3
    assert counted.dimensions()["instrument"] == "instructions"
    assert Cell.model_validate_json(counted.to_arg()) == counted


@pytest.mark.parametrize("fields, reason", [
    ({"io_threads": 2}, "spin-poll"),
    ({"topology": "cluster:3"}, "replicas and cluster nodes"),
    ({"topology": "replication:1"}, "replicas and cluster nodes"),
    ({"tool": "memtier_benchmark"}, "valkey-benchmark -n and --seed"),
    ({"tool": "redis-benchmark"}, "valkey-benchmark -n and --seed"),
    ({"client_threads": 2}, "client unpinned"),
])
@pytest.mark.parametrize("instrument", ["instructions", "both"])
def test_cells_that_cannot_be_counted_are_refused_with_the_reason(fields, reason, instrument):
    with pytest.raises(ValidationError, match=reason):
        Cell(server="valkey:9.1.2", instrument=instrument, **fields)
    Cell(server="valkey:9.1.2", **fields)      # the same cell on the wall clock is fine


def test_the_cli_override_sets_the_instrument():
    assert overrides_from({"instrument": "both"}) == {"instrument": "both"}
    assert "instrument" not in overrides_from({"instrument": None})


def _instructions_block() -> dict:
    return {
        "method": {"tool": "callgrind", "windows": 2, "window_requests": 1000, "servers": 2, "id": "callgrind-0123456789",
                   "glibc_tunables": "glibc.cpu.hwcaps=-AVX2", "subtract": ["serverCron", "activeExpireCycle"]},
        "commands": {"set": {"per_op": 8100.5, "mean": 8100.5, "cv_pct": 0.2, "cv_servers_pct": 0.05,
                             "per_server": [8100.0, 8101.0], "values": [8099.0, 8101.0, 8100.0, 8102.0],
                             "top_functions": [{"function": "siphash", "self_per_op": 321.0}]}},
        "servers": [{"seed": 1, "windows": []}],
        "duration_s": 30.5,
    }


def test_the_result_schema_takes_instructions_and_memory():
    result = make_result()
    result["dimensions"]["instrument"] = "both"
    result["instructions"] = _instructions_block()
    result["memory"] = {"keys": 1000, "used_memory_before": 1000000, "used_memory_after": 1100000,
                        "bytes_per_key": 100.0, "value_bytes": 3}
    validate_result(result, source="r.json")


@pytest.mark.parametrize("mutate", [
    lambda r: r["memory"].pop("bytes_per_key"),
    lambda r: r["memory"].update(extra=1),
    lambda r: r["instructions"]["commands"]["set"].update(per_op=-1),
    lambda r: r["instructions"]["commands"]["set"]["values"].append("x"),
    lambda r: r["instructions"].pop("method"),
    lambda r: r["dimensions"].update(instrument="sampling"),
])
def test_the_result_schema_refuses_broken_blocks(mutate):
    result = make_result()
    result["instructions"] = _instructions_block()
    result["memory"] = {"keys": 10, "used_memory_before": 1, "used_memory_after": 2, "bytes_per_key": 0.1}
    broken = copy.deepcopy(result)
    mutate(broken)
    with pytest.raises(ResultFileError):
        validate_result(broken, source="r.json")


def test_run_refuses_instructions_with_io_threads_and_says_why(tmp_path):
    from cli_outcome import vk  # tests/cli_outcome.py

    code, text = vk("run", "--cell", json.dumps({"server": "valkey:9.1.2", "io_threads": 4}),
                    "--instrument", "instructions", "--out", tmp_path)
    assert code == 2
    assert "spin-poll" in text and "io-threads 1" in text
    assert not list(tmp_path.glob("*.json"))
