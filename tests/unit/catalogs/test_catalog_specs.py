"""Catalog specs and configs -> cells or refusals: the fixture specs, and the real catalogs at
their pinned commits (through VKBENCH_SPECS_SOURCE / VKBENCH_PERF_CONFIGS_SOURCE, which .ci/run
points at the vendored archives; unset, they are downloaded from GitHub)."""

from __future__ import annotations

import collections
import json
import shlex
from pathlib import Path

import pytest

from cli_outcome import vk
from vkbench.catalogs import fetch
from vkbench.bounded_yaml import CATALOG_BOUNDS, load_yaml
from vkbench.catalogs.memtier_args import Unmappable, parse_memtier
from vkbench.catalogs.plan import is_catalog_source, plan_catalog
from vkbench.catalogs.shellwords import split
from vkbench.errors import ConfigError, MissingBinaryError, UsageError

FIXTURES = Path(__file__).resolve().parents[2] / "catalog-fixtures"
SPECS = FIXTURES / "specs"


def test_fixture_folder_runs_two_specs_and_refuses_the_data_set_by_name():
    plan = plan_catalog(str(SPECS), {"duration": 2})
    assert plan.entries == 3
    assert plan.runnable_names() == ["memtier_benchmark-fixture-hash-hget", "memtier_benchmark-fixture-list-init-lrange"]
    [refused] = plan.refusals
    assert (refused.name, refused.reason, refused.groups) == ("memtier_benchmark-fixture-s3-dataset",
                                                              "data set (RDB download)", ["geo"])
    assert "s3.us-east-2.amazonaws.com" in refused.detail


def test_spec_maps_into_the_cell_model():
    plan = plan_catalog(str(SPECS / "memtier_benchmark-fixture-hash-hget.yml"), {"duration": 2})
    # oss-standalone and oss-standalone-02-io-threads run; the RDB persistence topology is dropped
    assert [(c.topology, c.io_threads) for c in plan.cells] == [("standalone", 1), ("standalone", 2)]
    cell = plan.cells[0]
    assert (cell.tool, cell.clients, cell.client_threads, cell.pipeline, cell.duration, cell.requests) == (
        "memtier_benchmark", 2, 1, 1, 2, None)
    assert cell.keyspace == 200 and cell.workload.key_minimum == 1 and not cell.preload
    assert [(c.command, c.key_pattern) for c in cell.workload.commands] == [("HGET __key__ field1", "R")]
    assert cell.tool_args == ["--distinct-client-seed"]
    assert cell.extra_server_args == ["--hash-max-listpack-entries", "512"]
    entry = cell.catalog
    assert (entry.groups, entry.commands, entry.spec_duration, entry.keyspacelen) == (["hash"], ["hget"], 180, 200)
    assert entry.preload[:2] == ["--data-size=10", "--command=HSET __key__ field1 __data__ field2 __data__"]
    assert "-n" in entry.preload and entry.preload[entry.preload.index("-n") + 1] == "allkeys"
    dims = cell.dimensions()
    assert dims["catalog"] == {"source": "redis-benchmarks-specification", "name": "memtier_benchmark-fixture-hash-hget",
                               "groups": ["hash"], "commands": ["hget"]}
    assert cell.cell_id != plan_catalog(str(SPECS / "memtier_benchmark-fixture-hash-hget.yml"), {"duration": 3}).cells[0].cell_id


def test_init_commands_and_request_override():
    plan = plan_catalog(str(SPECS / "memtier_benchmark-fixture-list-init-lrange.yml"), {"requests": 300, "repetitions": 2})
    [cell] = plan.cells
    assert cell.catalog.init_commands == [["RPUSH", "fixture:list", "a", "b", "c", "d"], ["SET", "fixture:marker", "one value"]]
    assert (cell.requests, cell.duration, cell.repetitions, cell.pipeline) == (300, None, 2, 2)
    assert cell.catalog.spec_requests == 500


def test_spec_without_override_keeps_its_own_length():
    [cell] = plan_catalog(str(SPECS / "memtier_benchmark-fixture-list-init-lrange.yml")).cells
    assert (cell.duration, cell.requests) == (None, 500 * 2)     # -n 500 per connection x 2 connections


def test_flags_that_would_change_the_spec_are_refused():
    with pytest.raises(UsageError, match="--tests"):
        plan_catalog(str(SPECS), {"tests": ["set"]})
    with pytest.raises(UsageError, match="one value"):
        plan_catalog(str(SPECS), {"io_threads": [1, 2]})


def test_catalog_sources_are_told_from_matrix_files(tmp_path):
    matrix = tmp_path / "m.yaml"
    matrix.write_text("name: x\ngroups:\n  - server: valkey:9.1.2\n")
    assert not is_catalog_source(str(matrix)) and not is_catalog_source("smoke")
    assert is_catalog_source(str(SPECS)) and is_catalog_source("specs:*") and is_catalog_source("perf:x.json")
    assert is_catalog_source(str(SPECS / "memtier_benchmark-fixture-hash-hget.yml"))


def test_memtier_arguments_refused_by_name():
    with pytest.raises(Unmappable, match="--some-new-flag"):
        parse_memtier(["--some-new-flag", "--test-time", "5"])
    with pytest.raises(Unmappable, match="stray"):
        parse_memtier(split('--command "HSET k a "b c" d" x'))
    args = parse_memtier(split('-c 3 -t 2 --pipeline=4 -n allkeys --key-maximum 99 --command "SET __key__ __data__" '
                               '--command-ratio 2 --command-key-pattern=P --random-data'))
    assert (args.clients, args.threads, args.pipeline, args.all_keys, args.key_maximum) == (3, 2, 4, True, 99)
    assert args.commands == [{"command": "SET __key__ __data__", "ratio": 2, "key_pattern": "P"}]
    assert args.passthrough == ["--random-data"]


@pytest.mark.parametrize("text", ['a "b c" d', "x 'y z'", '"a\\"b" c\\ d', 'EVAL "return \'1\'" 0', '--k=""', "",
                                  'a"b c"d'])
def test_shell_words_split_as_shlex(text):
    assert split(text) == shlex.split(text)


def test_unbalanced_quotes_are_an_error():
    with pytest.raises(ValueError):
        split('"open')


def test_bounded_yaml_refuses_aliases_depth_and_size():
    with pytest.raises(ConfigError, match="aliases"):
        load_yaml("a: &x [1, 2]\nb: [*x, *x, *x]\n", "bomb.yml", CATALOG_BOUNDS)
    with pytest.raises(ConfigError, match="nesting"):
        load_yaml("[" * 60 + "]" * 60, "deep.yml", CATALOG_BOUNDS)
    with pytest.raises(ConfigError, match="bytes"):
        load_yaml("a: " + "x" * (2 * 1024 * 1024), "big.yml", CATALOG_BOUNDS)
    assert load_yaml("a: [1, {b: c}]", "ok.yml", CATALOG_BOUNDS) == {"a": [1, {"b": "c"}]}


def test_perf_config_several_commands_and_a_duration_refused():
    plan = plan_catalog(f"perf:{FIXTURES / 'perf-several-commands.json'}")
    [cell] = plan.cells
    assert (cell.tool, cell.tests, cell.requests, cell.keyspace, cell.pipeline, cell.clients) == (
        "valkey-benchmark", ["set", "get", "lpush", "hset"], 2000, 500, 4, 4)
    assert cell.catalog.groups == ["hash", "list", "string"] and cell.catalog.name == "perf-several-commands.json#0"
    [refused] = plan.refusals
    # TLS is no longer a refusal (issue 20): entry #1 is refused for its duration only
    assert (refused.name, refused.reason) == ("perf-several-commands.json#1", "duration without --requests")
    [tls_cell] = plan_catalog(f"perf:{FIXTURES / 'perf-several-commands.json'}", {"requests": 100}).cells[1:]
    assert tls_cell.workload.tls and tls_cell.tests == ["set"]


def test_dry_run_json_lists_cells_and_refusals():
    code, out = vk("run", str(SPECS), "--duration", "1", "--dry-run", "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["runnable"] == 2 and data["entries"] == 3
    assert {c["catalog"]["name"] for c in data["cells"]} == {"memtier_benchmark-fixture-hash-hget",
                                                             "memtier_benchmark-fixture-list-init-lrange"}
    assert [r["reason"] for r in data["refused"]] == ["data set (RDB download)"]


# -- the real catalogs at their pinned commits --------------------------------------------------

@pytest.fixture(scope="module")
def full_plan():
    return plan_catalog("specs:*")


def test_pinned_spec_catalog_runnable_and_refused_counts(full_plan):
    assert full_plan.entries == 490
    assert len(full_plan.runnable_names()) == 441
    reasons = collections.Counter(r.reason for r in full_plan.refusals)
    assert reasons == {"several clients": 13, "server setting not in Valkey": 11, "data set (RDB download)": 9,
                       "command not in Valkey (Redis-only or module)": 8, "container-only client": 5,
                       "tool arguments not mappable": 3}
    assert all(c.catalog and c.tool == "memtier_benchmark" for c in full_plan.cells)
    topologies = {c.topology for c in full_plan.cells}
    assert {"standalone", "replication:1", "cluster:3"} <= topologies


def test_pinned_catalog_selectors():
    core = plan_catalog("specs:core")
    assert core.entries == 17
    hashes = plan_catalog("specs:group=hash")
    assert hashes.entries == 80 and all("hash" in c.catalog.groups for c in hashes.cells)
    with pytest.raises(UsageError, match="matches no spec"):
        plan_catalog("specs:no-such-spec-*")


def test_pinned_perf_configs():
    cluster_tls = plan_catalog("perf:benchmark-configs-cluster-tls.json")
    [cell] = cluster_tls.cells
    assert not cluster_tls.refusals and cell.topology == "cluster:3" and cell.workload.tls
    fts = plan_catalog("perf:fts-benchmarks-arm.json")
    assert [r.reason for r in fts.refusals] == ["module workload"]
    duration = plan_catalog("perf:benchmark-configs.json")
    assert [r.reason for r in duration.refusals] == ["duration without --requests"]
    [cell] = plan_catalog("perf:benchmark-configs.json", {"requests": 1000}).cells
    assert len(cell.tests) == 13 and cell.catalog.spec_duration == 120


def test_a_catalog_with_other_content_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / "valkey-perf-benchmark"
    (folder / "configs").mkdir(parents=True)
    (folder / "configs" / "benchmark-configs.json").write_text("[]")
    monkeypatch.setenv(fetch.PERF_CONFIGS.variable, str(folder))
    with pytest.raises(MissingBinaryError, match="content digest"):
        fetch.load_catalog(fetch.PERF_CONFIGS)
    monkeypatch.setenv(fetch.PERF_CONFIGS.variable, str(tmp_path / "missing"))
    with pytest.raises(MissingBinaryError, match="neither a file nor a folder"):
        fetch.load_catalog(fetch.PERF_CONFIGS)


def test_changed_files_select_groups_or_the_core_set_with_reasons():
    from vkbench.catalogs.select import select_for_changes

    catalog = fetch.load_catalog(fetch.SPECS)
    chosen = select_for_changes(catalog, ["src/t_hash.c", "src/geo.c"])
    assert chosen.groups == ["geo", "hash", "sorted-set"] and not chosen.core
    assert chosen.reasons == ["src/t_hash.c: t_hash.c -> hash", "src/geo.c: geo.c -> geo, sorted-set"]
    broad = select_for_changes(catalog, ["src/networking.c"])
    assert broad.core and broad.groups == [] and "core set" in broad.reasons[0]
    plan = plan_catalog("specs:changed=src/t_set.c")
    assert plan.entries == 31 and all("set" in c.catalog.groups for c in plan.cells)
    assert plan_catalog("specs:changed=src/server.c").entries == 17
