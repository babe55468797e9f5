"""memtier_benchmark text tables and JSON: column mapping, repairs and refusals."""

from __future__ import annotations

import json

import pytest

from vkbench.errors import ParseError
from vkbench.parsers import parse_output
from vkbench.parsers.memtier_json import memtier_duration_s, repair_memtier_json

TABLE_HEADER = ("ALL STATS\n" + "=" * 60 + "\n"
                "Type         Ops/sec     Hits/sec   Misses/sec    Avg. Latency     p50 Latency     "
                "p99 Latency   p99.9 Latency       KB/sec\n" + "-" * 60 + "\n")


# --- text ----------------------------------------------------------------------------------

def test_text_seven_digit_value_eats_the_column_padding(fixture_text):
    records = parse_output(fixture_text("memtier_benchmark/valkey-pr4076__qos_out-file_2x.txt"))
    totals = records[-1]
    assert (totals.command, totals.rps) == ("TOTALS", 1298838.8)
    assert totals.latency_ms == {"avg": 2.07676, "p50": 2.079, "p99": 2.223, "p999": 2.607}
    assert [r.command for r in records] == ["SET", "GET", "TOTALS"]  # Waits (all ---) skipped


def test_text_cluster_mode_columns_are_mapped_by_name(fixture_text):
    set_record = parse_output(fixture_text("memtier_benchmark/camellia__perf_get_set_obkv_cluster-mode.txt"))[0]
    # MOVED/sec and ASK/sec sit between Misses/sec and Avg. Latency.
    assert set_record.latency_ms == {"avg": 1.69197, "p50": 1.079, "p99": 8.831, "p999": 13.823}


def test_text_old_single_latency_column_is_avg(fixture_text):
    records = parse_output(fixture_text("memtier_benchmark/memtier_benchmark-issue68__v1.2_all_stats.txt"))
    # Gets ran no request (0.00 ops, 0.00000 latency): not a record.
    assert [(r.command, r.rps, r.latency_ms) for r in records] == [
        ("SET", 21536.09, {"avg": 0.231}), ("TOTALS", 21536.09, {"avg": 0.231})]


def test_text_old_table_derives_percentiles_from_its_distribution(fixture_text):
    get_record = parse_output(fixture_text("memtier_benchmark/memtier-json__test.txt"))[0]
    # GET 0.360 49.00 / GET 0.370 55.00 ... GET 0.710 95.00 ... GET 0.790 100.00
    assert get_record.latency_ms == {"avg": 0.404, "p50": 0.37, "p95": 0.71, "p99": 0.79}
    assert any("derived from memtier's Request Latency Distribution" in w for w in get_record.warnings)


def test_text_concatenated_runs_return_every_run(fixture_text):
    records = parse_output(fixture_text("memtier_benchmark/VirtualClient__Results_MemcachedMemtier.txt"))
    assert [r.command for r in records] == ["SET", "GET", "TOTALS"] * 4
    assert records[-1].rps == 48923.52
    assert "TOTALS appears 4 times in this output (several runs in one file); this is occurrence 4" in records[-1].warnings


def test_text_row_cut_short_is_truncated(fixture_text):
    with pytest.raises(ParseError, match=r"truncated: memtier row 'Waits +0.00 +---' has 3 of 11 columns"):
        parse_output(fixture_text("errors/VirtualClient__memtier_Memtier_Invalid_Results_1.txt"))


def test_text_table_without_totals_row_is_truncated():
    text = TABLE_HEADER + "Sets 100.00 --- --- 1.0 1.0 2.0 3.0 10.0\n"
    with pytest.raises(ParseError, match="no Totals row"):
        parse_output(text)


def test_text_zero_ops_with_latency_is_memtiers_bug(fixture_text):
    with pytest.raises(ParseError, match="memtier reported 0 ops/sec for EVAL.*known memtier bug"):
        parse_output(fixture_text("memtier_benchmark/memtier_benchmark-issue263__eval_cluster-mode_zero_ops.txt"))


def test_text_aggregated_table_preferred_over_best_and_worst():
    def table(title: str, ops: str) -> str:
        return TABLE_HEADER.replace("ALL STATS", title) + f"Totals {ops} 0 0 1.0 1.0 2.0 3.0 10.0\n\n"

    text = table("BEST RUN RESULTS", "300.00") + table("WORST RUN RESULTS", "100.00") \
        + table("AGGREGATED AVERAGE RESULTS (3 runs)", "200.00")
    [record] = parse_output(text)
    assert record.rps == 200.0
    assert "AGGREGATED AVERAGE RESULTS (3 runs)" in record.warnings[0]


# --- JSON ----------------------------------------------------------------------------------

def test_json_repair_nan_inf_and_trailing_commas_but_not_inside_strings():
    raw = '{"a": -nan, "b": nan, "c": inf, "d": -inf, "e": [1, 2,], "f": "nan -nan inf", "g": 1.5,}'
    assert json.loads(repair_memtier_json(raw)) == {
        "a": None, "b": None, "c": None, "d": None, "e": [1, 2], "f": "nan -nan inf", "g": 1.5}


def test_json_null_values_are_omitted_never_invented():
    text = """{"ALL STATS": {
        "Sets": {"Ops/sec": 1000.50, "Latency": -nan, "Average Latency": -nan, "Min Latency": 0.1,
                 "Max Latency": nan, "Percentile Latencies": {"p50.00": 0.5, "p99.00": -nan}},
        "Waits": {"Ops/sec": 0.00, "Latency": -nan},
        "Totals": {"Ops/sec": 1000.50, "Latency": 0.9, "Average Latency": 0.9}}}"""
    set_record, totals = parse_output(text)
    assert (set_record.command, set_record.rps, set_record.latency_ms) == ("SET", 1000.5, {"min": 0.1, "p50": 0.5})
    assert totals.latency_ms == {"avg": 0.9}


def test_json_percentile_keys_and_min_max(fixture_text):
    set_record = parse_output(fixture_text("memtier_benchmark/PerfKitBenchmarker__redis_memtier.json"))[0]
    assert (set_record.command, set_record.rps) == ("SET", 9001.83)
    # p90.00 is kept as p90; p99.90 is p999.
    assert set_record.latency_ms == {"avg": 0.361, "min": 0.048, "p50": 0.231, "p90": 0.767, "p95": 0.959,
                                     "p99": 1.431, "p999": 2.591, "max": 19.071}


def test_json_aggregated_runs_with_old_cdf_arrays(fixture_text):
    records = parse_output(fixture_text("memtier_benchmark/redisbench-admin__memtier_benchmark_v1.3.0_result.json"))
    assert [(r.command, r.rps) for r in records] == [("MSET", 17229.57), ("MGET", 17229.03), ("TOTALS", 34458.6)]
    assert records[0].latency_ms == {"avg": 2.85, "p50": 2.0, "p95": 8.4, "p99": 13.0}
    assert any("AGGREGATED AVERAGE RESULTS (3 runs)" in w for w in records[0].warnings)
    assert any("derived from memtier's MSET latency distribution" in w for w in records[0].warnings)


def test_json_cut_short_is_an_error():
    with pytest.raises(ParseError, match="memtier JSON cannot be read"):
        parse_output('{"ALL STATS": {"Sets": {"Ops/sec": 1', source="run.json")


def test_json_zero_ops_with_latency_is_refused():
    text = '{"ALL STATS": {"Evals": {"Ops/sec": 0.00, "Latency": 0.54}, "Totals": {"Ops/sec": 0.00, "Latency": 0.54}}}'
    with pytest.raises(ParseError, match="0 ops/sec for EVAL"):
        parse_output(text)


# --- JSON: error replies and redirects, from what the JSON itself carries --------------------

def _row(ops: float, *, count: int = 1000, hits: float = 0.0, misses: float = 0.0, rx_kb: float = 0.0) -> dict:
    return {"Count": count, "Ops/sec": ops, "Hits/sec": hits, "Misses/sec": misses, "Connection Errors": 0,
            "Latency": 0.1, "Average Latency": 0.1, "Min Latency": 0.02, "Max Latency": 1.0, "KB/sec": rx_kb,
            "KB/sec RX": rx_kb, "Percentile Latencies": {"p50.00": 0.08, "p99.00": 0.5}}


def _memtier_json(gets: dict, sets: dict | None = None, *, protocol: str = "redis", waits: bool = True) -> str:
    section = {"Sets": sets or _row(0.0, count=0), "Gets": gets}
    if waits:   # memtier's built-in SET/GET workload writes a Waits row; --command runs do not
        section["Waits"] = _row(0.0, count=0)
    section["Totals"] = _row(gets["Ops/sec"] + section["Sets"]["Ops/sec"], count=2000)
    return json.dumps({"configuration": {"protocol": protocol}, "ALL STATS": section})


def test_json_get_errors_counted_as_misses_are_refused():
    # GET-only without a password: 10,000 "misses" per second of 34 bytes each (-NOAUTH ...).
    noauth = _memtier_json(_row(10000.0, misses=10000.0, rx_kb=332.03))
    with pytest.raises(ParseError, match=r"34\.0 bytes per GET where a miss \(\$-1\) is 5") as caught:
        parse_output(noauth, tool="memtier_benchmark")
    assert "--stdout" in caught.value.hint


def test_json_plain_misses_and_hits_are_not_errors():
    misses = _memtier_json(_row(10000.0, misses=10000.0, rx_kb=48.83))        # $-1: 5 bytes each
    assert parse_output(misses, tool="memtier_benchmark")[0].misses_per_s == 10000.0
    resp3 = _memtier_json(_row(10000.0, misses=10000.0, rx_kb=29.3), protocol="resp3")   # _: 3 bytes
    assert parse_output(resp3, tool="memtier_benchmark")[0].command == "GET"
    # With hits the size depends on who wrote the values: not judged.
    hits = _memtier_json(_row(10000.0, hits=5000.0, misses=5000.0, rx_kb=900.0))
    assert parse_output(hits, tool="memtier_benchmark")[0].hits_per_s == 5000.0


def test_json_reply_sizes_are_judged_only_for_memtiers_own_resp_workload():
    big_sets = _row(10000.0, rx_kb=200.0)   # 20 bytes per SET
    gets = _row(10000.0, misses=10000.0, rx_kb=48.83)
    with pytest.raises(ParseError, match="20.5 bytes per SET where \\+OK is 5"):
        parse_output(_memtier_json(gets, big_sets), tool="memtier_benchmark")
    # --command "SET __key__ __data__ GET" replies with the old value: no Waits row, not judged.
    assert parse_output(_memtier_json(gets, big_sets, waits=False), tool="memtier_benchmark")
    assert parse_output(_memtier_json(gets, big_sets, protocol="memcache_text"), tool="memtier_benchmark")


def test_json_cluster_mode_without_redirects_is_a_good_run(fixture_text):
    records = parse_output(fixture_text("memtier_benchmark/memtier-2.3.0__cluster_mode.json"))
    assert [(r.command, r.rps) for r in records] == [("SET", 15986.95), ("GET", 15986.95), ("TOTALS", 31973.91)]


# --- --run-count ---------------------------------------------------------------------------

def test_run_count_duration_is_the_sum_of_its_runs(fixture_text):
    text = fixture_text("memtier_benchmark/memtier-2.3.0__run_count_3_print_all_runs.json")
    # RUN #1..#3: 302 + 370 + 301 ms; the AGGREGATED section's Runtime is all zeros.
    assert memtier_duration_s(text, source="f") == pytest.approx(0.973)
    document = json.loads(text)
    del document["RUN #2 RESULTS"]   # a run missing: no duration rather than a wrong one
    assert memtier_duration_s(json.dumps(document), source="f") is None
    document = {key: value for key, value in json.loads(text).items() if not key.startswith("RUN #")}
    assert memtier_duration_s(json.dumps(document), source="f") is None   # never one run's time, never 0


def test_run_count_json_keeps_no_figure_of_an_empty_histogram(fixture_text):
    records = parse_output(fixture_text("memtier_benchmark/memtier-2.3.0__run_count_3_print_all_runs.json"))
    totals = records[-1]
    # memtier wrote min 0, max 0 and every percentile 0.007 for AGGREGATED Totals: not figures.
    assert totals.latency_ms == {"avg": 0.064}
    assert any("no latency distribution for TOTALS" in w for w in totals.warnings)
    assert records[0].latency_ms["p50"] == 0.047


def test_run_count_text_with_every_run_gives_the_aggregated_table_once(fixture_text):
    records = parse_output(fixture_text("memtier_benchmark/memtier-2.3.0__run_count_3_print_all_runs.txt"))
    assert [(r.command, r.rps) for r in records] == [("SET", 15547.14), ("GET", 15547.14), ("TOTALS", 31094.28)]
    assert not any("appears" in w for r in records for w in r.warnings)


def test_text_table_followed_at_once_by_other_lines(fixture_text):
    # stdout then stderr: "Json file ... created..." right under the Totals row.
    records = parse_output(fixture_text("memtier_benchmark/memtier-2.3.0__cluster_mode.txt"))
    assert [r.command for r in records] == ["SET", "GET", "TOTALS"]
    assert records[0].latency_ms["avg"] == 0.16878
