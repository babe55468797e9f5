"""Issue 23: shard lines are parsed with orjson while the cyclic collector is paused. Lines
orjson refuses go to the standard parser, so each reads and is refused as it always was; the
collector is on again afterwards, also after an error."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from vkbench.errors import ResultFileError
from vkbench.history.store import parse_jsonl

POINT = ('{"run_id":"r1","cell_id":"c1","timestamp":"2026-10-01T02:00:00Z","valid":true,"flags":[],'
         '"metrics":{"rps":{"median":%s,"samples":[1.5,2.0],"n":2,"cv":null}}}')


def test_points_read_as_the_standard_parser_reads_them():
    import json

    line = POINT % "1e5"
    assert parse_jsonl((line + "\n\n").encode(), Path("s.jsonl")) == [json.loads(line)]


@pytest.mark.parametrize("value, needle", [
    ("NaN", "s.jsonl:2: metrics/rps/median is nan"),                 # read by json, refused by the check
    ("1e400", "s.jsonl:2: metrics/rps/median is inf"),
    ("-1", "s.jsonl:2: metrics/rps/median is -1"),
    ("1,}", "s.jsonl:2: corrupt series line"),
])
def test_a_bad_line_is_refused_naming_it(value, needle):
    data = ((POINT % "1") + "\n" + (POINT % value) + "\n").encode()
    assert gc.isenabled()
    with pytest.raises(ResultFileError, match=needle.replace(".", r"\.")):
        parse_jsonl(data, Path("s.jsonl"))
    assert gc.isenabled()


def test_the_collector_stays_off_when_a_caller_turned_it_off():
    gc.disable()
    try:
        parse_jsonl(((POINT % "1") + "\n").encode(), Path("s.jsonl"))
        assert not gc.isenabled()
    finally:
        gc.enable()
