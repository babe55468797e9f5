"""The evaluation interface: ``vkbench detect --series FILE.csv --format json``."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

from vkbench.cli.detect import detect_cmd


def write_csv(path, values, samples=None):
    lines = ["id,value" + (",samples" if samples else "")]
    for i, v in enumerate(values):
        row = f"run-{i},{v}"
        if samples:
            row += "," + ";".join(str(x) for x in samples[i])
        lines.append(row)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_exact_json_for_a_clean_step(tmp_path):
    path = write_csv(tmp_path / "s.csv", [100.0] * 20 + [90.0] * 10)
    result = CliRunner().invoke(detect_cmd, ["--series", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert list(doc) == ["change_points"]
    (cp,) = doc["change_points"]
    assert list(cp) == ["index", "id", "direction", "magnitude", "p_value"]
    assert cp["index"] == 20 and cp["id"] == "run-20"
    assert cp["direction"] == "regression" and cp["magnitude"] == -0.1
    assert 0 <= cp["p_value"] < 1e-6


def test_smaller_is_better_and_samples_column(tmp_path):
    rng = np.random.default_rng(3)
    values = [1.0 * (1 + rng.normal(0, 0.01)) for _ in range(25)] + [1.15 * (1 + rng.normal(0, 0.01)) for _ in range(8)]
    samples = [[v * 0.99, v, v * 1.01] for v in values]
    path = write_csv(tmp_path / "lat.csv", values, samples)
    out = CliRunner().invoke(detect_cmd, ["--series", str(path), "--smaller-is-better", "--format", "json"])
    (cp,) = json.loads(out.output)["change_points"]
    assert (cp["index"], cp["direction"]) == (25, "regression") and cp["magnitude"] > 0.1
    out = CliRunner().invoke(detect_cmd, ["--series", str(path), "--bigger-is-better", "--format", "json"])
    assert json.loads(out.output)["change_points"][0]["direction"] == "improvement"


def test_quiet_series_gives_an_empty_list(tmp_path):
    rng = np.random.default_rng(4)
    path = write_csv(tmp_path / "q.csv", list(100 * (1 + rng.normal(0, 0.03, 80))))
    out = CliRunner().invoke(detect_cmd, ["--series", str(path), "--format", "json"])
    assert out.output.strip() == '{"change_points": []}'


def test_bad_csv_names_the_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("id,value\na,1\nb,oops\n")
    out = CliRunner().invoke(detect_cmd, ["--series", str(path), "--format", "json"])
    assert out.exit_code != 0
    assert "bad.csv:3" in str(out.exception)
