"""perf stat's CSV, the hardware-counter probe and the choice of counter (vkbench.instruments.perf_stat).

The perf-6.1__ fixtures are real outputs of this machine kind (no PMU); the handmade__ ones are what
a machine with counters prints after perf's documented CSV format (tests/fixtures/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from vkbench.errors import BenchmarkFailedError, NoHardwareCountersError, UsageError
from vkbench.instruments import perf_stat
from vkbench.instruments.method import InstructionsMethod, perf_method
from vkbench.instruments.perf_stat import (CounterProbe, count_of, event_value, judge_probe, parse_csv,
                                           probe_counters, requested_counter, select_counter)
from vkbench.instruments.valgrind import Measurement, Window, summarize

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "perf-stat"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_the_probe_of_a_machine_without_counters_reads_not_supported():
    readings = parse_csv(fixture("perf-6.1__probe_instructions-u_task-clock_vm.txt"))
    assert [(r.event, r.status) for r in readings] == [("instructions:u", "not supported"), ("task-clock", "counted")]
    clock = readings[1]
    assert (clock.value, clock.unit, clock.run_time_ns, clock.enabled_pct) == (0.52, "msec", 523645, 100.0)
    probe = judge_probe(0, fixture("perf-6.1__probe_instructions-u_vm.txt"))
    assert not probe.available and probe.reason.startswith("no hardware counters") and "<not supported>" in probe.reason


def test_the_probe_of_a_machine_with_counters_reads_a_count():
    probe = judge_probe(0, fixture("handmade__probe_instructions-u_counted.txt"))
    assert probe.available and "281043" in probe.reason


def test_not_counted_and_a_refusal_are_no_counters_with_their_reason():
    probe = judge_probe(0, fixture("handmade__probe_instructions-u_not_counted.txt"))
    assert not probe.available and "<not counted>" in probe.reason
    refused = judge_probe(255, fixture("perf-6.1__system-wide_task-clock_as_nobody_paranoid-2.txt"))
    assert not refused.available and "perf_event_paranoid" in refused.reason
    other = judge_probe(129, "event syntax error: 'instructions:u'\n")
    assert not other.available and "exit 129" in other.reason


def test_a_real_window_file_and_perfs_control_messages():
    readings = parse_csv(fixture("perf-6.1__window_valkey-server_instructions-u_task-clock_context-switches.csv"))
    assert [r.event for r in readings] == ["instructions:u", "task-clock", "context-switches"]   # comment skipped
    assert event_value(readings, "context-switches").value == 39
    with pytest.raises(BenchmarkFailedError, match="not supported"):
        count_of(readings, "instructions:u", where="the get window 1")
    assert count_of(readings, "task-clock", where="w").value == 19.85
    # Without -o, perf's "Events enabled/disabled" share stderr with the counts: not event lines.
    stderr = parse_csv(fixture("perf-6.1__stderr_with_control_messages_task-clock_context-switches.txt"))
    assert [(r.event, r.value) for r in stderr] == [("task-clock", 4.62), ("context-switches", 15.0)]


def test_a_window_never_switched_on_is_not_counted_and_refused():
    readings = parse_csv(fixture("perf-6.1__window_never_enabled_task-clock.csv"))
    assert readings[0].status == "not counted" and readings[0].value is None
    with pytest.raises(BenchmarkFailedError, match="not counted"):
        count_of(readings, "task-clock", where="w")


def test_a_counted_window_multiplexing_and_hybrid_cpus():
    counted = count_of(parse_csv(fixture("handmade__window_instructions-u_counted.csv")), "instructions:u", where="w")
    assert counted.value == 61234567 and counted.exact
    with pytest.raises(BenchmarkFailedError, match="multiplexed"):
        count_of(parse_csv(fixture("handmade__window_instructions-u_multiplexed.csv")), "instructions:u", where="w")
    hybrid = count_of(parse_csv(fixture("handmade__window_hybrid_cpu_core_cpu_atom.csv")), "instructions:u", where="w")
    assert hybrid.value == 40000000 + 21234567


NO = CounterProbe(False, "no hardware counters: perf stat reports instructions:u <not supported> (no PMU)")
YES = CounterProbe(True, "perf stat counts instructions:u (281043 for `true`)")


def test_auto_picks_perf_with_counters_and_valgrind_without_saying_why():
    assert select_counter("auto", probe=YES).tool == "perf"
    choice = select_counter("auto", probe=NO)
    assert (choice.tool, choice.requested, choice.reason) == ("valgrind", "auto", NO.reason)
    assert choice.to_dict() == {"tool": "valgrind", "requested": "auto", "reason": NO.reason}


def test_forcing_perf_without_counters_is_refused_with_the_flag_that_fixes_it():
    with pytest.raises(NoHardwareCountersError) as caught:
        select_counter("perf", probe=NO)
    assert caught.value.exit_code == 19 and "<not supported>" in caught.value.message
    assert "--counter auto" in caught.value.hint
    assert select_counter("perf", probe=YES).tool == "perf"
    assert select_counter("valgrind", probe=YES).tool == "valgrind"      # forcing valgrind always works


def test_the_counter_comes_from_the_option_or_the_environment_validated(monkeypatch):
    monkeypatch.delenv(perf_stat.COUNTER_ENV, raising=False)
    assert requested_counter(None) == "auto"
    monkeypatch.setenv(perf_stat.COUNTER_ENV, "Valgrind")
    assert requested_counter(None) == "valgrind" and requested_counter("perf") == "perf"
    monkeypatch.setenv(perf_stat.COUNTER_ENV, "papi")
    with pytest.raises(UsageError, match="VKBENCH_COUNTER"):
        requested_counter(None)


def test_the_probe_runs_once_per_process_and_reports_a_missing_perf(tmp_path):
    probe_counters.cache_clear()
    missing = probe_counters(str(tmp_path / "no-perf"))
    assert not missing.available and "could not run" in missing.reason
    assert probe_counters(str(tmp_path / "no-perf")) is missing         # cached: not run again
    probe_counters.cache_clear()


def test_the_run_command_has_the_counter_option():
    from vkbench.cli.run import run_cmd

    out = CliRunner().invoke(run_cmd, ["--help"]).output
    assert "--counter [auto|perf|valgrind]" in out
    bad = CliRunner().invoke(run_cmd, ["--counter", "papi", "--preset", "smoke", "--dry-run"])
    assert bad.exit_code == 2


def test_the_perf_method_has_its_own_id_counts_the_total_and_subtracts_nothing():
    method = perf_method()
    data = method.to_dict()
    assert data["id"].startswith("perf-") and data["tool"] == "perf" and data["counted"] == "total"
    assert data["subtract"] == [] and data["events"] == ["instructions:u"] and "serverCron" in data["not_subtracted"]
    assert data["server_args"] == ["--hz", "1", "--dynamic-hz", "no", "--slowlog-log-slower-than", "-1"]
    assert data["glibc_tunables"]
    assert perf_method(events=("task-clock",)).method_id() != method.method_id()
    assert "events" not in InstructionsMethod().to_dict()        # callgrind: as before


def test_a_perf_summary_has_the_total_and_no_code_count():
    windows = [Window("get", i, 1000, 9_100_000 + i, {}, (9_100_000 + i) / 1000,
                      readings=[{"event": "instructions:u", "value": 9_100_000 + i}], threads=6) for i in range(2)]
    block = summarize([Measurement(seed=1, windows=windows)], perf_method(windows=2, window_requests=1000, servers=1))
    get = block["commands"]["get"]
    assert get["per_op"] == pytest.approx(9100.0005) and "code_per_op" not in get and get["top_functions"] == []
    assert block["servers"][0]["windows"][0]["threads"] == 6 and "code_per_op" not in block["servers"][0]["windows"][0]


def test_every_perf_fixture_is_read_here_and_described_in_sources():
    text = Path(__file__).read_text()
    sources = (FIXTURES.parent / "SOURCES.md").read_text()
    for path in FIXTURES.iterdir():
        assert f'"{path.name}"' in text, f"{path.name} is not read by a test"
        assert f"`perf-stat/{path.name}`" in sources, f"{path.name} has no provenance in SOURCES.md"
