"""`vkbench ci export-gab` tells the workflow whether counts.json exists (step output ``counts``):
benchmark.yml charts instruction counts and memory per key only then, because
github-action-benchmark fails a step whose output-file-path is missing."""

from __future__ import annotations

import json

import pytest
from cli_outcome import vk  # tests/cli_outcome.py
from factory import make_result, write_result  # tests/unit/history/factory.py
from test_count_compare_export import BASE, counted


@pytest.fixture
def outputs(tmp_path, monkeypatch):
    for name in ("GITHUB_ACTIONS", "VKBENCH_RESULTS_DIR"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "github_output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(path))
    monkeypatch.setenv("VKBENCH_GAB_OUT", str(tmp_path / "gab"))
    monkeypatch.chdir(tmp_path)
    return path


def test_counted_results_set_counts_true_and_write_counts_json(tmp_path, outputs):
    write_result(tmp_path / "vkbench-results", counted(run_id="r1", per_server=BASE, bytes_per_key=60.25))
    code, text = vk("ci", "export-gab")
    assert code == 0, text
    assert "counts=true" in outputs.read_text().splitlines()
    units = {entry["unit"] for entry in json.loads((tmp_path / "gab" / "counts.json").read_text())}
    assert units == {"instructions/op", "bytes/key"}


def test_wall_clock_results_set_counts_false(tmp_path, outputs):
    write_result(tmp_path / "vkbench-results", make_result())
    code, text = vk("ci", "export-gab")
    assert code == 0, text
    assert "counts=false" in outputs.read_text().splitlines()
    assert not (tmp_path / "gab" / "counts.json").exists()


def test_benchmark_workflow_charts_counts_only_when_the_export_wrote_them():
    import yaml
    from pathlib import Path

    workflow = yaml.safe_load((Path(__file__).parents[3] / ".github/workflows/benchmark.yml").read_text())
    steps = workflow["jobs"]["publish"]["steps"]
    export = next(s for s in steps if s.get("name") == "Export for github-action-benchmark")
    chart = next(s for s in steps if s.get("with", {}).get("output-file-path") == "gab/counts.json")
    assert export.get("id") and f"steps.{export['id']}.outputs.counts == 'true'" in chart["if"]
    assert chart["with"]["tool"] == "customSmallerIsBetter"
    assert int(chart["with"]["max-items-in-chart"]) <= 120
    assert chart["with"]["fail-on-alert"] is False and chart["with"]["comment-on-alert"] is False
