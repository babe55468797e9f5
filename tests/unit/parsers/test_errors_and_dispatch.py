"""Tool-failure detection and format sniffing."""

from __future__ import annotations

import pytest

from vkbench.errors import ParseError, UsageError
from vkbench.parsers import parse_file, parse_output
from vkbench.parsers.dispatch import guess_benchmark_tool

from .conftest import FIXTURES_DIR


@pytest.mark.parametrize(("text", "phrase"), [
    ("Could not connect to Redis at 127.0.0.1:6599: Connection refused\n", "could not connect to the server at 127.0.0.1:6599"),
    ("Could not connect to server at 10.0.0.1:6379: Connection timed out\n", "10.0.0.1:6379: Connection timed out"),
    ("Node 127.0.0.1:6500 replied with error:\nERR unknown command 'FOO'\n", "the server returned an error: ERR unknown command"),
    ("Error from server: ERR wrong number of arguments\n", "the server returned an error: ERR wrong number"),
    ("ERROR: NOAUTH Authentication required.\n", "the server refused the benchmark: NOAUTH"),
])
def test_tool_errors_have_their_own_reason(text, phrase):
    with pytest.raises(ParseError, match="x.txt: ") as caught:
        parse_output(text, source="x.txt")
    assert phrase in caught.value.message and caught.value.hint


def test_moved_inside_progress_frames_is_found():
    text = " \rSET: rps=0.0 (overall: 0.0) avg_msec=-nan (overall: -nan) 0 requests\rError from server: MOVED 12049 127.0.0.1:6603\n"
    with pytest.raises(ParseError) as caught:
        parse_output(text)
    assert "MOVED 12049 127.0.0.1:6603" in caught.value.message
    assert caught.value.hint == "use --cluster / topology cluster"


def test_could_not_fetch_config_alone_is_only_a_warning(fixture_text):
    [record] = parse_output(fixture_text("valkey-benchmark/barch__RELEASES_q_warning_config.txt"))
    assert (record.command, record.rps, record.latency_ms) == ("SET", 1926411.12, {"p50": 0.399})
    assert record.warnings == ["tool warning: Could not fetch server CONFIG"]


@pytest.mark.parametrize("text", ["", "   \n\n", "\ufeff"])
def test_empty_output(text):
    with pytest.raises(ParseError, match="no benchmark results found"):
        parse_output(text)


def test_unrelated_text_has_no_results():
    with pytest.raises(ParseError, match="no benchmark results found"):
        parse_output("$ ls\nfoo bar\n")


@pytest.mark.parametrize(("relative", "parser_hint"), [
    ("memtier_benchmark/redisbench-admin__memtier_output.json", "memtier_benchmark"),
    ("memtier_benchmark/VirtualClient__RedisResults_1.txt", "memtier_benchmark"),
])
def test_memtier_is_sniffed(relative, parser_hint):
    assert {r.tool for r in parse_file(FIXTURES_DIR / relative)} == {parser_hint}


def test_tool_restricts_the_family():
    csv_text = '"SET","145985.41"\n'
    with pytest.raises(ParseError, match="not memtier_benchmark output"):
        parse_output(csv_text, tool="memtier_benchmark")
    with pytest.raises(ParseError, match="this is memtier_benchmark output, not valkey-benchmark output"):
        parse_output('{"ALL STATS": {}}', tool="valkey-benchmark")
    with pytest.raises(UsageError):
        parse_output(csv_text, tool="wrk")


def test_given_tool_is_kept_on_records():
    assert parse_output('"SET","1.00"\n', tool="valkey-benchmark")[0].tool == "valkey-benchmark"
    assert parse_output('"SET","1.00"\n', tool="redis-benchmark")[0].tool == "redis-benchmark"


@pytest.mark.parametrize(("relative", "tool"), [
    ("valkey-benchmark/valkey-9.1.2__cluster3_P16_csv.txt", "valkey-benchmark"),   # Node 0(Primary)
    ("valkey-benchmark/valkey-8.0.1__cluster3_P16_csv.txt", "valkey-benchmark"),   # Primary 0:
    ("valkey-benchmark/barch__RELEASES_q_warning_config.txt", "valkey-benchmark"),  # ./valkey-benchmark ...
    ("redis-benchmark/redis-7.0.15__cluster3_P16_csv.txt", "redis-benchmark"),     # Master 0:
    ("redis-benchmark/HomeWork__redis_benchmark.txt", "redis-benchmark"),          # redis-benchmark -h ...
    ("valkey-benchmark/valkey-9.1.2__standalone_P16_csv.txt", "redis-benchmark"),  # no hint: family name
])
def test_tool_guess_without_tool_argument(relative, tool, fixture_text):
    assert guess_benchmark_tool(fixture_text(relative)) == tool
    assert parse_file(FIXTURES_DIR / relative)[0].tool == tool


def test_parse_file_strips_bom_and_names_the_file_in_errors(tmp_path):
    path = tmp_path / "run.csv"
    path.write_bytes("\ufeff".encode() + b'"SET","12345.67"\r\n')
    assert parse_file(path)[0].rps == 12345.67
    broken = tmp_path / "broken.txt"
    broken.write_bytes(b"\xff\xfe garbage\n")
    with pytest.raises(ParseError, match="^broken.txt: no benchmark results found"):
        parse_file(broken)
