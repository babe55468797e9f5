"""results/reference/*.json: published figures stored as valid result files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vkbench.errors import ResultFileError
from vkbench.results.io import validate_result
from vkbench.site.reference import load_references, reference_data

REFERENCE_DIR = Path(__file__).resolve().parents[3] / "results" / "reference"
FILES = sorted(REFERENCE_DIR.glob("*.json"))


def test_there_are_reference_files_for_each_source():
    groups = {json.loads(p.read_text())["provenance"]["group"] for p in FILES}
    assert groups == {"Raspberry Pi CM4 blog", "devhands Xeon io-threads sweep", "m7g.xlarge EC2 vs ElastiCache", "Valkey 8 launch (c7g.16xlarge)"}


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_reference_file_is_a_valid_result(path):
    data = validate_result(json.loads(path.read_text()), source=str(path))
    assert data["kind"] == "vkbench.reference"
    assert data["run"]["backend"] == "reference" and data["run"]["trigger"] == "reference"
    prov = data["provenance"]
    assert prov["source"] and {"url", "published", "notes"} <= set(prov)
    assert data["summary"], "a reference holds at least one figure"


def test_published_figures_are_copied_exactly():
    by_name = {p.stem: json.loads(p.read_text()) for p in FILES}
    pi = by_name["pi-cm4-blog-6-cluster3"]
    assert pi["summary"]["GET"]["rps"]["median"] == 1188071.75 and pi["dimensions"]["topology"] == "cluster:3"
    ec2 = by_name["m7g-4-ec2-valkey-8.0.1-io4"]["summary"]["SET"]
    assert [ec2[m]["median"] for m in ("rps", "avg", "min", "p50", "p95", "p99", "max")] == [964320.19, 2.549, 0.088, 2.575, 2.807, 3.087, 4.731]
    assert by_name["valkey8-launch-2-8.0"]["summary"]["SET"]["rps"]["median"] == 1190000


def test_a_measured_result_in_the_reference_dir_is_refused(tmp_path):
    data = json.loads(FILES[0].read_text())
    data["kind"] = "vkbench.result"
    data["run"]["backend"] = "native"
    (tmp_path / "x.json").write_text(json.dumps(data))
    with pytest.raises(ResultFileError, match="not a reference file"):
        load_references(tmp_path)


def test_no_reference_dir_means_no_overlay():
    assert reference_data(None) == {"references": []}
