"""vkbench.markdown: one escaper and one table layout for every Markdown the project writes."""

from __future__ import annotations

import pytest

from vkbench import markdown as md
from vkbench.profile.diff import DiffRow, to_markdown


def test_table_lays_out_header_alignment_and_rows():
    lines = md.table(["name", "rps"], "lr", [[md.text("a|b"), "1"], [md.code("x`y"), "2"]])
    assert lines == ["| name | rps |", "|---|---:|", "| a\\|b | 1 |", "| `x'y` | 2 |"]


def test_table_refuses_a_wrong_alignment_count():
    with pytest.raises(ValueError, match="2 columns but 1 alignments"):
        md.table(["a", "b"], "l", [])


def test_profile_function_names_cannot_break_the_table_or_the_span():
    hostile = "evil`](https://x.example)|<img src=x>\nsecond line"
    row = DiffRow(function=hostile, before_self=0.1, after_self=0.2, self_delta=0.1, before_total=0.2, after_total=0.3, total_delta=0.1)
    table_line = to_markdown([row]).splitlines()[2]
    assert table_line.startswith("| `evil'](https://x.example)¦<img src=x> second line` | 10.0% |")
    assert table_line.count("|") == 7       # six cells: the name added none
