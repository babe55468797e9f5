"""A hostile function name (from a profile or a callgrind dump: anyone with a branch controls the
server's symbols) cannot break a Markdown table of an issue body: alerts (render_incident with its
instruction and profile diffs), the profile diff and the instruction diff tables."""

from __future__ import annotations

import re

import pytest

from vkbench.alerts.summary import render_incident
from vkbench.instruments.diff import InstructionDiff
from vkbench.instruments.diff import to_markdown as instruction_table
from vkbench.profile.diff import DiffRow
from vkbench.profile.diff import to_markdown as profile_table

HOSTILE = [
    "a|b||c",                                          # table cell separators
    "x`](https://evil.example)` `y",                   # closes the code span, opens a link
    "<script>alert(1)</script>",                       # HTML
    "first\nsecond\r\n| injected | row |",             # a new line, then a new table row
    "evil\u202egnp.exe",                               # RIGHT-TO-LEFT OVERRIDE
    "\u2069\u2066closed the isolate",                  # an unpaired POP DIRECTIONAL ISOLATE
    "\u05e9\u05dc\u05d5\u05dd|`<b>`",                  # right-to-left letters with specials
]
BIDI_FORMATTING = re.compile(r"[\u061c\u200e\u200f\u202a-\u202e\u2066\u2067]")


def _cells(line: str) -> list[str]:
    """A table line's cells, split where GitHub splits: at every pipe not escaped by a backslash."""
    assert line.startswith("| ") and line.endswith(" |"), line
    return re.split(r"(?<!\\)\|", line[1:-1])


def _outside_code_spans(cell: str) -> str:
    return re.sub(r"`[^`]*`", "", cell)


def _check_table(markdown: str, columns: int, name: str) -> list[str]:
    """Every table line has ``columns`` cells, the name sits in one cell of its row, and neither
    HTML nor a bidi control is left in force. Returns the rows (not the header and rule)."""
    lines = [line for line in markdown.splitlines() if line.startswith("|")]
    assert len(lines) >= 3, markdown
    rows = lines[2:]
    for line in lines:
        cells = _cells(line) if not line.startswith("|-") else None
        if cells is not None:
            assert len(cells) == columns, (name, line)
        assert not BIDI_FORMATTING.search(line), (name, line)
        for cell in cells or []:
            # In a code span nothing is markup; elsewhere every < is escaped.
            assert not re.search(r"(?<!\\)<", _outside_code_spans(cell)), (name, cell)
            assert cell.count("`") % 2 == 0, (name, cell)    # every code span closes in its cell
    assert len(rows) == 1, (name, rows)                      # no row was injected
    return rows


@pytest.mark.parametrize("name", HOSTILE)
def test_profile_diff_table(name):
    row = DiffRow(function=name, before_self=0.1, after_self=0.2, self_delta=0.1, before_total=0.2,
                  after_total=0.3, total_delta=0.1)
    (line,) = _check_table(profile_table([row]), 6, name)
    assert "10.0%" in _cells(line)[1]


@pytest.mark.parametrize("name", HOSTILE)
def test_instruction_diff_table(name):
    diff = InstructionDiff("GET", "top functions", rows=[{"function": name, "before": 10.0, "after": 12.5, "delta": 2.5}])
    (line,) = _check_table(instruction_table(diff, before_label="go|od", after_label="<b>bad"), 4, name)
    assert _cells(line)[3].strip() == "+2.50"


@pytest.mark.parametrize("name", HOSTILE)
def test_an_alert_issue_body_with_both_diffs(name):
    ref = {"run_id": "r1", "version": "unstable", "commit": "a" * 40, "timestamp": "2026-01-01T00:00:00Z"}
    incident = {
        "id": "inc-1", "title": "GET rps", "direction": "regression", "status": "open", "machine_class": "m1",
        "metric": "rps", "magnitude": -0.08, "series_ids": ["s1"], "good": ref, "bad": {**ref, "commit": "b" * 40},
        "instruction_diff": {"command": "GET", "source": "top functions", "seeds": [],
                             "rows": [{"function": name, "before": 10.0, "after": 12.5, "delta": 2.5}]},
        "profile_diff": {"rows": [{"function": name, "before_self": 0.1, "after_self": 0.2, "self_delta": 0.1,
                                   "before_total": 0.2, "after_total": 0.3, "total_delta": 0.1}]},
    }
    body = render_incident(incident, [], repo="valkey-io/valkey")
    tables = [block for block in body.split("\n\n") if block.startswith("|")]
    widths = [len(_cells(t.splitlines()[0])) for t in tables]
    assert widths == [6, 4, 6], body          # change points, instruction diff, profile diff
    for table, width in zip(tables[1:], widths[1:]):
        _check_table(table, width, name)
