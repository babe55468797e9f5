"""`vkbench ingest` and `vkbench export gab` through click."""

from __future__ import annotations

import json

from click.testing import CliRunner
from factory import make_result, write_result

from vkbench.cli.export import export_group
from vkbench.cli.ingest import ingest_cmd
from vkbench.errors import ResultFileError


def test_ingest_cli_summary_and_json(tmp_path):
    write_result(tmp_path / "res", make_result())
    runner = CliRunner()
    out = runner.invoke(ingest_cmd, [str(tmp_path / "res"), "--history", str(tmp_path / "h")])
    assert out.exit_code == 0, out.output
    assert "1 result file(s), 2 point(s) added to 2 series (2 new), 0 already present." in out.output
    again = runner.invoke(ingest_cmd, [str(tmp_path / "res"), "--history", str(tmp_path / "h"), "--json"])
    report = json.loads(again.output)
    assert (report["files"], report["added"], report["skipped"], report["new_series"]) == (1, 0, 2, 0)


def test_ingest_cli_refuses_a_missing_path(tmp_path):
    out = CliRunner().invoke(ingest_cmd, [str(tmp_path / "nope"), "--history", str(tmp_path / "h")])
    assert isinstance(out.exception, ResultFileError) and "nope" in str(out.exception)


def test_gab_export_format(tmp_path):
    res = tmp_path / "res"
    write_result(res, make_result(run_id="r1", version="9.1.2", rps={"SET": 400_000.0, "GET": 450_000.0}, spread=0.02))
    write_result(res, make_result(run_id="r1", cell_id="io4", version="9.1.2", io_threads=4, rps={"SET": 500_000.0}))
    write_result(res, make_result(run_id="r1", cell_id="bad", version="9.1.2", pipeline=1, rps={"SET": 1.0},
                                  valid=False, flags=["client-bound"]))
    out = CliRunner().invoke(export_group, ["gab", str(res), "--out", str(tmp_path / "gab")])
    assert out.exit_code == 0, out.output
    assert "rps.json: 3 series" in out.output and "skipped 1 invalid" in out.output
    rps = json.loads((tmp_path / "gab" / "rps.json").read_text())
    latency = json.loads((tmp_path / "gab" / "latency.json").read_text())
    names = [e["name"] for e in rps]
    assert names == sorted(names) and len(set(names)) == 3
    assert "SET standalone io2 P16 c50 d3 valkey:9.1.2 [cloud-x86]" in names
    entry = next(e for e in rps if e["name"] == "SET standalone io2 P16 c50 d3 valkey:9.1.2 [cloud-x86]")
    assert list(entry) == ["name", "unit", "value", "range", "extra"]
    assert entry["unit"] == "rps" and entry["value"] == 400_000.0
    assert entry["range"].startswith("± ") and float(entry["range"][2:]) > 0
    assert "run r1" in entry["extra"] and "n=3" in entry["extra"]
    assert {e["unit"] for e in latency} == {"ms"}
    assert "SET standalone io2 P16 c50 d3 valkey:9.1.2 [cloud-x86] p99" in [e["name"] for e in latency]
    assert len(latency) == 2 * len(rps)
