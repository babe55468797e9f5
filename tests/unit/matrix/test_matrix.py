"""Matrix files, presets, overrides and the GitHub matrix form."""

import json

import pytest
from click.testing import CliRunner

from vkbench.cli.matrix import matrix_cmd
from vkbench.errors import ConfigError, UsageError
from vkbench.matrix import expand_matrix, load_matrix
from vkbench.matrix.cells import cell_from_arg, github_matrix
from vkbench.matrix.expand import preset_names
from vkbench.matrix.model import Cell

PRESETS = {"smoke", "pi-cm4-blog", "io-threads-sweep", "pipeline-sweep", "read-replicas", "nightly"}


def test_every_documented_preset_ships_and_expands():
    assert PRESETS <= set(preset_names())
    for name in PRESETS:
        cells = expand_matrix(load_matrix(name), cores=4)
        assert cells, name
        assert len({c.cell_id for c in cells}) == len(cells)


def test_smoke_covers_two_versions_and_every_topology_kind():
    cells = expand_matrix(load_matrix("smoke"))
    assert {c.server for c in cells} == {"valkey:9.0.0", "valkey:9.1.2"}
    assert {(c.topology, c.io_threads) for c in cells} == {
        ("standalone", 1), ("standalone", 2), ("cluster:3", 1), ("replication:1", 1)}


def test_pi_blog_preset_is_the_blog_sequence():
    cells = expand_matrix(load_matrix("pi-cm4-blog"))
    assert [(c.topology, c.io_threads) for c in cells] == [
        ("standalone", 1), ("standalone", 2), ("standalone", 5), ("cluster:3", 1)]
    assert all(c.pipeline == 16 and c.tests == ["set", "get"] and c.runner == "pi-cm4" for c in cells)
    assert cells[0].client_threads == 5


def test_io_threads_sweep_goes_one_past_the_cores():
    cells = expand_matrix(load_matrix("io-threads-sweep"), cores=4)
    assert [c.io_threads for c in cells] == [1, 2, 3, 4, 5]


def test_read_replicas_reads_from_replicas():
    cells = expand_matrix(load_matrix("read-replicas"))
    assert any(c.read_from == "replicas" and c.tests == ["get"] for c in cells)
    assert any(c.read_from == "primary" and c.tests == ["set"] for c in cells)


def test_overrides_replace_fields_in_every_group():
    cells = expand_matrix(load_matrix("smoke"), overrides={"server": ["valkey:9.1.2"], "topology": ["standalone"], "io_threads": [1]})
    assert len(cells) == 1 and cells[0].server == "valkey:9.1.2"


def test_bad_field_names_the_field_and_allowed_values(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("name: x\ngroups:\n  - server: valkey:9.1.2\n    tool: wrk\n")
    with pytest.raises(ConfigError) as info:
        expand_matrix(load_matrix(str(path)))
    assert "tool" in info.value.message and "'valkey-benchmark'" in info.value.message and "'wrk'" in info.value.message


def test_unknown_field_lists_the_allowed_fields(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("name: x\ngroups:\n  - server: valkey:9.1.2\n    iothreads: 2\n")
    with pytest.raises(ConfigError) as info:
        expand_matrix(load_matrix(str(path)))
    assert "iothreads" in info.value.message and "io_threads" in info.value.message


def test_bad_topology_and_server_are_explained():
    with pytest.raises(ConfigError, match="allowed: standalone, cluster:N"):
        expand_matrix(load_matrix("smoke"), overrides={"topology": ["ring:3"]})
    with pytest.raises(ConfigError, match="engine is 'valkey' or 'redis'"):
        expand_matrix(load_matrix("smoke"), overrides={"server": ["keydb:6"]})


def test_read_from_replicas_needs_replicas():
    with pytest.raises(ConfigError, match="needs a topology with replicas"):
        cell_from_arg('{"server": "valkey:9.1.2", "read_from": "replicas"}')


def test_unknown_preset_lists_presets():
    with pytest.raises(UsageError) as info:
        load_matrix("smokey")
    assert "smoke" in info.value.hint


def test_invalid_yaml_is_a_config_error(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("name: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_matrix(str(path))


def test_cell_roundtrips_through_its_github_argument():
    for cell in expand_matrix(load_matrix("nightly"), overrides={"runner": ["pi-cm4", "cloud-x86"]}):
        again = cell_from_arg(cell.to_arg())
        assert again == cell and again.cell_id == cell.cell_id


def test_github_matrix_cli_exact_output():
    result = CliRunner().invoke(matrix_cmd, ["smoke", "--versions", "valkey:9.1.2", "--topologies", "standalone",
                                             "--io-threads", "2", "--format", "github"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    cell = Cell(server="valkey:9.1.2", io_threads=2, pipeline=16, requests=200000, keyspace=100000, warmup=20000)
    assert data == {"include": [{
        "id": cell.cell_id, "runner": "local",
        "name": "valkey:9.1.2 standalone io2 set+get P16 valkey-benchmark [local]",
        "cell": '{"io_threads":2,"pipeline":16,"requests":200000,"server":"valkey:9.1.2","warmup":20000}',
    }]}


def test_github_matrix_refuses_more_than_github_allows():
    cells = expand_matrix(load_matrix("nightly"), overrides={"io_threads": list(range(1, 30)), "runner": ["a", "b", "c"]})
    with pytest.raises(ConfigError, match="limit of 256"):
        github_matrix(cells)


def test_cell_ids_differ_by_runner_and_are_readable():
    a = Cell(server="valkey:9.1.2", topology="cluster:3", runner="pi-cm4")
    b = Cell(server="valkey:9.1.2", topology="cluster:3", runner="cloud-x86")
    assert a.cell_id != b.cell_id
    assert a.cell_id.startswith("valkey-9.1.2_cluster-3_io1_vb_P1_c50_d3_")


def test_a_flag_a_counted_group_cannot_take_leaves_those_cells_out():
    """nightly's instruction-count group is io-threads 1; `--io-threads 2,4` is meant for the
    wall-clock groups and leaves the counted cells out instead of failing the plan."""
    cells = expand_matrix(load_matrix("nightly"), overrides={"io_threads": [2, 4]})
    assert cells and all(c.instrument == "wallclock" for c in cells)
    counted = [c for c in expand_matrix(load_matrix("nightly"), overrides={"io_threads": [1]}) if c.instrument != "wallclock"]
    assert counted and all(c.server == "valkey:unstable" and c.pipeline == 1 and c.clients == 1 for c in counted)
    # a counted group's own mistake is still an error
    with pytest.raises(ConfigError, match="instrument instructions"):
        expand_matrix(load_matrix("nightly"), overrides={"instrument": "instructions", "io_threads": [2]})
