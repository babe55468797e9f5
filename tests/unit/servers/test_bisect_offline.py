"""The bisect's search on a small local repository, each A/B step replaced by a stand-in that
reports a chosen change (no build, no server): the step limit, a step without the measure, and
the Markdown of commit subjects."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from vkbench import bisect
from vkbench.ab import ABOptions, ABReport, Row, Side
from vkbench.errors import UsageError

from .helpers import linear_repo

CELL = "standalone io1 P16 c50 d3"
HOSTILE = "fix ](https://evil.example) <img src=x onerror=alert(1)> | `x`"


@pytest.fixture
def line(tmp_path: Path) -> dict:
    """Nine commits on one line; the sixth (index 5) is the culprit. Subjects are hostile Markdown."""
    repo = tmp_path / "upstream"
    commits = linear_repo(repo, 9, HOSTILE)
    return {"url": f"file://{repo}", "commits": commits}


def _stand_in(commits: list[str], culprit: int, rows=None):
    """run_ab for bisect: -10 % from ``culprit`` on, else 0 %, with a tight interval."""
    def run_ab(options: ABOptions, progress=None) -> ABReport:
        index = commits.index(options.candidate)
        change = -0.1 if index >= culprit else 0.0
        side = Side("base", options.base, options.base, "good"), Side("candidate", options.candidate, options.candidate, "x")
        measured = rows(options) if rows else [Row(CELL, "SET", 100.0, 100 * (1 + change), change, change - 0.01,
                                                  change + 0.01, 0.01, 4, "slower" if change else "no significant change")]
        return ABReport(options.url, *side, measured, 4, 0.02, 1.0, str(options.out_dir))
    return run_ab


def test_the_step_limit_leaves_the_range_unresolved(line, cache_root, monkeypatch, tmp_path):
    commits = line["commits"]
    monkeypatch.setattr(bisect, "run_ab", _stand_in(commits, culprit=5))
    report = bisect.run_bisect(line["url"], commits[0], commits[-1], ABOptions(base="", candidate=""), tmp_path / "b",
                               max_steps=1)
    # 8 commits after good; one midpoint (index 3 of the range = commits[4], good) leaves 4.
    assert report.reproduced and not report.resolved
    assert report.culprit is None and report.effect is None
    assert report.suspects == {"first": commits[5], "last": commits[8], "count": 4}
    text = (tmp_path / "b" / "bisect.md").read_text()
    assert "Culprit" not in text and "Unresolved" in text and "4 commits left" in text
    saved = json.loads((tmp_path / "b" / "bisect.json").read_text())
    assert saved["resolved"] is False and saved["culprit"] is None
    assert not list((tmp_path / "b").glob(".bisect.*")), "written beside, then renamed"
    # With enough steps the same search names the culprit.
    full = bisect.run_bisect(line["url"], commits[0], commits[-1], ABOptions(base="", candidate=""), tmp_path / "c")
    assert full.resolved and full.culprit == commits[5] and full.suspects is None


def test_bisect_markdown_escapes_commit_subjects(line, cache_root, monkeypatch, tmp_path):
    commits = line["commits"]
    monkeypatch.setattr(bisect, "run_ab", _stand_in(commits, culprit=5))
    bisect.run_bisect(line["url"], commits[0], commits[-1], ABOptions(base="", candidate=""), tmp_path / "b")
    text = (tmp_path / "b" / "bisect.md").read_text()
    assert "Culprit" in text and "evil.example" in text
    assert not re.search(r"(?<!\\)\]\(https://evil", text) and not re.search(r"(?<!\\)<img", text)
    for row in (r for r in text.splitlines() if r.startswith("| ") and "evil" in r):
        assert len(re.findall(r"(?<!\\)\|", row)) == 8, row            # 7 columns, however the subject reads


def test_a_step_without_the_measured_row_is_a_usage_error(line, cache_root, monkeypatch, tmp_path):
    commits = line["commits"]

    def rows(options):
        cell = CELL if options.candidate == commits[-1] else "another cell"
        return [Row(cell, "SET", 100.0, 90.0, -0.1, -0.11, -0.09, 0.01, 4, "slower")]

    monkeypatch.setattr(bisect, "run_ab", _stand_in(commits, culprit=5, rows=rows))
    with pytest.raises(UsageError, match=f"no row for {CELL} / SET") as err:
        bisect.run_bisect(line["url"], commits[0], commits[-1], ABOptions(base="", candidate=""), tmp_path / "b")
    assert "another cell / SET" in err.value.hint


def test_an_inconclusive_ab_of_the_two_ends_names_no_culprit_and_says_why(line, cache_root, monkeypatch, tmp_path):
    commits = line["commits"]
    undecided = "inconclusive: MDE 80.0% > target 2.0%; about 120 more rounds, a quieter runner, or instruction counts"

    def rows(options):
        return [Row(CELL, "SET", 100.0, 43.0, -0.57, -0.9, -0.004, 0.8, 4, undecided, 124)]

    monkeypatch.setattr(bisect, "run_ab", _stand_in(commits, culprit=5, rows=rows))
    report = bisect.run_bisect(line["url"], commits[0], commits[-1], ABOptions(base="", candidate=""), tmp_path / "b")
    assert not report.reproduced and report.culprit is None and report.inconclusive == undecided
    assert [s.judged for s in report.steps] == ["inconclusive"]
    text = (tmp_path / "b" / "bisect.md").read_text()
    assert "was inconclusive: MDE 80.0% \\> target 2.0%" in text and "Culprit" not in text


def test_an_instruction_bisect_follows_the_count_rows_and_names_the_functions(line, cache_root, monkeypatch, tmp_path):
    """With counts, more instructions is the regression (a positive change), and the culprit's
    function diff reaches the report."""
    from vkbench.ab_counts import count_row

    commits = line["commits"]

    def run_ab(options: ABOptions, progress=None) -> ABReport:
        bad = commits.index(options.candidate) >= 5
        extra = 24.0 if bad else 0.0
        row = count_row(CELL, "GET", [7850.0, 7860.0, 7855.0], [7850.0 + extra, 7860.2 + extra, 7854.9 + extra],
                        target=0.002, seeds=[1, 2, 3],
                        functions=[{"function": "vkbenchTestCost", "before": 0.0, "after": 24.0, "delta": 24.0}] if bad else [])
        side = Side("base", options.base, options.base, "good"), Side("candidate", options.candidate, options.candidate, "x")
        return ABReport(options.url, *side, [], 0, None, 1.0, str(options.out_dir), instrument="instructions",
                        counts=[row], pairs=3, counts_target_mde=0.002)

    monkeypatch.setattr(bisect, "run_ab", run_ab)
    report = bisect.run_bisect(line["url"], commits[0], commits[-1],
                               ABOptions(base="", candidate="", instrument="instructions"), tmp_path / "b")
    assert report.reproduced and report.culprit == commits[5] and report.metric == "instructions_per_op"
    assert report.effect == pytest.approx(24 / 7855, rel=1e-2)
    assert report.functions[0]["function"] == "vkbenchTestCost"
    text = (tmp_path / "b" / "bisect.md").read_text()
    assert "instructions per operation" in text and "vkbenchTestCost" in text and "+0.306%" in text
