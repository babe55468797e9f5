"""``vkbench parse``: JSON and table output; ParseError propagates to the CLI edge."""

from __future__ import annotations

import json

from click.testing import CliRunner

from vkbench.cli.parse import parse_cmd
from vkbench.errors import ParseError

from .conftest import FIXTURES_DIR

EXPECTED_JSON = """[
  {
    "command": "SET",
    "rps": 598802.44,
    "latency_ms": {
      "p50": 1.063
    },
    "tool": "valkey-benchmark",
    "tool_version": null,
    "warnings": []
  },
  {
    "command": "GET",
    "rps": 735294.06,
    "latency_ms": {
      "p50": 0.855
    },
    "tool": "valkey-benchmark",
    "tool_version": null,
    "warnings": []
  }
]
"""


def test_json_output_is_exact():
    path = FIXTURES_DIR / "valkey-benchmark" / "valkey-9.1.2__standalone_P16_q.txt"
    result = CliRunner().invoke(parse_cmd, [str(path), "--tool", "valkey-benchmark", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert result.output == EXPECTED_JSON


def test_table_output_lists_every_record_and_the_warnings():
    path = FIXTURES_DIR / "redis-benchmark" / "redis-doc__benchmarks_2010_v1.x-2.0_full.txt"
    result = CliRunner().invoke(parse_cmd, [str(path)])
    assert result.exit_code == 0, result.output
    for command in ("SET", "GET", "INCR", "LPUSH", "LPOP"):
        assert command in result.output
    assert "114293.71" in result.output
    assert "warning: p50/p95/p99 derived" in result.output


def test_parse_error_propagates_to_the_cli_edge():
    path = FIXTURES_DIR / "errors" / "valkey-9.1.2__error_noauth_csv.txt"
    result = CliRunner().invoke(parse_cmd, [str(path), "--format", "json"])
    assert isinstance(result.exception, ParseError)
    assert result.exception.exit_code == 6
    assert "NOAUTH Authentication required" in result.exception.message
    assert result.output == ""  # nothing printed: the CLI edge prints the error


def test_unknown_tool_is_a_usage_error():
    path = FIXTURES_DIR / "valkey-benchmark" / "valkey-9.1.2__standalone_P16_q.txt"
    result = CliRunner().invoke(parse_cmd, [str(path), "--tool", "wrk"])
    assert result.exit_code == 2


def test_memtier_json_alone_says_what_it_cannot_show():
    path = FIXTURES_DIR / "memtier_benchmark" / "memtier-2.3.0__cluster_mode.json"
    result = CliRunner().invoke(parse_cmd, [str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert [r["command"] for r in json.loads(result.stdout)] == ["SET", "GET", "TOTALS"]   # stdout stays JSON
    assert "memtier's JSON does not count error replies" in result.stderr
    assert "--stdout" in result.stderr


def test_memtier_stdout_is_checked_with_its_json():
    folder = FIXTURES_DIR / "errors"
    # The JSON's own evidence (34 bytes per SET) would refuse it too; the stdout names the error first.
    result = CliRunner().invoke(parse_cmd, [str(folder / "memtier-2.3.0__noauth.json"),
                                            "--stdout", str(folder / "memtier-2.3.0__noauth.txt")])
    assert isinstance(result.exception, ParseError), result.output
    assert result.exception.message.startswith("memtier-2.3.0__noauth.txt: ")
    assert "NOAUTH Authentication required" in result.exception.message


def test_memtier_stdout_with_a_good_json_gives_the_printed_table():
    folder = FIXTURES_DIR / "memtier_benchmark"
    result = CliRunner().invoke(parse_cmd, [str(folder / "memtier-2.3.0__cluster_mode.json"), "--format", "json",
                                            "--stdout", str(folder / "memtier-2.3.0__cluster_mode.txt")])
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout)
    assert records[0]["latency_ms"]["avg"] == 0.16878      # the table's 5 decimals, not the JSON's 0.168
    assert result.stderr == ""


def test_stdout_needs_a_memtier_json():
    folder = FIXTURES_DIR / "errors"
    result = CliRunner().invoke(parse_cmd, [str(folder / "memtier-2.3.0__noauth.txt"),
                                            "--stdout", str(folder / "memtier-2.3.0__noauth.txt")])
    assert result.exception.exit_code == 2   # a UsageError, printed by the CLI edge
    assert "--stdout goes with memtier_benchmark's --json-out-file" in result.exception.message
