"""A/B and bisect on real builds: a local clone where the test itself adds a commit that slows
down every command (conftest.slowdown_repo); the A/B must see it and bisect must name it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from vkbench.ab import ABOptions, pr_ref, run_ab
from vkbench.bisect import run_bisect
from vkbench.matrix.model import Cell

from .conftest import git

pytestmark = pytest.mark.sourcebuild

#: Small and quick: the deliberate slowdown is several times the noise of this machine.
TEMPLATE = Cell.model_validate({"server": "valkey:unstable", "requests": 10000, "keyspace": 5000, "warmup": 1000,
                                "pipeline": 16, "clients": 50, "tests": ["set", "get"], "repetitions": 1})
#: No target MDE: 4 rounds on a loaded 2-core machine cannot reach 2 %, and whether they reach any
#: other bound depends on the load. The rule "a verdict only at or below the target" is tested on
#: fixtures (tests/unit/detect/test_verdict_evidence.py); here the deliberate slowdown is judged
#: by its interval alone, as before the rule.
NO_TARGET = None


def test_ab_sees_the_slowdown_and_reports_its_mde(slowdown_repo, tmp_path):
    options = ABOptions(base=slowdown_repo.good[:10], candidate=slowdown_repo.culprit, url=slowdown_repo.url,
                        cells=[TEMPLATE], out_dir=tmp_path / "ab", min_rounds=4, max_rounds=4,
                        target_mde=NO_TARGET)
    report = run_ab(options)
    assert report.base.commit == slowdown_repo.good and report.candidate.commit == slowdown_repo.culprit
    assert {r.command for r in report.rows} == {"SET", "GET"}
    for row in report.rows:
        assert row.rounds == 4
        assert row.verdict == "slower", row
        assert row.ci_high is not None and row.ci_high < 0
        assert row.mde is not None and row.mde > 0
    summary = (tmp_path / "ab" / "ab.md").read_text()
    assert "| SET |" in summary and "slower" in summary and "MDE" in summary
    saved = json.loads((tmp_path / "ab" / "ab.json").read_text())
    assert saved["candidate"]["commit"] == slowdown_repo.culprit and saved["mde"] > 0
    # Both sides' results name their code.
    results = [json.loads(p.read_text()) for p in (tmp_path / "ab" / "pilot").glob("*.json")]
    assert {r["subject"]["code"]["commit"] for r in results} == {slowdown_repo.good, slowdown_repo.culprit}


def test_bisect_names_the_culprit(slowdown_repo, tmp_path):
    template = ABOptions(base="", candidate="", cells=[TEMPLATE], min_rounds=4, max_rounds=4, trigger="bisect",
                         target_mde=NO_TARGET)
    report = run_bisect(slowdown_repo.url, slowdown_repo.good, slowdown_repo.bad, template, tmp_path / "bisect")
    assert report.reproduced
    assert report.culprit == slowdown_repo.culprit, report.markdown()
    assert report.effect is not None and report.effect < 0
    assert report.range_size == 3 and len(report.steps) <= 3
    text = (tmp_path / "bisect" / "bisect.md").read_text()
    assert slowdown_repo.culprit[:10] in text and "Culprit" in text


def test_ab_cli_needs_exactly_one_candidate(slowdown_repo):
    proc = subprocess.run([sys.executable, "-m", "vkbench", "ab", "--repo", slowdown_repo.url, "--base", "x"],
                          capture_output=True, text=True, timeout=120, env=os.environ)
    assert proc.returncode == 2 and "--candidate" in proc.stderr
    assert pr_ref("https://github.com/valkey-io/valkey", 12) == "refs/pull/12/head"
    assert pr_ref("https://gitlab.com/o/valkey", 12) == "refs/merge-requests/12/head"


def test_a_pull_request_that_moved_since_its_approval_is_refused_before_any_build(slowdown_repo, tmp_path):
    """ab.yml pins the head a maintainer approved (--pr-head); the author pushed since: refused, nothing built."""
    git(slowdown_repo.path, "update-ref", "refs/pull/5/head", slowdown_repo.culprit)
    env = {**os.environ, "VKBENCH_CACHE": str(tmp_path / "empty-cache")}   # a build would show up here
    proc = subprocess.run([sys.executable, "-m", "vkbench", "ab", "--repo", slowdown_repo.url, "--base", slowdown_repo.good,
                           "--pr", "5", "--pr-head", slowdown_repo.neutral, "--out", str(tmp_path / "ab")],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 2, proc.stderr
    assert f"is now {slowdown_repo.culprit[:12]}, not the approved {slowdown_repo.neutral[:12]}" in proc.stderr
    assert "re-add the label" in proc.stderr
    assert not list((tmp_path / "empty-cache").glob("valkey/*"))
