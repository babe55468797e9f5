"""memtier_benchmark's command line for every workload option, the warm-up's, and what a cell refuses
(memtier-only fields with valkey-benchmark, duration without memtier, TLS), without servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vkbench.cli import cli
from vkbench.errors import ConfigError
from vkbench.matrix.cells import cell_from_arg
from vkbench.matrix.model import Cell
from vkbench.runner.execute import tool_duration
from vkbench.runner.tools import build_command
from vkbench.topology.backend import Endpoint


FIXTURES_DIR = Path(__file__).resolve().parents[2] / "fixtures"
PRIMARY = Endpoint("primary", "127.0.0.1", 7000, "primary", 0)
MEMTIER = {"server": "valkey:9.1.2", "tool": "memtier_benchmark", "clients": 4, "requests": 1000, "keyspace": 500}


def memtier_argv(workload: dict | None = None, **fields) -> list[str]:
    cell = Cell(**{**MEMTIER, **fields, **({"workload": workload} if workload else {})})
    return build_command(cell, PRIMARY, "pw", "memtier_benchmark").argv


def value_of(argv: list[str], flag: str) -> str:
    [value] = [a.split("=", 1)[1] for a in argv if a.startswith(flag + "=")]
    return value


def test_defaults_read_the_preloaded_key_space():
    argv = memtier_argv()
    assert argv[:9] == ["memtier_benchmark", "-s", "127.0.0.1", "-p", "7000", "-a", "pw", "--protocol=redis", "-t"]
    assert (value_of(argv, "--ratio"), value_of(argv, "--key-pattern")) == ("1:1", "R:R")
    assert (value_of(argv, "--key-prefix"), value_of(argv, "--key-minimum"), value_of(argv, "--key-maximum")) \
        == ("memtier-", "1", "500")
    assert argv[argv.index("-d") + 1] == "3"
    # 1000 SETs + 1000 GETs over 1 thread x 4 connections
    assert argv[argv.index("-n") + 1] == "500"
    for absent in ("--test-time", "--run-count", "--print-all-runs", "--rate-limiting", "--multi-key-get", "--tls"):
        assert not any(a.startswith(absent) for a in argv), absent


@pytest.mark.parametrize("tests, ratio", [(["set"], "1:0"), (["get"], "0:1"), (["set", "get"], "1:1")])
def test_ratio_from_tests(tests, ratio):
    assert value_of(memtier_argv(tests=tests), "--ratio") == ratio


def test_ratio_and_key_pattern():
    argv = memtier_argv({"ratio": "1:10", "key_pattern": "G:G"})
    assert (value_of(argv, "--ratio"), value_of(argv, "--key-pattern")) == ("1:10", "G:G")


def test_key_prefix_minimum_and_maximum_from_keyspace():
    argv = memtier_argv({"key_prefix": "bench:", "key_minimum": 1000}, keyspace=250)
    assert (value_of(argv, "--key-prefix"), value_of(argv, "--key-minimum"), value_of(argv, "--key-maximum")) \
        == ("bench:", "1000", "1249")


def test_data_size_range_and_pattern_replace_data_size():
    argv = memtier_argv({"data_size_range": "32-1024", "data_size_pattern": "S"})
    assert (value_of(argv, "--data-size-range"), value_of(argv, "--data-size-pattern")) == ("32-1024", "S")
    assert "-d" not in argv
    argv = memtier_argv({"data_size_list": "32:7,1024:3"})
    assert value_of(argv, "--data-size-list") == "32:7,1024:3" and "-d" not in argv


def test_commands_with_ratios_replace_ratio():
    argv = memtier_argv({"commands": [{"command": "SET __key__ __data__", "ratio": 1},
                                      {"command": "GET __key__", "ratio": 9, "key_pattern": "G"}]})
    assert [a for a in argv if a.startswith("--command")] == [
        "--command=SET __key__ __data__", "--command-ratio=1", "--command-key-pattern=R",
        "--command=GET __key__", "--command-ratio=9", "--command-key-pattern=G"]
    assert not any(a.startswith(("--ratio", "--key-pattern")) for a in argv)   # memtier refuses them beside --command
    assert argv[argv.index("-n") + 1] == "500"    # 2 commands x 1000 requests over 4 connections


def test_multi_key_get_and_rate_limit():
    argv = memtier_argv({"multi_key_get": 10, "rate_limit": 500})
    assert (value_of(argv, "--multi-key-get"), value_of(argv, "--rate-limiting")) == ("10", "500")


def test_run_count_writes_every_run_so_its_time_is_known():
    argv = memtier_argv({"run_count": 3})
    assert value_of(argv, "--run-count") == "3" and "--print-all-runs" in argv
    one = memtier_argv({"run_count": 1})
    assert value_of(one, "--run-count") == "1" and "--print-all-runs" not in one


def test_resp3_and_acl_user():
    cell = Cell(**MEMTIER, workload={"protocol": "resp3", "acl_user": "bench"})
    cmd = build_command(cell, PRIMARY, "pw", "memtier_benchmark")
    assert "--protocol=resp3" in cmd.argv
    assert cmd.argv[cmd.argv.index("-a") + 1] == "bench:pw"
    assert "bench:pw" not in cmd.display()    # the whole credential is the secret


def test_tool_args_come_last_and_are_recorded_in_the_command_line():
    cell = Cell(**MEMTIER, tool_args=["--reconnect-interval=100", "--distinct-client-seed"])
    cmd = build_command(cell, PRIMARY, "pw", "memtier_benchmark", json_out="/tmp/x.json")
    assert cmd.argv[-2:] == ["--reconnect-interval=100", "--distinct-client-seed"]
    assert "--distinct-client-seed" in cmd.display()


def test_duration_is_test_time_instead_of_requests():
    argv = memtier_argv(duration=30)
    assert "--test-time=30" in argv and "-n" not in argv


def test_warmup_runs_its_requests_once_even_with_duration_and_run_count():
    cell = Cell(**MEMTIER, duration=30, warmup=400, workload={"run_count": 3})
    argv = build_command(cell, PRIMARY, "pw", "memtier_benchmark", requests=cell.warmup).argv
    assert argv[argv.index("-n") + 1] == "200"   # 400 SETs + 400 GETs over 4 connections
    for absent in ("--test-time", "--run-count", "--print-all-runs"):
        assert not any(a.startswith(absent) for a in argv), absent
    measured = build_command(cell, PRIMARY, "pw", "memtier_benchmark").argv
    assert "--test-time=30" in measured and "--run-count=3" in measured


@pytest.mark.parametrize("field, value", [
    ("ratio", "1:10"), ("key_pattern", "G:G"), ("key_prefix", "k:"), ("key_minimum", 5),
    ("data_size_range", "32-64"), ("data_size_pattern", "S"), ("data_size_list", "32:1"),
    ("commands", [{"command": "GET __key__"}]), ("multi_key_get", 4), ("rate_limit", 100), ("run_count", 2),
])
def test_memtier_only_fields_are_refused_with_valkey_benchmark(field, value):
    arg = f'{{"server": "valkey:9.1.2", "workload": {{"{field}": {_json(value)}}}}}'
    with pytest.raises(ConfigError, match=f"workload {field}: valkey-benchmark cannot express this"):
        cell_from_arg(arg)


def test_fields_both_tools_express_are_accepted_with_valkey_benchmark():
    cell = cell_from_arg('{"server": "valkey:9.1.2", "workload": {"protocol": "resp3", "acl_user": "bench"}}')
    argv = build_command(cell, PRIMARY, "pw", "/bin/valkey-benchmark").argv
    assert "-3" in argv and argv[1:3] == ["--user", "bench"]


def test_duration_is_refused_without_memtier():
    with pytest.raises(ConfigError, match="duration is memtier's --test-time: valkey-benchmark has no test-time"):
        cell_from_arg('{"server": "valkey:9.1.2", "duration": 10}')


def test_tls_cell_passes_the_cells_certificates_to_either_tool(tmp_path):
    """TLS was refused until the backends started TLS servers (issue 20): a TLS cell now builds,
    and each tool gets --tls with the deployment's CA, client certificate and key."""
    from vkbench.errors import UsageError
    from vkbench.topology.tls import TlsFiles

    files = TlsFiles(tmp_path, tmp_path / "ca.crt", tmp_path / "server.crt", tmp_path / "server.key",
                     tmp_path / "client.crt", tmp_path / "client.key")
    memtier = cell_from_arg('{"server": "valkey:8.0.1", "tool": "memtier_benchmark", "workload": {"tls": true}}')
    argv = build_command(memtier, PRIMARY, "pw", "memtier_benchmark", tls=files).argv
    assert {"--tls", f"--cacert={files.ca_cert}", f"--cert={files.client_cert}", f"--key={files.client_key}"} <= set(argv)
    bench = cell_from_arg('{"server": "valkey:8.0.1", "workload": {"tls": true}, "topology": "cluster:3"}')
    argv = build_command(bench, PRIMARY, "", "valkey-benchmark", tls=files).argv
    assert argv[argv.index("--cacert") + 1] == str(files.ca_cert) and "--tls" in argv and "--cluster" in argv
    assert argv[argv.index("--key") + 1] == str(files.client_key)
    with pytest.raises(UsageError, match="certificates"):
        build_command(bench, PRIMARY, "", "valkey-benchmark")


def test_run_flag_duration_sets_test_time_and_is_refused_for_valkey_benchmark():
    cell = '{"server": "valkey:9.1.2", "tool": "memtier_benchmark"}'
    for flag in ("--duration", "--test-time"):
        result = CliRunner().invoke(cli, ["run", "--cell", cell, flag, "12", "--dry-run", "--json"])
        assert result.exit_code == 0, result.output
        [planned] = json.loads(result.stdout)
        assert planned["duration"] == 12
        assert "--test-time=12" in build_command(Cell.model_validate({k: v for k, v in planned.items() if k != "id"}),
                                                 PRIMARY, "pw", "memtier_benchmark").argv
    refused = CliRunner().invoke(cli, ["run", "--cell", '{"server": "valkey:9.1.2"}', "--duration", "12", "--dry-run"])
    assert isinstance(refused.exception, ConfigError) and refused.exception.exit_code == 2
    assert "no test-time option" in refused.exception.message


def test_run_count_repetition_time_covers_every_run():
    """Client CPU is measured over all runs of memtier's process: the repetition's time must be
    the sum of the runs (302 + 370 + 301 ms), not 0, one run, or the wall time with memtier's 2 s
    sleeps between runs (which made a client-bound cell look half idle)."""
    cell = Cell(**MEMTIER, workload={"run_count": 3})
    text = (FIXTURES_DIR / "memtier_benchmark" / "memtier-2.3.0__run_count_3_print_all_runs.json").read_text()
    assert tool_duration(cell, [], text, "rep-1") == pytest.approx(0.973)


def _json(value) -> str:
    return json.dumps(value)
