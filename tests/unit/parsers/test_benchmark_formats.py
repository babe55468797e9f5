"""The tricky bits of valkey-/redis-benchmark output: --csv, -q and the full format."""

from __future__ import annotations

import pytest

from vkbench.errors import ParseError
from vkbench.parsers import parse_output

HEADER = '"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"'


# --- --csv -------------------------------------------------------------------------------

def test_csv_new_format_maps_header_names():
    [record] = parse_output(HEADER + '\n"SET","505050.50","1.443","0.272","1.263","3.135","4.239","4.687"\n')
    assert (record.command, record.rps) == ("SET", 505050.5)
    assert record.latency_ms == {"avg": 1.443, "min": 0.272, "p50": 1.263, "p95": 3.135, "p99": 4.239, "max": 4.687}


def test_csv_old_two_column_rows_without_header():
    records = parse_output('"SET","145985.41"\n"LRANGE_100 (first 100 elements)","70821.53"\n')
    assert [(r.command, r.rps, r.latency_ms) for r in records] == [
        ("SET", 145985.41, {}), ("LRANGE_100 (first 100 elements)", 70821.53, {})]


def test_csv_with_bom_and_no_trailing_newline(fixture_text):
    text = fixture_text("redis-benchmark/VirtualClient__RedisBenchmarkResults_2.csv")
    assert text.startswith("\ufeff") and not text.endswith("\n")
    records = parse_output(text)
    assert [r.command for r in records] == ["SET", "GET"]
    assert records[1].latency_ms["max"] == 82.431


def test_csv_names_with_spaces_parentheses_and_commas_inside_quotes():
    text = HEADER + '\n"MSET (10 keys)","3040.53","16.313","0.488","15.927","27.967","35.903","59.903"\n' \
                    '"EVAL k, v (custom)","12.50","1","1","1","1","1","1"\n'
    assert [r.command for r in parse_output(text)] == ["MSET (10 keys)", "EVAL k, v (custom)"]


@pytest.mark.parametrize("cluster_header", [
    "Cluster has 3 master nodes:\n\nMaster 0: 972cf3f6 127.0.0.1:6602\nMaster 1: 899f428c 127.0.0.1:6603\n\n",
    "Cluster has 3 primary nodes:\n\nNode 0(Primary): 3c0feb11 127.0.0.1:6601\nNode 1(Primary): 662a53c4 127.0.0.1:6602\n\n",
])
def test_csv_after_cluster_header(cluster_header):
    [record] = parse_output(cluster_header + HEADER + '\n"SET","398406.41","1.094","0.112","0.983","2.063","3.639","4.639"\n')
    assert (record.command, record.rps, record.latency_ms["p99"]) == ("SET", 398406.41, 3.639)


def test_csv_noise_lines_and_crlf_are_ignored(fixture_text):
    records = parse_output(fixture_text("redis-benchmark/advancedGo__redis_benchmark.txt"))
    assert len(records) == 16 and records[-1].command == "GET" and records[-1].rps == 196078.44


def test_csv_row_cut_short_is_an_error():
    with pytest.raises(ParseError, match="truncated CSV row"):
        parse_output(HEADER + '\n"SET","505050.50","1.443"\n', source="x.csv")


# --- -q ------------------------------------------------------------------------------------

def test_quiet_takes_the_text_after_the_last_carriage_return():
    text = (" \rSET: rps=0.0 (overall: -nan) avg_msec=-nan (overall: -nan)\r          "
            "\rSET: 529100.56 requests per second, p50=1.399 msec\n")
    [record] = parse_output(text)
    assert (record.command, record.rps, record.latency_ms) == ("SET", 529100.56, {"p50": 1.399})


def test_quiet_old_format_trailing_spaces_and_warning_lines():
    text = "WARNING: Could not fetch server CONFIG\nGET: 86206.90 requests per second   \n"
    [record] = parse_output(text)
    assert (record.command, record.rps, record.latency_ms) == ("GET", 86206.9, {})
    assert record.warnings == ["tool warning: Could not fetch server CONFIG"]


def test_quiet_command_with_parentheses_and_colon():
    [record] = parse_output("LPUSH (needed to benchmark LRANGE): 70866.70 requests per second, p50=1.431 msec\n")
    assert record.command == "LPUSH (needed to benchmark LRANGE)"


def test_quiet_progress_line_without_result_is_truncated():
    text = "SET: 100.00 requests per second, p50=1.0 msec\n\rGET: rps=3314784.0 (overall: 3291016.0) avg_msec=0.118 (overall: 0.127)"
    with pytest.raises(ParseError, match="truncated: only a progress line.*'GET'"):
        parse_output(text)


def test_quiet_progress_line_superseded_by_a_later_result_line_is_fine():
    # A capture where \r became \n: the progress frame is on its own line, the result follows.
    text = "GET: rps=82832.0 (overall: 82832.0) avg_msec=0.458 (overall: 0.458)\nGET: 735294.06 requests per second, p50=0.855 msec\n"
    assert parse_output(text)[0].rps == 735294.06


# --- full output --------------------------------------------------------------------------

def test_full_reads_summary_and_p999_from_the_percentile_block(fixture_text):
    set_record, get_record = parse_output(fixture_text("valkey-benchmark/valkey-9.1.2__standalone_P1_full.txt"))
    assert (set_record.command, set_record.rps) == ("SET", 51177.07)
    assert set_record.latency_ms == {"avg": 0.549, "min": 0.192, "p50": 0.495, "p95": 1.063,
                                     "p99": 1.663, "p999": 4.303, "max": 5.447}
    assert get_record.latency_ms["p999"] == 13.399
    assert any("99.902% level" in w for w in set_record.warnings)


def test_full_exact_99_9_level_needs_no_warning():
    text = ("====== SET ======\nLatency by percentile distribution:\n"
            "50.000% <= 0.3 milliseconds (cumulative count 5)\n99.900% <= 2.5 milliseconds (cumulative count 9)\n\n"
            "Summary:\n  throughput summary: 1000.00 requests per second\n")
    [record] = parse_output(text)
    assert record.latency_ms == {"p999": 2.5} and record.warnings == []


def test_full_summary_only_input_has_unknown_command(fixture_text):
    [record] = parse_output(fixture_text("valkey-benchmark/valkey-pr2100__summary_only.txt"))
    assert (record.command, record.rps, record.latency_ms["max"]) == ("UNKNOWN", 383435.59, 79.039)
    assert any("does not name the command" in w for w in record.warnings)


def test_full_summary_only_named_by_its_progress_line():
    text = ("\rGET: rps=90000.0 (overall: 90000.0) avg_msec=0.4 (overall: 0.4)\n"
            "Summary:\n  throughput summary: 88000.00 requests per second\n  latency summary (msec):\n"
            "          avg       min       p50       p95       p99       max\n"
            "        0.400     0.100     0.300     0.800     1.000     2.000\n")
    [record] = parse_output(text)
    assert (record.command, record.rps, record.latency_ms["p95"]) == ("GET", 88000.0, 0.8)


def test_full_2010_format_derives_percentiles_from_cumulative_lines(fixture_text):
    records = parse_output(fixture_text("redis-benchmark/redis-doc__benchmarks_2010_v1.x-2.0_full.txt"))
    by_command = {r.command: r for r in records}
    # GET: 43.12% <= 0, 96.82% <= 1, 98.62% <= 2, 100.00% <= 3 milliseconds
    assert by_command["GET"].rps == 81234.77
    # Whole-millisecond buckets: '<= M milliseconds' counts requests under M+1 ms.
    assert by_command["GET"].latency_ms == {"p50": 2.0, "p95": 2.0, "p99": 4.0}
    assert any("derived from the cumulative distribution" in w for w in by_command["GET"].warnings)
    assert by_command["SET"].latency_ms == {"p50": 1.0, "p95": 2.0, "p99": 2.0}  # 58.50% <= 0 ms: p50 under 1 ms, never 0


def test_full_block_without_throughput_is_truncated():
    text = "====== SET ======\n  50000 requests completed in 0.75 seconds\n\nLatency by percentile distribution:\n"
    with pytest.raises(ParseError, match="truncated: the SET block"):
        parse_output(text)


def test_full_run_cut_off_during_the_next_test_is_truncated(fixture_text):
    text = fixture_text("valkey-benchmark/valkey-8.0.1__standalone_P1_full.txt")
    cut = text[: text.index("====== GET ======")].rstrip("\r ")  # ends on a GET progress frame
    with pytest.raises(ParseError, match="truncated: only a progress line.*'GET'"):
        parse_output(cut)


def test_two_runs_in_one_file_keep_both_and_say_so(fixture_text):
    records = parse_output(fixture_text("redis-benchmark/redka__benchmark_fac8315_v7-format.md.txt"))
    assert [(r.command, r.rps) for r in records] == [
        ("SET", 155521.0), ("GET", 170940.17), ("SET", 48285.85), ("GET", 40833.0)]
    assert "SET appears 2 times in this output (several runs in one file); this is occurrence 2" in records[2].warnings


def test_full_two_header_less_summaries_stay_two_records(fixture_text):
    summary = fixture_text("valkey-benchmark/valkey-pr2100__summary_only.txt")
    first, second = parse_output(summary + summary.replace("383435.59", "1000.00"))
    assert (first.command, first.rps, second.command, second.rps) == ("UNKNOWN", 383435.59, "UNKNOWN", 1000.0)
    assert second.latency_ms["max"] == 79.039
