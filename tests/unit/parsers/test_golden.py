"""Every fixture file is covered: valid ones match their golden JSON, the rest raise ParseError.

Goldens are written by tests/fixtures/golden/regen.py and were checked by hand against
the raw files (command names, rps, latencies). After changing a parser: run regen.py,
then review the diff line by line before committing it.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from vkbench.errors import ParseError
from vkbench.parsers import parse_file

from .conftest import FIXTURES_DIR

_spec = importlib.util.spec_from_file_location("golden_regen", FIXTURES_DIR / "golden" / "regen.py")
regen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(regen)

#: fixture -> (phrase the ParseError message must contain, phrase its hint must contain)
ERROR_FIXTURES = {
    "errors/VirtualClient__memtier_Memtier_Invalid_Results_1.txt": ("truncated: memtier row", "cut short"),
    "errors/barch__RELEASES_valkey-benchmark_q_progress_only.txt":
        ("truncated: only a progress line, the run never printed a result", "re-run"),
    "errors/redis-7.0.15__error_moved_noncluster_q.txt":
        ("the server is a cluster node and redirected the request: MOVED 15599 127.0.0.1:6603",
         "use --cluster / topology cluster"),
    "errors/redis-7.0.15__error_noauth_csv.txt":
        ("the server refused the benchmark: NOAUTH Authentication required", "pass the server password"),
    "errors/redis-7.0.15__error_refused_q.txt":
        ("could not connect to the server at 127.0.0.1:6599: Connection refused", "server is running"),
    "errors/redis-7.0.15__error_wrongpass_q.txt":
        ("the server rejected the credentials: WRONGPASS invalid username-password pair", "check the password"),
    "errors/redis-issue13482__cluster_MOVED_error.txt":
        ("a request was redirected although the benchmark ran in cluster mode: MOVED 3665", "{tag}"),
    "errors/redis-issue5854__NOAUTH_fetch_config.txt":
        ("the server refused the benchmark's CONFIG fetch: NOAUTH", "redis PR #6051"),
    "errors/redis-pr6051__before_fix_NOAUTH.txt":
        ("the server refused the benchmark's CONFIG fetch: NOAUTH", "redis PR #6051"),
    "errors/valkey-8.0.1__error_moved_noncluster_q.txt":
        ("the server is a cluster node and redirected the request: MOVED 7665", "use --cluster / topology cluster"),
    "errors/valkey-8.0.1__error_noauth_csv.txt":
        ("the server refused the benchmark: NOAUTH Authentication required", "pass the server password"),
    "errors/valkey-8.0.1__error_refused_q.txt":
        ("could not connect to the server at 127.0.0.1:6599: Connection refused", "server is running"),
    "errors/valkey-8.0.1__error_wrongpass_q.txt": ("the server rejected the credentials: WRONGPASS", "check the password"),
    "errors/valkey-9.1.2__error_moved_noncluster_q.txt":
        ("the server is a cluster node and redirected the request: MOVED 12049", "use --cluster / topology cluster"),
    "errors/valkey-9.1.2__error_noauth_csv.txt":
        ("the server refused the benchmark: NOAUTH Authentication required", "pass the server password"),
    "errors/valkey-9.1.2__error_refused_q.txt":
        ("could not connect to the server at 127.0.0.1:6599: Connection refused", "server is running"),
    "errors/valkey-9.1.2__error_wrongpass_q.txt": ("the server rejected the credentials: WRONGPASS", "check the password"),
    "errors/valkey-pr266__invalid_cluster_1_node.txt":
        ("the benchmark rejected the cluster: Invalid cluster: 1 node(s)", "valkey-benchmark 8.0"),
    # Valid-looking folders, but the output cannot be trusted:
    "memtier_benchmark/memtier_benchmark-issue263__eval_cluster-mode_zero_ops.txt":
        ("memtier reported 0 ops/sec for EVAL while its latency is non-zero", "--cluster-mode"),
    "redis-benchmark/valkey-pr266__cluster_1_master_progress_line.txt":
        ("truncated: only a progress line, the run never printed a result (command 'k1 v1')", "re-run"),
    # Real memtier_benchmark 2.3.0 failures (valkey 9.1.2 here, password s3cret).
    "errors/memtier-2.3.0__readonly_replica.txt": ("writes went to a read-only replica: READONLY", "primary"),
    "errors/memtier-2.3.0__noauth.txt": ("NOAUTH Authentication required", "-a USER:PASSWORD"),
    "errors/memtier-2.3.0__refused.txt": ("Connection refused", "server is running"),
    "errors/memtier-2.3.0__refused.json": ("memtier completed no request", "memtier's output says why"),
    "errors/memtier-2.3.0__wrongpass_hangs.txt": ("the server rejected the credentials: WRONGPASS", "check the password"),
    "errors/memtier-2.3.0__negative_duration.json": ("memtier measured a duration of -433 ms", "tools/setup/memtier.sh"),
    "errors/memtier-2.3.0__hdr_SET_command_run_1.txt": ("HDR histogram file", "--json-out-file"),
    "errors/memtier-2.3.0__hdr_FULL_RUN_1.hgrm": ("HDR histogram file", "--json-out-file"),
    "errors/constructed__mixed_q_and_memtier_table.txt": ("mixes memtier_benchmark tables with", "split it"),
    "errors/constructed__mixed_q_and_csv.txt": ("mixes valkey-/redis-benchmark --csv rows and -q lines", "split it"),
    "errors/constructed__mixed_q_and_full.txt": ("mixes valkey-/redis-benchmark full (default) output and -q lines",
                                                 "split it"),
    # memtier's JSON alone: the evidence it carries of error replies and redirects.
    "errors/memtier-2.3.0__moved_noncluster.json": ("memtier received 22.1 bytes per SET where +OK is 5", "--stdout"),
    "errors/memtier-2.3.0__moved_noncluster.txt":
        ("the server is a cluster node and redirected the request: MOVED 6877", "--cluster-mode"),
    "errors/memtier-2.3.0__noauth.json": ("memtier received 34.0 bytes per SET where +OK is 5", "--stdout"),
    "errors/memtier-2.3.0__readonly_replica.json": ("memtier received 56.0 bytes per SET where +OK is 5", "--stdout"),
    "errors/constructed__memtier_cluster_mode_moved.json":
        ("memtier was redirected 120.4 times per second (MOVED/sec of Gets) in --cluster-mode", "slots stay put"),
    # Hostile inputs found by fuzzing: a reason, never a traceback or a wrong number.
    "errors/hostile__json_ops_sec_string.json": ("Ops/sec of Sets is not a plain number: 'fast'", ""),
    "errors/hostile__json_ops_sec_object.json": ("Ops/sec of Sets is not a number", ""),
    "errors/hostile__json_ops_sec_true.json": ("Ops/sec of Sets is not a number: 'True'", ""),
    "errors/hostile__json_ops_sec_50_digits.json": ("Ops/sec of Sets is not a plain number", ""),
    "errors/hostile__json_ops_sec_1e308.json": ("Ops/sec of Sets is out of range", ""),
    "errors/hostile__json_latency_negative.json": ("Average Latency of Sets is out of range: '-1.5'", ""),
    "errors/hostile__json_deeply_nested.json": ("JSON nested deeper than 64 levels", ""),
    "errors/hostile__csv_header_without_rps.txt": ("CSV header without an rps column", "not valkey-/redis-benchmark"),
    "errors/hostile__csv_rps_negative.txt": ("has no numeric rps: '-180180.17'", ""),
    "errors/hostile__csv_rps_zero.txt": ("rps of 'SET' is out of range: '0.00'", ""),
    "errors/hostile__csv_rps_1e308.txt": ("has no numeric rps: '1e308'", ""),
    "errors/hostile__csv_rps_underscore.txt": ("has no numeric rps: '1_000_000'", ""),
    "errors/hostile__csv_rps_infinity.txt": ("has no numeric rps: 'Infinity'", ""),
    "errors/hostile__csv_rps_true.txt": ("has no numeric rps: 'true'", ""),
    "errors/hostile__csv_rps_50_digits.txt": ("has no numeric rps: '1111", ""),
    # Issue 18's regression: one field more than the header was read as a command named SET","1000.
    "errors/hostile__csv_row_wider_than_header.txt": ("CSV row with 3 columns, more than its header's 2", "unedited"),
    "errors/hostile__full_latency_summary_six_words.txt": ("the latency summary table is incomplete", ""),
    "errors/hostile__q_rps_zero.txt": ("rps of 'SET' is out of range: '0.00'", ""),
    # valkey-cli transcripts are not benchmark output at all.
    "valkey-cli/redis-7.0.15__cluster_create.txt": ("no benchmark results found", "no benchmark result"),
    "valkey-cli/valkey-8.0.1__cluster_create.txt": ("no benchmark results found", "no benchmark result"),
    "valkey-cli/valkey-9.1.2__cluster_create.txt": ("no benchmark results found", "no benchmark result"),
}

ALL_FIXTURES = {regen.fixture_id(path): path for path in regen.fixture_files()}
VALID_FIXTURES = sorted(set(ALL_FIXTURES) - set(ERROR_FIXTURES))


def test_every_fixture_has_a_golden_or_an_expected_error():
    uncovered = [name for name, path in ALL_FIXTURES.items()
                 if name not in ERROR_FIXTURES and not regen.golden_path(path).exists()]
    assert uncovered == [], "fixtures without a golden file (run regen.py) or an ERROR_FIXTURES entry"
    assert set(ERROR_FIXTURES) <= set(ALL_FIXTURES), "ERROR_FIXTURES names a file that does not exist"
    # The listing must see every folder and loose file, or files could escape the check above.
    folders = {path.name for path in FIXTURES_DIR.iterdir() if path.is_dir()}
    # perf-stat/ holds perf's outputs, not a benchmark tool's: tests/unit/instruments/test_perf_stat.py
    # reads every one of them.
    assert folders == set(regen.TOOL_BY_DIR) | {"golden", "perf-stat"}
    assert [path.name for path in FIXTURES_DIR.iterdir() if path.is_file()] == ["SOURCES.md"]
    assert len(ALL_FIXTURES) == 109  # the set SOURCES.md describes; update with SOURCES.md


def test_no_golden_without_its_fixture_and_no_golden_for_error_fixtures():
    expected = {regen.golden_path(ALL_FIXTURES[name]) for name in VALID_FIXTURES}
    present = set((FIXTURES_DIR / "golden").glob("*/*.json"))
    assert present == expected


@pytest.mark.parametrize("name", VALID_FIXTURES)
def test_golden(name):
    path = ALL_FIXTURES[name]
    golden = json.loads(regen.golden_path(path).read_text(encoding="utf-8"))
    assert regen.parsed(path) == golden


@pytest.mark.parametrize("name", sorted(ERROR_FIXTURES))
def test_error_fixture(name):
    phrase, hint_phrase = ERROR_FIXTURES[name]
    path = ALL_FIXTURES[name]
    with pytest.raises(ParseError) as caught:
        parse_file(path, tool=regen.TOOL_BY_DIR[path.parent.name])
    assert caught.value.message.startswith(f"{path.name}: ")  # names the file
    assert phrase in caught.value.message
    assert hint_phrase in (caught.value.hint or "")
    assert caught.value.exit_code == 6
