"""Tool command lines and validity flags, without servers."""

from vkbench.matrix.model import Cell, CpuPlacement
from vkbench.runner.tools import build_command
from vkbench.runner.validity import check
from vkbench.topology.backend import Endpoint

PRIMARY = Endpoint("primary", "127.0.0.1", 7000, "primary", 0)


def test_valkey_benchmark_command_line_and_redaction():
    cell = Cell(server="valkey:9.1.2", topology="cluster:3", pipeline=16, client_threads=5, keyspace=1000, requests=5000)
    cmd = build_command(cell, PRIMARY, "s3cret", "/bin/valkey-benchmark")
    assert cmd.argv == ["/bin/valkey-benchmark", "-h", "127.0.0.1", "-p", "7000", "-a", "s3cret", "-t", "set,get",
                        "-c", "50", "-P", "16", "-d", "3", "--csv", "-n", "5000", "-r", "1000", "--threads", "5", "--cluster"]
    assert "s3cret" not in cmd.display() and "-a '***'" in cmd.display()


def test_single_key_when_no_keyspace_and_overrides_for_warmup():
    cell = Cell(server="valkey:9.1.2", keyspace=None)
    cmd = build_command(cell, PRIMARY, "pw", "vb", requests=10, tests=["set"])
    assert "-r" not in cmd.argv and cmd.argv[cmd.argv.index("-n") + 1] == "10"
    assert cmd.argv[cmd.argv.index("-t") + 1] == "set"


def test_memtier_command_line():
    cell = Cell(server="valkey:9.1.2", tool="memtier_benchmark", clients=50, client_threads=5, requests=100000,
                pipeline=4, topology="cluster:3")
    cmd = build_command(cell, PRIMARY, "pw", "memtier_benchmark", json_out="/tmp/o.json")
    assert "--ratio=1:1" in cmd.argv and "--cluster-mode" in cmd.argv and "--json-out-file=/tmp/o.json" in cmd.argv
    # requests are per command (as valkey-benchmark's -n per test); memtier's -n is per connection:
    # 100000 SETs + 100000 GETs over 5 threads x 10 clients
    assert cmd.argv[cmd.argv.index("-n") + 1] == "4000"
    assert cmd.argv[cmd.argv.index("-t") + 1] == "5" and cmd.argv[cmd.argv.index("-c") + 1] == "10"
    assert "--key-prefix=memtier-" in cmd.argv and "--key-minimum=1" in cmd.argv and "--key-maximum=100000" in cmd.argv


def rep(rps: float, elapsed: float = 5.0, client_cores: float = 0.5, command: str = "SET") -> dict:
    return {"index": 0, "elapsed_s": elapsed, "cpu": {"client_cores": client_cores},
            "records": [{"command": command, "rps": rps, "latency_ms": {}}]}


def codes(validity: dict) -> list[str]:
    return [f["code"] for f in validity["flags"]]


def test_clean_cell_is_valid():
    cell = Cell(server="valkey:9.1.2", tests=["set"])
    v = check(cell, repetitions=[rep(100), rep(101), rep(99)], keys_before_reads=None, shards=1, server_cpus=4, throttled="0x0")
    assert v == {"valid": True, "flags": []}


def test_client_bound_is_invalid_and_names_the_fix():
    cell = Cell(server="valkey:9.1.2", tests=["set"])
    v = check(cell, repetitions=[rep(100, client_cores=0.99)] * 3, keys_before_reads=None, shards=1, server_cpus=4, throttled=None)
    assert not v["valid"] and codes(v) == ["client-bound"]
    assert "--threads" in v["flags"][0]["fix"]


def test_client_bound_uses_the_client_cpu_set():
    cell = Cell(server="valkey:9.1.2", tests=["set"], client_threads=4, cpu=CpuPlacement(server="0", client="1-2"))
    v = check(cell, repetitions=[rep(100, client_cores=1.95)] * 3, keys_before_reads=None, shards=1, server_cpus=1, throttled=None)
    assert "client-bound" in codes(v)


def test_warnings_keep_the_cell_valid():
    cell = Cell(server="valkey:9.1.2", tests=["set"], io_threads=4)
    v = check(cell, repetitions=[rep(100, elapsed=0.2), rep(150, elapsed=0.2), rep(80, elapsed=0.2)],
              keys_before_reads=None, shards=1, server_cpus=2, throttled=None)
    assert v["valid"] and set(codes(v)) == {"too-short", "high-variance", "io-threads-oversubscribed"}


def test_reads_on_an_empty_or_missing_keyspace_are_invalid():
    get = Cell(server="valkey:9.1.2", tests=["get"], keyspace=100000)
    v = check(get, repetitions=[rep(1, command="GET")], keys_before_reads=0, shards=1, server_cpus=4, throttled=None)
    assert not v["valid"] and codes(v) == ["empty-keyspace"]
    single = Cell(server="valkey:9.1.2", tests=["set", "get"], keyspace=None)
    v = check(single, repetitions=[rep(1)], keys_before_reads=1, shards=1, server_cpus=4, throttled=None)
    assert not v["valid"] and codes(v) == ["empty-keyspace"]
    tiny = Cell(server="valkey:9.1.2", tests=["get"], keyspace=10)
    v = check(tiny, repetitions=[rep(1, command="GET")], keys_before_reads=10, shards=1, server_cpus=4, throttled=None)
    assert v["valid"] and codes(v) == ["empty-keyspace"]


def test_throttled_pi_and_failed_repetitions_are_invalid():
    cell = Cell(server="valkey:9.1.2", tests=["set"])
    v = check(cell, repetitions=[rep(100)], keys_before_reads=None, shards=1, server_cpus=4, throttled="0x50005",
              failed_repetitions=2)
    assert not v["valid"] and set(codes(v)) == {"throttled", "tool-error"}


def test_threaded_and_cluster_runs_need_longer_repetitions():
    cluster = Cell(server="valkey:9.1.2", tests=["set"], topology="cluster:3")
    v = check(cluster, repetitions=[rep(100, elapsed=2.0)] * 3, keys_before_reads=None, shards=3, server_cpus=4, throttled=None)
    assert codes(v) == ["too-short"] and "0.25 s steps" in v["flags"][0]["message"]
    single = Cell(server="valkey:9.1.2", tests=["set"])
    v = check(single, repetitions=[rep(100, elapsed=2.0)] * 3, keys_before_reads=None, shards=1, server_cpus=4, throttled=None)
    assert codes(v) == []
