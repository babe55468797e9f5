"""The fast paths that make large outputs linear must give exactly what the checked paths give."""

from __future__ import annotations

import json
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from vkbench.errors import ParseError
from vkbench.parsers import parse_output
from vkbench.parsers.benchmark_csv import _FastRow, _record, _split
from vkbench.parsers.memtier_json import TOO_DEEP, load_memtier_json
from vkbench.parsers.text import iter_visible_lines, visible_lines

HEADER = ["test", "rps", "avg_latency_ms", "min_latency_ms", "p50_latency_ms", "p95_latency_ms", "p99_latency_ms",
          "max_latency_ms"]
FIGURES = st.sampled_from(["0", "0.000", "1.5", "180180.17", "999999999999", "86400000.1", "1e3", "-1", "", "x", "1.2.3"])


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet="ab \r\n\ufeff", max_size=40), block=st.integers(1, 8))
def test_streamed_lines_are_the_visible_lines(text, block):
    assert list(iter_visible_lines(text, block)) == visible_lines(text)


@settings(max_examples=300, deadline=None)
@given(name=st.text(alphabet='SET_ ,()"x', min_size=0, max_size=12), figures=st.lists(FIGURES, min_size=7, max_size=7),
       header=st.sampled_from([HEADER, ["test", "rps"], ["test", "avg_latency_ms", "rps", "p999_latency_ms",
                                                         "p99.9_latency_ms"]]))
def test_fast_csv_row_equals_the_checked_row(name, figures, header):
    """A row the fast path takes gives the record the csv module + checks give; any other row is left
    to the checked path (None), which then accepts or refuses it."""
    line = ",".join(f'"{cell}"' for cell in [name, *figures[: len(header) - 1]])
    fast = _FastRow(header).record(line, "valkey-benchmark")
    if fast is None:
        return
    checked = _record(_split(line, header), header, source="f", tool="valkey-benchmark", warnings=[])
    assert fast == checked
    assert list(fast.latency_ms) == list(checked.latency_ms)   # same key order in the result files


def test_memtier_json_with_nan_is_repaired_linearly_and_depth_is_checked():
    """2 MB of memtier JSON that json.loads refuses (bare -nan, as memtier prints it): the repair
    path, bounded time on a loaded machine (tools/measure_parsers.py measures 10 MB for the note)."""
    second = {"Count": 100, "Average Latency": 0.25, "p50.00": 0.087, "Bytes RX": 1000}
    series = {str(i): second for i in range(2 * 2**20 // 90)}
    row = {"Count": 2000, "Ops/sec": 7482.59, "Average Latency": 0.259, "Time-Serie": series}
    text = json.dumps({"ALL STATS": {"Sets": row, "Gets": {**row, "Min Latency": "NAN_HERE"},
                                     "Totals": {**row, "Time-Serie": {}}}}).replace('"NAN_HERE"', "-nan")
    assert len(text) > 2 * 2**20
    started = time.process_time()
    records = parse_output(text, tool="memtier_benchmark")
    assert time.process_time() - started < 30
    assert {r.command for r in records} == {"SET", "GET", "TOTALS"}
    assert "min" not in next(r for r in records if r.command == "GET").latency_ms   # -nan is "no value"
    for depth in (65, 500, 5000):   # within json's recursion limit, and beyond it
        deep = '{"ALL STATS": ' + "[" * depth + "]" * depth + "}"
        try:
            load_memtier_json(deep, source="f")
        except ParseError as exc:
            assert TOO_DEEP in exc.message
        else:
            raise AssertionError(f"depth {depth} accepted")
    assert load_memtier_json('{"a": ' + "[" * 63 + "]" * 63 + "}", source="f")   # 64 levels are fine
